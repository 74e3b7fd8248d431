"""``llm_judge``: a second model at temperature 0 answers PASS or VIOLATION about the finished answer.

Origin: the "user is always right" interceptor (shared/seeds/000): a stateless prompt holding the
user's query and the agent's output goes to a fast model through the request's own upstream and
credentials.

What the judge sees: the visible text of the message, whenever there is some (also when the message
carries tool calls, so a dummy call cannot switch the judge off); with ``only_final_text = false``
the tool calls are judged too. Untrusted text is made safe to send and quoted inside a random
boundary (``guardrails.message.content``); a text longer than ``max_chars`` is judged in parts, each
of which must pass.

Failure policy, by cause:
- the checker is down (unreachable, 5xx, 429, a key it refuses, a timeout): ``Undecided``, the
  message passes and the runner counts ``fail_open``;
- the content made the check fail (the judge refused the prompt as too long, a 400 that is not about
  the setup): ``ContentRefused``, which the runner turns into a block unless ``on_content_error =
  "pass"``;
- the judge answered but no verdict can be read: ``on_unreadable`` (``retry`` asks once more with a
  one-word instruction and blocks if that is unreadable too; ``block``; ``pass`` fails open);
- a model that refuses ``temperature`` (OpenAI o-series, gpt-5) is asked without it, and any model
  whose 400 names ``temperature`` is asked again without it.
"""

from __future__ import annotations

import re

from config.policy import JudgeGuardrail
from guardrails.decision import JUDGE_UNREADABLE, JUDGE_VIOLATION, PASS, Block, Decision
from guardrails.message.base import (
    ConfiguredGuardrail,
    ContentRefused,
    Skipped,
    Undecided,
    classify_refusal,
    every_part_passes,
)
from guardrails.message.content import (
    Part,
    elide,
    new_boundary,
    quote,
    quoting_notice,
    shown_text,
    split_parts,
)
from guardrails.message.verdict import parse_verdict, read_verdict
from guardrails.seams import CompleterError, MessageContext, TextCompleter

__all__ = ["LlmJudge", "parse_verdict", "render_prompt", "sends_temperature"]

PLACEHOLDERS = ("user_query", "agent_output")
_PLACEHOLDER_RE = re.compile(r"\{(user_query|agent_output)\}")

_NO_TEMPERATURE = re.compile(r"^(?:[\w-]+/)?(?:o\d+|gpt-5)(?:$|[-.:@])", re.IGNORECASE)
"""Reasoning-model families that refuse ``temperature`` other than the default: OpenAI's o-series
(o1, o3, o4-mini...) and gpt-5 (gpt-5, gpt-5-mini, gpt-5.1...), also behind a ``vendor/`` prefix."""

_ONE_WORD = ("\n\nYour previous reply could not be read as a verdict. Answer with exactly one word: "
             "PASS or VIOLATION.")


def sends_temperature(model: str) -> bool:
    """False for the model families known to refuse ``temperature``."""
    return _NO_TEMPERATURE.match(model) is None


def render_prompt(template: str, *, user_query: str, agent_output: str) -> str:
    """Fill ``{user_query}`` and ``{agent_output}`` in one pass.

    Not ``str.format``: the template may hold other braces (JSON examples) and the values are
    untrusted text with braces of their own. A single regex pass also means a value that itself
    contains ``{user_query}`` is never expanded a second time.
    """
    values = {"user_query": user_query, "agent_output": agent_output}
    return _PLACEHOLDER_RE.sub(lambda m: values[m.group(1)], template)


def judged_text(ctx: MessageContext, with_tool_calls: bool) -> str:
    """What the judge rules on: the visible text, plus the tool calls when asked to, each as a reader
    sees it (``shown_text``)."""
    text = shown_text(ctx.visible_text)
    if not with_tool_calls or not ctx.message.tool_calls:
        return text
    calls = "\n".join(f"[tool call] {shown_text(c.name)}({shown_text(c.arguments)})"
                      for c in ctx.message.tool_calls)
    return f"{text}\n{calls}" if text.strip() else calls


class LlmJudge(ConfiguredGuardrail[JudgeGuardrail]):
    """Judges the finished answer with a prompt template and a ``TextCompleter``."""

    def __init__(self, spec: JudgeGuardrail, template: str, replacement: str) -> None:
        super().__init__(spec, replacement)
        self.template = template
        # Generic on purpose: it is told to the model on a retry, so it must explain what to fix
        # without quoting the blocked answer or the judge's prompt.
        self.rationale = (
            f"An automated reviewer found that the previous answer broke the '{spec.id}' policy. "
            "Write a new answer that complies with it."
        )

    def _completer(self, ctx: MessageContext) -> TextCompleter | None:
        if self.spec.upstream == "request":
            return ctx.completer
        if ctx.completer_for is None:
            return None
        return ctx.completer_for(self.spec.upstream, self.spec.base_url, self.spec.api_key_env)

    async def check_message(self, ctx: MessageContext) -> Decision:
        output = judged_text(ctx, not self.spec.only_final_text)
        if not output.strip():
            return Skipped("tool_calls" if ctx.message.tool_calls else "empty_text")
        completer = self._completer(ctx)
        if completer is None:
            return Undecided("no_completer")
        model = self.spec.model or ctx.model
        if not model:
            return Undecided("no_model")
        query = elide(shown_text(ctx.user_query), self.spec.max_chars // 4)
        parts = split_parts(output, self.spec.max_chars, self.spec.max_parts)
        # Every part must pass; a block in any part wins over another part being undecided.
        return await every_part_passes([self._judge_part(completer, model, query, p) for p in parts])

    def _prompt(self, query: str, part: Part) -> str:
        boundary = new_boundary()
        answer = quote(part.text, boundary)
        if part.total > 1:
            gap = f" ({part.elided_before} characters before it were not shown)" if part.elided_before else ""
            answer = f"[part {part.index} of {part.total} of a long answer{gap}; judge this part]\n{answer}"
        filled = render_prompt(self.template, user_query=quote(query, boundary), agent_output=answer)
        return quoting_notice(boundary) + filled

    async def _judge_part(self, completer: TextCompleter, model: str, query: str, part: Part) -> Decision:
        prompt = self._prompt(query, part)
        reply = await self._ask(completer, prompt, model)
        verdict = read_verdict(reply)
        if verdict is None and self.spec.on_unreadable == "retry":
            verdict = read_verdict(await self._ask(completer, prompt + _ONE_WORD, model))
        if verdict == "violation":
            return Block(JUDGE_VIOLATION, self.replacement, self.rationale)
        if verdict == "pass":
            return PASS
        if self.spec.on_unreadable == "pass":
            return Undecided("unparseable")
        return Block(JUDGE_UNREADABLE, self.replacement, self.rationale)

    async def _ask(self, completer: TextCompleter, prompt: str, model: str) -> str:
        """One judge call; a refused ``temperature`` is dropped and asked again once."""
        temperature: float | None = 0.0 if sends_temperature(model) else None
        for _ in range(2):
            try:
                return await completer.complete(prompt, model=model, temperature=temperature)
            except CompleterError as exc:
                cause = classify_refusal(exc.status, exc.detail)
                if cause == "parameter" and temperature is not None:
                    temperature = None
                    continue
                if cause == "unavailable":
                    raise
                raise ContentRefused(f"http_{exc.status}") from None
        raise AssertionError("unreachable")
