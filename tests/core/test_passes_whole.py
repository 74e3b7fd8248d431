"""The guardrails' whole-text forms (``passes_whole``, ``passes_complete``) against the armed checks they stand in for.

Soundness, per guardrail: whenever ``passes_whole(ctx, pieces)`` is True, the check armed for the same
context, fed the same pieces (one ``check`` each, then ``finish``), returns ``PASS`` every time. The
canary's form is exact (True exactly when the armed check passes); the secrets form is a keyword gate
(True on text without any keyword). Then end to end: a turn that uses the forms (``Rules.passes``)
answers every drawn body of all four APIs with the same commands and notes as one that arms every check.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from config.policy import (
    CanaryGuardrail,
    MaxLengthGuardrail,
    PiiGuardrail,
    RegexGuardrail,
    SecretsGuardrail,
    StreamGuardrailSpec,
)
from guardrails.datamodel import Event, Finish, TextDelta, ToolCallArgsDelta, ToolCallEnd, ToolCallStart
from guardrails.seams import (
    PassesWhole,
    StreamContext,
    StreamGuardrail,
    judges_tool_arguments,
    passes_whole_of,
)
from guardrails.stream import build_stream_guardrails, passes_complete
from guardrails.stream.canary import CANARY_PREFIX
from proxy.core import whole_answer
from proxy.core.stream_guard import CHECK_CHUNK
from proxy.core.whole_answer import check_whole_answer
from tests.core.test_whole_answer import (
    BODIES,
    GITHUB,
    PIECES,
    REPLACEMENT,
    SECRET,
    SYSTEM,
    WIRES,
    _turn,
    answer_events,
    log_only,
)
from tests.stream_support import armed_passes

TOKEN = CANARY_PREFIX + "0123456789abcdef"
SPECS: list[StreamGuardrailSpec] = [
    CanaryGuardrail(id="leak", kind="canary", min_chars=40),
    CanaryGuardrail(id="short", kind="canary", min_chars=8),
    SecretsGuardrail(id="keys", kind="secrets"),
    MaxLengthGuardrail(id="long", kind="max_length", max_chars=600),
    RegexGuardrail(id="deny", kind="regex", patterns=["FORBIDDEN", r"rm -rf /\w*", r"(?i)project\s+nightingale"]),
    RegexGuardrail(id="deny-unanchored", kind="regex", patterns=[r"\d{3}-secret"]),
    PiiGuardrail(id="pii", kind="pii", categories=["email", "phone", "card", "iban"]),
    PiiGuardrail(id="pii-redact", kind="pii", action="redact"),
]
EXACT = {"leak", "short", "long"}
GUARDRAILS = build_stream_guardrails(SPECS, REPLACEMENT)
CONTEXTS = [StreamContext(system_prompt=SYSTEM), StreamContext(system_prompt=SYSTEM, canary_token=TOKEN),
            StreamContext(system_prompt=""), StreamContext(system_prompt="", canary_token=TOKEN),
            StreamContext(system_prompt="Be brief.")]
WORDS = PIECES + [TOKEN, TOKEN[:9], TOKEN[9:], SYSTEM.title()[30:75], "  \n", "ＦＵＬＬ", "ß", "Σ", "\u0301",
                  "e\u0301", "password: hunter2", f"key={SECRET}", GITHUB[:10], GITHUB[10:], "forbid", "DEN",
                  "Project ", "NIGHTINGALE", "123-secret", "mail ann@corp.io ", "call +1 415 555 0100 ",
                  "4111 1111 1111 1111", "DE89 3704 0044 0532 0130 00", "in 2024 ", "v1.2.3 "]


@st.composite
def split_text(draw: st.DrawFn) -> list[str]:
    """A text from ``WORDS`` and ``SYSTEM``'s slices, cut at drawn offsets (as deltas would cut it)."""
    parts = draw(st.lists(st.one_of(st.sampled_from(WORDS), st.builds(
        lambda a, n: SYSTEM[a:a + n], st.integers(0, len(SYSTEM)), st.integers(1, 80))), max_size=6))
    text = "".join(parts)
    cuts = sorted(draw(st.lists(st.integers(0, len(text)), max_size=6)))
    return [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]


def _form(guardrail: StreamGuardrail) -> PassesWhole:
    form = passes_whole_of(guardrail)
    assert form is not None
    return form


@settings(max_examples=600, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(pieces=split_text(), ctx=st.sampled_from(CONTEXTS))
def test_a_whole_text_form_passes_only_what_the_armed_check_passes(pieces: list[str], ctx: StreamContext) -> None:
    for guardrail in GUARDRAILS:
        if _form(guardrail)(ctx, pieces):
            assert armed_passes(guardrail, ctx, pieces), (guardrail.id, pieces)


@settings(max_examples=600, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(pieces=split_text(), ctx=st.sampled_from(CONTEXTS))
def test_the_canary_and_length_forms_are_exact(pieces: list[str], ctx: StreamContext) -> None:
    for guardrail in GUARDRAILS:
        if guardrail.id in EXACT:
            assert _form(guardrail)(ctx, pieces) == armed_passes(guardrail, ctx, pieces), (guardrail.id, pieces)


@pytest.mark.parametrize("text", [SYSTEM[10:60], SYSTEM.upper()[40:100], f"x {TOKEN} y", "a" * 601])
def test_what_trips_does_not_pass_whole(text: str) -> None:
    ctx = CONTEXTS[1]
    assert not all(_form(g)(ctx, [text]) for g in GUARDRAILS)
    assert not all(_form(g)(ctx, [text[:7], text[7:]]) for g in GUARDRAILS)


def test_the_secrets_form_passes_prose_and_declines_a_keyword() -> None:
    keys = _by_id("keys")
    ctx = CONTEXTS[0]
    assert _form(keys)(ctx, ["The build finished and the mirrors are green."])
    assert not _form(keys)(ctx, [f"the key is {SECRET}"])
    assert not _form(keys)(ctx, [GITHUB[:3], GITHUB[3:]])  # a keyword across two pieces


def _by_id(guardrail_id: str) -> StreamGuardrail:
    return next(g for g in GUARDRAILS if g.id == guardrail_id)


def test_the_deny_and_pii_forms_pass_prose_and_decline_their_anchors() -> None:
    ctx, prose = CONTEXTS[0], ["The build finished and the mirrors are green."]
    deny, unanchored, pii = _by_id("deny"), _by_id("deny-unanchored"), _by_id("pii")
    assert _form(deny)(ctx, prose) and _form(pii)(ctx, prose)
    assert not _form(deny)(ctx, ["a project  Nightingale plan"])  # the prefix, in either case
    assert not _form(deny)(ctx, ["FORB", "IDDEN"])
    assert not _form(unanchored)(ctx, prose)  # no literal prefix: the armed check decides
    assert not _form(pii)(ctx, ["write to ann@corp.io"])
    assert not _form(pii)(ctx, ["the year 2024"])  # four close digits: the armed check decides


def test_a_long_text_is_checked_in_the_pieces_of_a_check() -> None:
    leak = _by_id("leak")
    text = "word " * (CHECK_CHUNK // 5) + SYSTEM[:60]
    pieces = [text[at:at + CHECK_CHUNK] for at in range(0, len(text), CHECK_CHUNK)]
    assert not _form(leak)(CONTEXTS[0], pieces)
    assert not armed_passes(leak, CONTEXTS[0], pieces)


# -- end to end: a turn with the forms answers as one that arms every check -----------------------------------
def _passes_for(guardrails: list[StreamGuardrail]) -> tuple[whole_answer.PassesFor, whole_answer.ToolsPass]:
    """The forms as ``Arming.passes`` / ``passes_tools`` give them, for ``tests.core.test_whole_answer``'s arming."""
    ctx = StreamContext(system_prompt=SYSTEM, model="m", wire="x")
    tool_guardrails = [g for g in guardrails if judges_tool_arguments(g)]

    def passes(channel: str, pieces: Sequence[str]) -> bool:
        return passes_complete(guardrails, ctx, pieces)

    def passes_tools(pieces: Sequence[str]) -> bool:
        return passes_complete(tool_guardrails, ctx, pieces)

    return passes, passes_tools


@settings(max_examples=400, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(events=answer_events(), log_ids=log_only)
def test_the_whole_forms_agree_with_choice_guard_on_any_mix_of_lanes_and_tool_calls(
        events: tuple[Event, ...], log_ids: frozenset[str]) -> None:
    import tests.core.test_whole_answer as whole

    arm, arm_tools = whole._arm_for(log_ids)
    verdict = check_whole_answer(events, arm, arm_tools, log_ids, *_passes_for(whole.GUARDRAILS))
    assert verdict is not None
    trip, redactions, logged, text = whole._lane_guard_result(events, log_ids)
    assert (verdict.trip, verdict.redactions, verdict.logged, verdict.text) == (trip, redactions, logged, text)


@pytest.mark.parametrize("api", sorted(BODIES))
def test_a_turn_with_the_whole_forms_answers_as_one_without(api: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """``tests.core.test_whole_answer``'s turns arm its four guardrails (canary, secrets, deny patterns, PII
    redaction); here ``passes_complete`` (their whole forms, else each check alone) answers for them
    whenever they all pass, and the answer must not change."""
    import tests.core.test_whole_answer as whole

    with_forms = whole.GUARDRAILS
    assert all(passes_whole_of(g) is not None for g in with_forms)
    wire, taken = WIRES[api], []
    passing_text = whole_answer._passing_text

    def recorded(*args: object) -> str | None:
        text = passing_text(*args)  # type: ignore[arg-type]
        taken.append(text is not None)
        return text

    monkeypatch.setattr(whole_answer, "_passing_text", recorded)

    @settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
    @given(raw=BODIES[api], log_ids=st.frozensets(st.sampled_from([g.id for g in with_forms]), max_size=1))
    def agree(raw: bytes, log_ids: frozenset[str]) -> None:
        fast_turn, fast_notes = _turn(wire, log_ids)
        passes, passes_tools = _passes_for(with_forms)
        fast_turn.rules = dataclasses.replace(fast_turn.rules, passes=passes, passes_tools=passes_tools)
        fast = fast_turn.on_body(200, [("content-type", "application/json")], raw)
        slow_turn, slow_notes = _turn(wire, log_ids)
        slow = slow_turn.on_body(200, [("content-type", "application/json")], raw)
        assert fast == slow
        assert fast_notes.notes == slow_notes.notes

    agree()
    assert any(taken), "the whole forms should answer for some of the drawn bodies"
    assert not all(taken), "and leave the others to the armed checks"


@pytest.mark.parametrize("path", ["notes.md", SECRET, "a\\u0041KIAQ7XR4K2MZT9BWP3N"])
def test_a_tool_call_goes_by_the_tool_checks_forms(path: str) -> None:
    """A clean answer with a tool call: the call's texts (name with raw arguments, decoded values)
    decide; a key in the arguments, raw or escaped, is found as the armed checks find it. (The
    answer's "files." holds a secrets keyword, "s.": the secrets check runs alone, and passes.)"""
    import tests.core.test_whole_answer as whole

    arguments = '{"command": "ls", "path": "' + path + '"}'
    events = (TextDelta("Listing the files."), ToolCallStart("0", "id", "run_shell"), ToolCallArgsDelta("0", arguments),
              ToolCallEnd("0"), Finish("tool_calls"))
    passes, passes_tools = _passes_for(whole.GUARDRAILS)
    arm, arm_tools = whole._arm_for(frozenset())
    verdict = check_whole_answer(events, arm, arm_tools, frozenset(), passes, passes_tools)
    assert verdict is not None
    assert (verdict.trip, verdict.redactions, verdict.logged, verdict.text) == \
        whole._lane_guard_result(events, frozenset())
    assert (verdict.trip is None) == (path == "notes.md")
    taken = whole_answer._passing_text(events, passes, passes_tools)
    assert (taken is not None) == (path == "notes.md")
