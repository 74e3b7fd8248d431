"""The LLM judge, its prompt template, the builder and the shipped user-is-right policy."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import httpx
import pytest

from config.policy import (
    JudgeGuardrail,
    MessageGuardrailSpec,
    PolicyError,
    WebhookGuardrail,
    load_policy,
)
from guardrails.datamodel import AssistantMessage, ToolCall
from guardrails.decision import JUDGE_VIOLATION, PASS, Block
from guardrails.message import (
    LlmJudge,
    Skipped,
    Undecided,
    build_message_guardrails,
    parse_verdict,
    render_prompt,
    run_message_guardrails,
    specs_by_id,
    timeouts_by_id,
)
from guardrails.seams import MessageContext, TextCompleter

REPO = Path(__file__).resolve().parents[2]
TEMPLATE = "Q: {user_query}\nA: {agent_output}\nSay PASS or VIOLATION."


class FakeCompleter:
    """A real ``TextCompleter``: answers with a fixed reply and records every call."""

    def __init__(self, reply: str = "PASS", *, hang: bool = False, error: Exception | None = None) -> None:
        self.reply = reply
        self.hang = hang
        self.error = error
        self.calls: list[tuple[str, str, float | None]] = []

    async def complete(self, prompt: str, *, model: str, temperature: float | None = 0.0) -> str:
        self.calls.append((prompt, model, temperature))
        if self.hang:
            await asyncio.Event().wait()
        if self.error is not None:
            raise self.error
        return self.reply


def judge(**overrides: object) -> LlmJudge:
    fields: dict[str, object] = {"id": "judge", "kind": "llm_judge", "prompt": TEMPLATE}
    fields.update(overrides)
    spec = JudgeGuardrail.model_validate(fields)
    return LlmJudge(spec, TEMPLATE, "[withheld]")


def context(
    text: str = "That model does not exist.",
    *,
    completer: TextCompleter | None = None,
    tool_calls: list[ToolCall] | None = None,
    model: str = "gemini-2.5-flash",
) -> MessageContext:
    message = AssistantMessage(text=text, tool_calls=tool_calls or [])
    return MessageContext(
        message=message, user_query="Use gemini-3.5-flash", model=model, completer=completer
    )


# --- the judge's verdicts -------------------------------------------------------------------------


async def test_judge_passes_when_the_model_answers_pass() -> None:
    completer = FakeCompleter("PASS")
    assert await judge().check_message(context(completer=completer)) == PASS


async def test_judge_blocks_with_a_generic_rationale_when_the_model_answers_violation() -> None:
    decision = await judge().check_message(context(completer=FakeCompleter("VIOLATION")))
    assert isinstance(decision, Block)
    assert decision.reason_code == JUDGE_VIOLATION
    assert decision.replacement == "[withheld]"
    assert "judge" in decision.rationale
    assert "does not exist" not in decision.rationale


async def test_judge_calls_the_completer_at_temperature_zero_with_the_request_model() -> None:
    completer = FakeCompleter()
    await judge().check_message(context(completer=completer))
    ((prompt, model, temperature),) = completer.calls
    assert model == "gemini-2.5-flash"
    assert temperature == 0.0
    boundary = re.search(r"<<<BEGIN (guardproxy-[0-9a-f]{32})>>>", prompt)
    assert boundary is not None
    b = boundary.group(1)
    assert prompt.endswith(f"Q: <<<BEGIN {b}>>>\nUse gemini-3.5-flash\n<<<END {b}>>>\n"
                           f"A: <<<BEGIN {b}>>>\nThat model does not exist.\n<<<END {b}>>>\nSay PASS or VIOLATION.")


async def test_judge_prefers_its_own_model_over_the_request_model() -> None:
    completer = FakeCompleter()
    await judge(model="flash-lite").check_message(context(completer=completer))
    assert completer.calls[0][1] == "flash-lite"


async def test_judge_fails_open_on_a_reply_that_is_not_a_verdict_when_told_to_pass_it() -> None:
    decision = await judge(on_unreadable="pass").check_message(context(completer=FakeCompleter("I think it's fine")))
    assert decision == Undecided("unparseable")
    assert isinstance(decision, type(PASS))  # still a Pass to anyone who only knows the seam


async def test_judge_fails_open_without_a_completer() -> None:
    assert await judge().check_message(context(completer=None)) == Undecided("no_completer")


async def test_judge_fails_open_without_a_model_name() -> None:
    decision = await judge().check_message(context(completer=FakeCompleter(), model=""))
    assert decision == Undecided("no_model")


async def test_judge_with_its_own_upstream_asks_completer_for_with_its_settings() -> None:
    own = FakeCompleter("VIOLATION")
    asked: list[tuple[str, str | None, str | None]] = []

    def completer_for(wire: str, base_url: str | None, key_env: str | None) -> TextCompleter | None:
        asked.append((wire, base_url, key_env))
        return own

    ctx = context(completer=FakeCompleter("PASS"))
    ctx.completer_for = completer_for
    spec = {"upstream": "openai_chat", "base_url": "http://judge.local", "api_key_env": "JUDGE_KEY"}
    decision = await judge(**spec).check_message(ctx)
    assert isinstance(decision, Block)
    assert asked == [("openai_chat", "http://judge.local", "JUDGE_KEY")]


async def test_judge_with_its_own_upstream_fails_open_when_the_proxy_offers_none() -> None:
    decision = await judge(upstream="anthropic").check_message(context(completer=FakeCompleter()))
    assert decision == Undecided("no_completer")


async def test_judge_skips_messages_with_only_tool_calls() -> None:
    completer = FakeCompleter("VIOLATION")
    calls = [ToolCall(call_id="1", name="read_file", arguments="{}")]
    decision = await judge().check_message(context("", completer=completer, tool_calls=calls))
    assert decision == Skipped("tool_calls")
    assert completer.calls == []


async def test_a_dummy_tool_call_does_not_switch_the_judge_off() -> None:
    completer = FakeCompleter("VIOLATION")
    calls = [ToolCall(call_id="1", name="undeclared_noop", arguments="{}")]
    decision = await judge().check_message(context(completer=completer, tool_calls=calls))
    assert isinstance(decision, Block)
    assert "That model does not exist." in completer.calls[0][0]
    assert "undeclared_noop" not in completer.calls[0][0]


async def test_judge_skips_empty_text() -> None:
    completer = FakeCompleter("VIOLATION")
    assert await judge().check_message(context("  \n", completer=completer)) == Skipped("empty_text")
    assert completer.calls == []


async def test_judge_judges_tool_call_turns_when_only_final_text_is_off() -> None:
    completer = FakeCompleter("VIOLATION")
    calls = [ToolCall(call_id="1", name="read_file", arguments="{}")]
    decision = await judge(only_final_text=False).check_message(context(completer=completer, tool_calls=calls))
    assert isinstance(decision, Block)
    assert "[tool call] read_file({})" in completer.calls[0][0]


async def test_runner_reports_a_hanging_judge_as_a_timeout() -> None:
    g = judge()
    verdict = await run_message_guardrails([g], context(completer=FakeCompleter(hang=True)), {g.id: 0.05})
    (result,) = verdict.results
    assert (result.outcome, result.detail, result.decision) == ("fail_open", "timeout", PASS)


async def test_runner_takes_the_timeout_from_the_spec_when_the_mapping_has_none() -> None:
    g = judge(timeout_s=0.05)
    verdict = await run_message_guardrails([g], context(completer=FakeCompleter(hang=True)), {})
    assert [(r.outcome, r.detail) for r in verdict.results] == [("fail_open", "timeout")]


async def test_runner_reports_a_failing_judge_by_exception_type_only() -> None:
    error = httpx.ConnectError("cannot reach the judge with That model does not exist")
    verdict = await run_message_guardrails([judge()], context(completer=FakeCompleter(error=error)), {})
    (result,) = verdict.results
    assert (result.outcome, result.detail) == ("fail_open", "error:ConnectError")


async def test_runner_reports_no_completer_and_nonsense_as_fail_open() -> None:
    a, b = judge(id="a"), judge(id="b")
    verdict = await run_message_guardrails([a], context(completer=None), {})
    assert [(r.outcome, r.detail) for r in verdict.results] == [("fail_open", "no_completer")]
    verdict = await run_message_guardrails([b], context(completer=FakeCompleter("maybe?")), {})
    assert [(r.outcome, r.detail) for r in verdict.results] == [("block", "")]
    assert verdict.blocking is not None and verdict.blocking.decision == Block(
        "judge_unreadable", "[withheld]", b.rationale)


# --- parsing and substitution ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "reply",
    ["PASS", "pass", " Pass.\n", '"PASS"', "**PASS**", "`PASS`", "```\nPASS\n```", "# PASS", "“PASS”",
     "Verdict: PASS", "PASS, but only just", "PASS\n\nThe reply agrees with the user.",
     "The reply is accurate.\n**Final verdict:** PASS"],
)
def test_parse_verdict_reads_pass_through_whitespace_quotes_and_markdown(reply: str) -> None:
    assert parse_verdict(reply) is False


@pytest.mark.parametrize("reply", ["VIOLATION", "violation!", "**Violation**", "'VIOLATION'",
                                   "VIOLATION\n\nThe reply contradicts the user.", "Verdict: VIOLATION",
                                   "Let me check.\n\nDecision = VIOLATION", "## Verdict\n\nVIOLATION"])
def test_parse_verdict_reads_violation(reply: str) -> None:
    assert parse_verdict(reply) is True


@pytest.mark.parametrize(
    "reply", ["", "PASSED", "PASS VIOLATION", "no violation", "OK", "It is a PASS",
              "PASS\nVerdict: VIOLATION", "verdict" + "-" * 3000 + "PASS"]
)
def test_parse_verdict_rejects_anything_else(reply: str) -> None:
    assert parse_verdict(reply) is None


def test_render_prompt_keeps_braces_in_the_output_and_template() -> None:
    template = 'JSON like {"a": 1} stays. Q={user_query} A={agent_output} {unknown}'
    rendered = render_prompt(template, user_query="q {0} {x}", agent_output='def f(): return {"k": {}}')
    assert rendered == 'JSON like {"a": 1} stays. Q=q {0} {x} A=def f(): return {"k": {}} {unknown}'


def test_render_prompt_does_not_expand_placeholders_inside_values() -> None:
    rendered = render_prompt("{user_query}|{agent_output}", user_query="{agent_output}", agent_output="{user_query}")
    assert rendered == "{agent_output}|{user_query}"


# --- the builder ----------------------------------------------------------------------------------


async def test_builder_reads_prompt_files_against_base_dir_and_skips_disabled(tmp_path: Path) -> None:
    (tmp_path / "p.txt").write_text("File: {agent_output}", encoding="utf-8")
    specs: list[MessageGuardrailSpec] = [
        JudgeGuardrail(id="j", kind="llm_judge", prompt_file="p.txt"),
        JudgeGuardrail(id="off", kind="llm_judge", prompt_file="missing.txt", enabled=False),
        WebhookGuardrail(id="w", kind="webhook", url="http://127.0.0.1:9/x", replacement="[w]"),
    ]
    async with httpx.AsyncClient() as http:
        built = build_message_guardrails(specs, "[default]", tmp_path, http)
    assert [g.id for g in built] == ["j", "w"]
    j = built[0]
    assert isinstance(j, LlmJudge)
    assert (j.template, j.replacement) == ("File: {agent_output}", "[default]")
    assert specs_by_id(built)["w"].replacement == "[w]"
    assert timeouts_by_id(built) == {"j": 3.0, "w": 3.0}


async def test_builder_names_the_field_of_a_missing_prompt_file(tmp_path: Path) -> None:
    specs = [JudgeGuardrail(id="j", kind="llm_judge", prompt_file="nope.txt")]
    async with httpx.AsyncClient() as http:
        with pytest.raises(PolicyError, match=r"id='j'\]\.prompt_file.*nope\.txt"):
            build_message_guardrails(specs, "[d]", tmp_path, http)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({}, "needs prompt_file or prompt"),
        ({"prompt": "x {agent_output}", "prompt_file": "p.txt"}, "not both"),
        ({"prompt": "no placeholder {user_query}"}, r"\{agent_output\}"),
    ],
)
async def test_builder_rejects_unusable_judge_templates(tmp_path: Path, fields: dict[str, str], message: str) -> None:
    specs = [JudgeGuardrail.model_validate({"id": "j", "kind": "llm_judge", **fields})]
    async with httpx.AsyncClient() as http:
        with pytest.raises(PolicyError, match=message):
            build_message_guardrails(specs, "[d]", tmp_path, http)


# --- the shipped user-is-right prompt and policy --------------------------------------------------


def test_user_is_right_prompt_has_both_placeholders_and_demands_a_one_word_verdict() -> None:
    text = (REPO / "config/prompts/user-is-right.txt").read_text(encoding="utf-8")
    assert text.count("{user_query}") == 1
    assert text.count("{agent_output}") == 1
    assert "VIOLATION" in text and "PASS" in text


async def test_user_is_right_policy_loads_and_builds_its_judge() -> None:
    policy = load_policy(str(REPO / "config/policies/user-is-right.toml"))
    (spec,) = policy.message_guardrails
    assert isinstance(spec, JudgeGuardrail)
    assert (spec.action, spec.max_attempts, spec.upstream) == ("retry", 3, "request")
    assert spec.mandate and spec.final_action
    assert [s.id for s in policy.stream_guardrails] == ["system-prompt-leak", "no-secrets"]
    async with httpx.AsyncClient() as http:
        (built,) = build_message_guardrails(
            policy.message_guardrails, policy.defaults.replacement, policy.base_dir, http
        )
    completer = FakeCompleter("VIOLATION")
    decision = await built.check_message(context(completer=completer))
    assert isinstance(decision, Block)
    prompt = completer.calls[0][0]
    assert "Use gemini-3.5-flash" in prompt and "That model does not exist." in prompt
