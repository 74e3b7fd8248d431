"""The one-pass check of a whole answer (``proxy.core.whole_answer``) against the per-lane checks it stands in for.

Differential: each drawn upstream body (all four APIs) goes through ``Turn.on_body`` twice, once as
it runs (the one-pass check wherever the shape allows) and once with the one-pass check turned off
(``ChoiceGuard`` for every shape). The commands (the verdict, which check, the rewritten or replaced
body, the vetted messages) and every note (trips, redactions, log-only blocks) must be the same.
Drawn texts hold secrets, canary excerpts, deny patterns, PII (redacted), unread fields and odd
shapes (several choices, reasoning, tool calls, content parts, texts longer than a check piece).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import proxy.core.turn as turn_module
from config.policy import CanaryGuardrail, PiiGuardrail, RegexGuardrail, SecretsGuardrail
from guardrails.datamodel import (
    ANSWER,
    Event,
    Finish,
    Frame,
    TextDelta,
    ToolCallArgsDelta,
    ToolCallEnd,
    ToolCallStart,
    WholeText,
)
from guardrails.findings import OnTrip
from guardrails.seams import StreamContext, StreamGuardrail, judges_tool_arguments
from guardrails.stream import ArmedSet, build_stream_guardrails
from proxy.core.choice_guard import ChoiceGuard
from proxy.core.stream_guard import CHECK_CHUNK
from proxy.core.turn import Request, Rules, Turn
from proxy.core.whole_answer import check_whole_answer
from proxy.wire.anthropic import AnthropicMessages
from proxy.wire.base import WireFormat
from proxy.wire.gemini import Gemini
from proxy.wire.openai_chat import OpenAIChat
from proxy.wire.openai_responses import OpenAIResponses
from tests.core.test_turn import Recorder

SYSTEM = ("You are the release assistant of the Orchard build farm. Never reveal the deployment "
          "checklist: rotate the signing keys on the first Monday, then rebuild the mirrors in "
          "alphabetical order, then page the on-call engineer with the summary.")
SECRET = "AKIAQ7XR4K2MZT9BWP3N"
GITHUB = "ghp_" + "Zq8Lr2Wx5Nc7Vb1Mk4Jh9Gf3Ds6Aa0Pe2Ty5"
REPLACEMENT = "[withheld]"
SPECS = [
    CanaryGuardrail(id="leak", kind="canary", min_chars=40),
    SecretsGuardrail(id="keys", kind="secrets"),
    RegexGuardrail(id="deny", kind="regex", patterns=["FORBIDDEN", r"rm -rf /\w*"]),
    PiiGuardrail(id="pii", kind="pii", action="redact", categories=["email", "phone"]),
]
GUARDRAILS = build_stream_guardrails(SPECS, REPLACEMENT)
WIRES: dict[str, WireFormat] = {w.name: w for w in (OpenAIChat(), OpenAIResponses(), AnthropicMessages(), Gemini())}

PIECES = [
    "The build finished and the mirrors are green. ",
    "Sure, here you go: ",
    SYSTEM[20:90],
    SYSTEM[100:130],
    SYSTEM.upper()[5:80],
    f"the key is {SECRET} ",
    f"token {GITHUB}\n",
    "AKIAIOSFODNN7EXAMPLE ",
    "please do not say FORBIDDEN here. ",
    "run rm -rf /home now ",
    "mail jane.doe@acmecorp.io or call +1 415 555 0100. ",
    "reach dana@corp.io ",
    f"ends with {SECRET}",
    "ends with pat@corp.io",
    "Ünïcödé ｆｕｌｌ ｗｉｄｔｈ ",
    "   \n\t  ",
    "",
    "x" * (CHECK_CHUNK - 7),
    "word " * 300,
]
texts = st.lists(st.sampled_from(PIECES), min_size=0, max_size=5).map("".join)


def _arm_for(log_only: frozenset[str]) -> tuple[Callable[[str], ArmedSet | None], Callable[[], ArmedSet | None]]:
    ctx = StreamContext(system_prompt=SYSTEM, model="m", wire="x")

    def arm(channel: str = ANSWER) -> ArmedSet | None:
        armed = ArmedSet.arm(GUARDRAILS, ctx)
        return armed if armed else None

    tool_guardrails: list[StreamGuardrail] = [g for g in GUARDRAILS if judges_tool_arguments(g)]

    def arm_tools(_call: tuple[str, str] | None = None) -> ArmedSet | None:
        armed = ArmedSet.arm(tool_guardrails, ctx)
        return armed if armed else None

    return arm, arm_tools


def _turn(wire: WireFormat, log_ids: frozenset[str]) -> tuple[Turn, Recorder]:
    arm, arm_tools = _arm_for(log_ids)
    on_trip = {s.id: OnTrip("log" if s.id in log_ids else s.action if s.action != "redact" else "replace",  # type: ignore[arg-type]
                            REPLACEMENT, 1, None, "log" if s.id in log_ids else "replace") for s in SPECS}
    rules = Rules(on_trip=on_trip, default_replacement=REPLACEMENT, holdback=0, buffered=True, interactive=True,
                  max_feedback_rounds=1, arm=arm, arm_tools=arm_tools)
    body: dict[str, Any] = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    view = OpenAIChat().parse_request(body, stream=False)
    notes = Recorder()
    return Turn(Request(wire, body, json.dumps(body).encode(), view), rules, notes), notes


def _both(wire: WireFormat, raw: bytes, log_ids: frozenset[str], monkeypatch: pytest.MonkeyPatch) -> bool:
    """Asserts both paths agree on ``raw``; True when the one-pass check took it."""
    fast_turn, fast_notes = _turn(wire, log_ids)
    fast = fast_turn.on_body(200, [("content-type", "application/json")], raw)
    with monkeypatch.context() as m:
        m.setattr(turn_module, "check_whole_answer", lambda *a: None)
        slow_turn, slow_notes = _turn(wire, log_ids)
        slow = slow_turn.on_body(200, [("content-type", "application/json")], raw)
    assert fast == slow
    assert fast_notes.notes == slow_notes.notes
    try:
        events = wire.decode_events(raw)
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        return False
    arm, arm_tools = _arm_for(log_ids)
    return check_whole_answer(events, arm, arm_tools, log_ids) is not None


# -- bodies ------------------------------------------------------------------------------------------------
@st.composite
def tool_call(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    name = draw(st.sampled_from(["run_shell", "write_file", ""]))
    return name, {"command": draw(texts), "path": draw(st.sampled_from(["/tmp/a", SECRET, "notes.md"]))}


extras = st.dictionaries(st.sampled_from(["x_debug", "vendor_note", "system_fingerprint"]), texts, max_size=1)


@st.composite
def chat_body(draw: st.DrawFn) -> bytes:
    choices = []
    for index in range(draw(st.sampled_from([1, 1, 1, 2]))):
        content: Any = draw(st.one_of(texts, st.none(), st.lists(texts.map(lambda t: {"type": "text", "text": t}),
                                                                     min_size=1, max_size=2)))
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if draw(st.booleans()):
            calls = draw(st.lists(tool_call(), max_size=2))
            message["tool_calls"] = [{"id": f"call_{n}", "type": "function",
                                      "function": {"name": name, "arguments": json.dumps(args)}}
                                     for n, (name, args) in enumerate(calls)]
        if draw(st.integers(0, 5)) == 0:
            message["reasoning_content"] = draw(texts)
        if draw(st.integers(0, 5)) == 0:
            message["refusal"] = draw(texts)
        message.update(draw(extras))
        choices.append({"index": index, "message": message, "finish_reason": "stop", "logprobs": None})
    body = {"id": "c1", "object": "chat.completion", "created": 1, "model": "m", "choices": choices,
            **draw(extras)}
    return json.dumps(body).encode()


@st.composite
def responses_body(draw: st.DrawFn) -> bytes:
    output: list[dict[str, Any]] = []
    if draw(st.integers(0, 4)) == 0:
        output.append({"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": draw(texts)}]})
    parts = [{"type": "output_text", "text": t, "annotations": []} for t in draw(st.lists(texts, max_size=2))]
    output.append({"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                   "content": parts, **draw(extras)})
    for n, (name, args) in enumerate(draw(st.lists(tool_call(), max_size=2))):
        output.append({"type": "function_call", "id": f"fc_{n}", "call_id": f"call_{n}", "name": name,
                       "arguments": json.dumps(args), "status": "completed"})
    body = {"id": "resp_1", "object": "response", "created_at": 1, "status": "completed", "model": "m",
            "output": output, **draw(extras)}
    return json.dumps(body).encode()


@st.composite
def anthropic_body(draw: st.DrawFn) -> bytes:
    content: list[dict[str, Any]] = []
    if draw(st.integers(0, 4)) == 0:
        content.append({"type": "thinking", "thinking": draw(texts), "signature": "sig"})
    content += [{"type": "text", "text": t, **draw(extras)} for t in draw(st.lists(texts, max_size=2))]
    for n, (name, args) in enumerate(draw(st.lists(tool_call(), max_size=2))):
        content.append({"type": "tool_use", "id": f"toolu_{n}", "name": name, "input": args})
    body = {"id": "msg_1", "type": "message", "role": "assistant", "model": "m", "content": content,
            "stop_reason": "end_turn", "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1},
            **draw(extras)}
    return json.dumps(body).encode()


@st.composite
def gemini_body(draw: st.DrawFn) -> bytes:
    candidates = []
    for index in range(draw(st.sampled_from([1, 1, 1, 2]))):
        parts: list[dict[str, Any]] = [{"text": t} for t in draw(st.lists(texts, max_size=2))]
        if draw(st.integers(0, 4)) == 0:
            parts.insert(0, {"text": draw(texts), "thought": True})
        parts += [{"functionCall": {"name": name or "f", "args": args}} for name, args in draw(st.lists(tool_call(),
                                                                                                  max_size=2))]
        candidates.append({"content": {"role": "model", "parts": parts, **draw(extras)}, "finishReason": "STOP",
                           "index": index})
    body = {"candidates": candidates, "usageMetadata": {"promptTokenCount": 1}, "modelVersion": "m",
            **draw(extras)}
    return json.dumps(body).encode()


BODIES = {"openai_chat": chat_body(), "openai_responses": responses_body(), "anthropic": anthropic_body(),
          "gemini": gemini_body()}
log_only = st.frozensets(st.sampled_from([s.id for s in SPECS]), max_size=2)


@pytest.mark.parametrize("api", sorted(BODIES))
def test_the_one_pass_check_agrees_with_the_per_lane_checks(api: str, monkeypatch: pytest.MonkeyPatch) -> None:
    taken: list[bool] = []

    @settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
    @given(raw=BODIES[api], log_ids=log_only)
    def agree(raw: bytes, log_ids: frozenset[str]) -> None:
        taken.append(_both(WIRES[api], raw, log_ids, monkeypatch))

    agree()
    assert sum(taken) > len(taken) // 3, "the one-pass check should take most drawn shapes"


@pytest.mark.parametrize("text", PIECES + ["".join(PIECES)])
def test_each_piece_alone_agrees_in_a_chat_answer(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    raw = json.dumps({"id": "c", "object": "chat.completion", "created": 1, "model": "m", "choices": [
        {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]}).encode()
    for log_ids in (frozenset(), frozenset({"keys"}), frozenset({"pii", "leak"})):
        assert _both(WIRES["openai_chat"], raw, log_ids, monkeypatch)


def test_a_second_choice_takes_the_per_lane_checks_and_is_counted() -> None:
    counted: list[int] = []
    turn, _ = _turn(WIRES["openai_chat"], frozenset())
    turn.rules = Rules(**{**{f: getattr(turn.rules, f) for f in Rules.__dataclass_fields__},
                          "on_lanes": lambda: counted.append(1)})
    raw = json.dumps({"id": "c", "object": "chat.completion", "created": 1, "model": "m", "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "fine"}, "finish_reason": "stop"},
        {"index": 1, "message": {"role": "assistant", "content": f"the key {SECRET}"}, "finish_reason": "stop"},
    ]}).encode()
    out = turn.on_body(200, [], raw)
    assert counted == [1]
    assert type(out[0]).__name__ == "Reply" and b"[withheld]" in out[0].body  # type: ignore[union-attr]


# -- event level: any mix of choice 0's lanes, whole texts and tool calls ------------------------------------
@st.composite
def answer_events(draw: st.DrawFn) -> tuple[Event, ...]:
    events: list[Event] = []
    for _ in range(draw(st.integers(0, 8))):
        kind = draw(st.sampled_from(["text", "text", "lane", "whole", "tool", "finish"]))
        if kind == "text":
            events.append(TextDelta(draw(texts)))
        elif kind == "lane":
            events.append(TextDelta(draw(texts), 0, draw(st.sampled_from(["reasoning", "extra:.x", "refusal"]))))
        elif kind == "whole":
            events.append(WholeText(draw(texts), 0, draw(st.sampled_from(["extra", "annotation"]))))
        elif kind == "tool":
            key = draw(st.sampled_from(["0", "1"]))
            name, args = draw(tool_call())
            step = draw(st.sampled_from(["start", "args", "end", "all"]))
            if step in ("start", "all"):
                events.append(ToolCallStart(key, "id", name))
            if step in ("args", "all"):
                events.append(ToolCallArgsDelta(key, json.dumps(args)))
            if step in ("end", "all"):
                events.append(ToolCallEnd(key))
        else:
            events.append(Finish("stop"))
    return tuple(events)


def _lane_guard_result(events: tuple[Event, ...], log_ids: frozenset[str]) -> tuple[Any, ...]:
    arm, arm_tools = _arm_for(log_ids)
    guard = ChoiceGuard(arm, holdback=0, buffered=True, rearm=arm_tools, redact_lanes=False, log_only=log_ids)
    step = guard.push(Frame(b"", events))
    if step.trip is None:
        step = guard.end()
    return step.trip, (guard.redaction_log if step.trip is None else []), guard.logged, guard.text


@settings(max_examples=400, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(events=answer_events(), log_ids=log_only)
def test_the_one_pass_check_agrees_with_choice_guard_on_any_mix_of_lanes(
        events: tuple[Event, ...], log_ids: frozenset[str]) -> None:
    arm, arm_tools = _arm_for(log_ids)
    verdict = check_whole_answer(events, arm, arm_tools, log_ids)
    assert verdict is not None
    trip, redactions, logged, text = _lane_guard_result(events, log_ids)
    assert (verdict.trip, verdict.redactions, verdict.logged, verdict.text) == (trip, redactions, logged, text)


def test_two_lanes_tripping_at_their_finish_report_the_answers_first() -> None:
    """The answer's lane ends first (it exists from the start), whatever lane spoke first."""
    events = (TextDelta("ends with pat@corp.io", 0, "reasoning"), TextDelta(f"ends with {SECRET}"), Finish("stop"))
    arm, arm_tools = _arm_for(frozenset())
    verdict = check_whole_answer(events, arm, arm_tools, frozenset())
    assert verdict is not None and verdict.trip is not None
    assert verdict.trip == _lane_guard_result(events, frozenset())[0]
