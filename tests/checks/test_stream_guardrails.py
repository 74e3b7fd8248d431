"""Stream guardrails: canary, regex, max_length, the builder and the ArmedSet runner."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from config.policy import (
    CanaryGuardrail,
    MaxLengthGuardrail,
    PiiGuardrail,
    RegexGuardrail,
    SecretsGuardrail,
)
from guardrails.decision import MAX_LENGTH, PATTERN_MATCH, SYSTEM_PROMPT_LEAK, Block, Pass, Redact
from guardrails.seams import DeltaCheck, StreamContext
from guardrails.stream import ArmedSet, build_stream_guardrails, canary_instruction, make_canary_token
from guardrails.stream.canary import CanaryProvider
from guardrails.stream.patterns import RegexProvider
from tests.stream_support import one_char, random_chunks, run, summary

PROMPT = (
    "You are Orbit, the support assistant of Acme Rockets. Always answer in a friendly tone.\n"
    "Never discuss launch schedules that are not public. Internal escalation code: ZEBRA-7.\n"
    "    When a customer asks about refunds, point them to the refunds page and nothing else.\n"
    + "Policy paragraph about warranty terms and the handling of damaged parcels, item %d.\n" * 20
)
LEAK = "never discuss launch schedules that are not public. internal escalation code"


def canary(prompt: str = PROMPT, token: str = "", min_chars: int = 40) -> DeltaCheck | None:
    provider = CanaryProvider(CanaryGuardrail(id="canary", kind="canary", min_chars=min_chars), "[x]")
    return provider.arm(StreamContext(system_prompt=prompt, canary_token=token))


def armed_canary(**kw: str) -> DeltaCheck:
    check = canary(**kw)  # type: ignore[arg-type]
    assert check is not None
    return check


# --- canary -----------------------------------------------------------------------------------


def test_canary_declines_to_arm_when_the_system_prompt_is_short() -> None:
    assert canary(prompt="You are a helpful assistant.") is None
    assert canary(prompt="") is None
    assert canary(prompt="short", token="gp-canary-0123456789abcdef") is not None


def test_canary_blocks_a_verbatim_leak_arriving_one_char_per_delta() -> None:
    text = "Sure! My instructions say: " + PROMPT.splitlines()[1] + " That is all."
    out = run(armed_canary(), one_char(text))
    assert out.block is not None and out.block.reason_code == SYSTEM_PROMPT_LEAK
    assert PROMPT.splitlines()[1][:20] not in out.block.rationale


def test_canary_tolerates_case_and_whitespace_drift() -> None:
    text = "Well:   NEVER discuss launch\n\n   schedules  that are not PUBLIC.   Internal escalation code"
    assert run(armed_canary(), random_chunks(text, 1)).block is not None


def test_canary_passes_short_overlaps_and_unrelated_prose() -> None:
    text = "I am Orbit, the support assistant. Refunds are handled on the refunds page. Have a good day!"
    assert run(armed_canary(), one_char(text)).block is None


def test_canary_blocks_within_its_window() -> None:
    text = "filler text " * 30 + LEAK + " more filler " * 30
    check = armed_canary()
    out = run(check, one_char(text))
    assert out.blocked_at is not None
    assert text.index(LEAK) >= out.blocked_at - check.window


def test_canary_detects_the_planted_token_split_across_deltas() -> None:
    token = make_canary_token()
    assert re.fullmatch(r"gp-canary-[0-9a-f]{16}", token) and token != make_canary_token()
    assert token in canary_instruction(token)
    check = armed_canary(prompt=PROMPT + canary_instruction(token), token=token)
    out = run(check, one_char("The marker is " + token + ", as requested."))
    assert out.blocked_at is not None and token not in out.block.rationale  # type: ignore[union-attr]
    assert len("The marker is " + token) - check.window <= len("The marker is ")


def test_canary_reports_one_leaked_run_once() -> None:
    check = armed_canary()
    acc, blocks = "", 0
    for delta in one_char(LEAK + " and again: " + LEAK.upper()):
        acc += delta
        blocks += isinstance(check.check(acc, delta), Block)
    assert blocks == 2


def test_canary_keeps_only_a_bounded_tail() -> None:
    check = armed_canary()
    acc = ""
    for delta in random_chunks("lots of unrelated prose that goes on and on. " * 300, 5):
        acc += delta
        check.check(acc, delta)
        assert len(check._tail) < 40  # type: ignore[attr-defined]


# --- regex ------------------------------------------------------------------------------------


def regex(patterns: list[str], flags: list[str] | None = None, window: int = 64) -> DeltaCheck:
    spec = RegexGuardrail(id="deny", kind="regex", patterns=patterns, flags=flags or [],  # type: ignore[arg-type]
                          window=window)
    check = RegexProvider(spec, "[x]").arm(StreamContext(system_prompt=""))
    assert check is not None
    return check


def test_regex_blocks_a_pattern_that_spans_many_deltas() -> None:
    out = run(regex([r"project\s+nightingale"]), one_char("About Project  Nightingale: no.".lower()))
    assert out.block is not None and out.block.reason_code == PATTERN_MATCH
    assert "nightingale" not in out.block.rationale


def test_regex_flags_apply() -> None:
    assert run(regex([r"secret plan"], ["i"]), one_char("The SECRET Plan is")).block is not None
    assert run(regex([r"secret plan"]), one_char("The SECRET Plan is")).block is None
    assert run(regex([r"^forbidden$"], ["m"]), one_char("ok\nforbidden\nok")).block is not None


def test_regex_waits_until_a_match_can_no_longer_grow() -> None:
    check = regex([r"order #\d+"])
    acc = ""
    for delta in ["order #12", "34", "56"]:
        acc += delta
        assert isinstance(check.check(acc, delta), Pass)
    assert isinstance(check.check(acc + " ", " "), Block)


def test_regex_reports_a_match_that_reaches_the_window() -> None:
    out = run(regex([r"a+"], window=16), one_char("b" + "a" * 40))
    assert out.blocked_at is not None and out.blocked_at <= 1 + 16


def test_regex_reports_each_match_once() -> None:
    check = regex([r"bad"])
    acc, blocks = "", 0
    for delta in one_char("bad, good, bad, good"):
        acc += delta
        blocks += isinstance(check.check(acc, delta), Block)
    blocks += isinstance(check.finish(acc), Block)
    assert blocks == 2


def test_regex_rejects_an_invalid_pattern_when_the_policy_loads() -> None:
    with pytest.raises(ValueError, match="invalid pattern"):
        RegexProvider(RegexGuardrail(id="deny", kind="regex", patterns=["(unclosed"]), "")


def test_regex_scan_stays_in_the_tail() -> None:
    check = regex([r"zz+y", r"q\d{3}"], window=32)
    acc = ""
    for delta in random_chunks("plain text with nothing to find. " * 300, 2):
        acc += delta
        check.check(acc, delta)
        for scanner in check._scanners:  # type: ignore[attr-defined]
            assert scanner.floor >= len(acc) - 32


# --- max_length -------------------------------------------------------------------------------


def test_max_length_blocks_once_the_answer_exceeds_the_limit() -> None:
    guards = build_stream_guardrails([MaxLengthGuardrail(id="len", kind="max_length", max_chars=10)], "[d]")
    armed = ArmedSet.arm(guards, StreamContext(system_prompt=""))
    assert armed.window == 0
    assert armed.check("0123456789", "9") is None
    trip = armed.check("0123456789a", "a")
    assert trip is not None and isinstance(trip.decision, Block) and trip.decision.reason_code == MAX_LENGTH
    assert armed.check("0123456789ab", "b") is None


# --- builder and runner -----------------------------------------------------------------------


def test_builder_skips_disabled_specs_and_fills_in_the_default_replacement() -> None:
    guards = build_stream_guardrails([
        SecretsGuardrail(id="s", kind="secrets"),
        PiiGuardrail(id="p", kind="pii", enabled=False),
        RegexGuardrail(id="r", kind="regex", patterns=["x+"], replacement="[own]"),
    ], "[default]")
    assert [g.id for g in guards] == ["s", "r"]
    armed = ArmedSet.arm(guards, StreamContext(system_prompt=""))
    trip = armed.finish("xxx")
    assert trip is not None and trip.guardrail_id == "r"
    assert isinstance(trip.decision, Block) and trip.decision.replacement == "[own]"


def test_armed_set_skips_declining_guardrails_and_takes_the_widest_window() -> None:
    guards = build_stream_guardrails([
        CanaryGuardrail(id="c", kind="canary"),
        RegexGuardrail(id="r", kind="regex", patterns=["x"], window=300),
        MaxLengthGuardrail(id="m", kind="max_length", max_chars=5),
    ], "[d]")
    armed = ArmedSet.arm(guards, StreamContext(system_prompt="too short"))
    assert armed.ids == ["r", "m"] and armed.window == 300 and armed
    assert not ArmedSet.arm([], StreamContext(system_prompt=""))
    assert ArmedSet.arm([], StreamContext(system_prompt="")).window == 0


def test_armed_set_runs_in_policy_order_and_the_first_trip_wins() -> None:
    guards = build_stream_guardrails([
        PiiGuardrail(id="p", kind="pii", action="redact"),
        MaxLengthGuardrail(id="m", kind="max_length", max_chars=5),
    ], "[d]")
    armed = ArmedSet.arm(guards, StreamContext(system_prompt=""))
    text = "x@corp.io, hello"
    trip = armed.check(text, text)
    assert trip is not None and trip.guardrail_id == "p" and isinstance(trip.decision, Redact)
    trip = armed.check(text, "")
    assert trip is not None and trip.guardrail_id == "m"


# --- chunking invariance across every kind -----------------------------------------------------

FRAGMENTS = [
    "Hello, ", "here is the answer. ", LEAK, " ", "\n", "project nightingale", "nightin", "gale ",
    "ops@corp.io", " +44 20 7946 0958", "gh" + "p_", "Xq7", "aws_secret_access_key = ", "A1b2",
    "-----BEGIN RSA PRIVATE KEY-----\n", "MIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM9Oi7Lx", "eyJ", ".", "=",
]


SPECS = [
    CanaryGuardrail(id="c", kind="canary"),
    SecretsGuardrail(id="s", kind="secrets"),
    RegexGuardrail(id="r", kind="regex", patterns=[r"project\s+nightingale"], flags=["i"]),
    PiiGuardrail(id="p", kind="pii", action="redact"),
]


def armed(index: int) -> ArmedSet:
    """One kind alone: which of two guardrails trips first may depend on the chunking, but each
    one's own decisions may not."""
    return ArmedSet.arm(build_stream_guardrails([SPECS[index]], "[d]"), StreamContext(system_prompt=PROMPT))


def drive(armed: ArmedSet, chunks: list[str]) -> list[tuple[str, str]]:
    acc, seen = "", []
    for delta in chunks:
        acc += delta
        trip = armed.check(acc, delta)
        while trip is not None and isinstance(trip.decision, Redact):
            seen.append((trip.guardrail_id, acc[trip.decision.start:trip.decision.end]))
            trip = armed.check(acc, "")
        if trip is not None:
            return [*seen, (trip.guardrail_id, trip.decision.reason_code)]
    trip = armed.finish(acc)
    while trip is not None and isinstance(trip.decision, Redact):
        seen.append((trip.guardrail_id, acc[trip.decision.start:trip.decision.end]))
        trip = armed.finish(acc)
    return seen + ([(trip.guardrail_id, trip.decision.reason_code)] if trip else [])


@settings(max_examples=120, deadline=None)
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=12), st.integers(0, 10_000),
       st.integers(0, len(SPECS) - 1))
def test_every_kind_decides_the_same_whatever_the_chunking(parts: list[str], seed: int, kind: int) -> None:
    text = "".join(parts)
    whole = drive(armed(kind), [text])
    assert drive(armed(kind), list(random_chunks(text, seed))) == whole
    assert drive(armed(kind), one_char(text)) == whole


def test_summary_helper_sees_blocks() -> None:
    assert summary(run(regex(["bad"]), ["bad "]))[0] == PATTERN_MATCH
