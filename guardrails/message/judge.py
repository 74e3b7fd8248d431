"""``llm_judge``: a second model at temperature 0 answers PASS or VIOLATION about the finished answer.

Origin: the "user is always right" interceptor (shared/seeds/000): a stateless prompt holding the
user's query and the agent's output goes to a fast model through the request's own upstream and
credentials; only a final text answer (no tool calls) is judged.

Failure policy: anything that keeps the judge from a clear verdict (no completer, no model name, a
reply that is neither PASS nor VIOLATION) returns ``Undecided`` and the message passes. Transport
errors are left to propagate: the runner is the one place that turns exceptions and timeouts into
``fail_open``, so this module does not swallow them.
"""

from __future__ import annotations

import re
import string

from config.policy import JudgeGuardrail
from guardrails.decision import JUDGE_VIOLATION, PASS, Block, Decision
from guardrails.message.base import ConfiguredGuardrail, Skipped, Undecided
from guardrails.seams import MessageContext, TextCompleter

PLACEHOLDERS = ("user_query", "agent_output")
_PLACEHOLDER_RE = re.compile(r"\{(user_query|agent_output)\}")

# Stripped from both ends of the judge's reply before it is read: whitespace, quotes (straight and
# typographic), punctuation and markdown emphasis/code/heading marks. Models at temperature 0 still
# like to answer "**PASS**." or "`VIOLATION`"; that is a clear verdict. Anything left over
# ("PASS, but...", "Verdict: PASS") is not, and fails open.
_VERDICT_NOISE = string.whitespace + string.punctuation + "“”‘’«»"


def render_prompt(template: str, *, user_query: str, agent_output: str) -> str:
    """Fill ``{user_query}`` and ``{agent_output}`` in one pass.

    Not ``str.format``: the template may hold other braces (JSON examples) and the values are
    untrusted text with braces of their own. A single regex pass also means a value that itself
    contains ``{user_query}`` is never expanded a second time.
    """
    values = {"user_query": user_query, "agent_output": agent_output}
    return _PLACEHOLDER_RE.sub(lambda m: values[m.group(1)], template)


def parse_verdict(reply: str) -> bool | None:
    """True for VIOLATION, False for PASS, None when the reply is neither (case-insensitive)."""
    word = reply.strip(_VERDICT_NOISE).upper()
    if word == "VIOLATION":
        return True
    if word == "PASS":
        return False
    return None


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
        output = ctx.visible_text
        if self.spec.only_final_text:
            if ctx.message.tool_calls:
                return Skipped("tool_calls")
            if not output.strip():
                return Skipped("empty_text")
        completer = self._completer(ctx)
        if completer is None:
            return Undecided("no_completer")
        model = self.spec.model or ctx.model
        if not model:
            return Undecided("no_model")
        prompt = render_prompt(self.template, user_query=ctx.user_query, agent_output=output)
        reply = await completer.complete(prompt, model=model, temperature=0.0)
        verdict = parse_verdict(reply)
        if verdict is None:
            return Undecided("unparseable")
        if verdict:
            return Block(JUDGE_VIOLATION, self.replacement, self.rationale)
        return PASS
