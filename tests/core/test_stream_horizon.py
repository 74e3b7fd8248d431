"""Horizons: the guard holds back only what could still become part of a match.

Differential property (hypothesis): for random and adversarial texts (secrets, prompt excerpts,
deny patterns, PII, look-alikes, non-ASCII) split into random, one-character and mid-character
deltas, the guard that releases by horizons blocks exactly when the fixed-window guard blocks
(same delta, same guardrail), and no character of the match is ever in what it released: a fresh
check over the text it still held, from its first held character, finds the match too.
"""

from __future__ import annotations

import string
from collections.abc import Sequence

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
from guardrails.datamodel import Frame, TextDelta
from guardrails.decision import PASS, Decision, Redact
from guardrails.seams import DeltaCheck, StreamContext
from guardrails.stream import ArmedSet, Trip, build_stream_guardrails
from proxy.core.stream_guard import StreamGuard
from tests.stream_support import blocks_afresh, split_deltas

PROMPT = ("You are Orbit, the support assistant of Acme Rockets. Never discuss launch schedules that "
          "are not public. Internal escalation code: ZEBRA-7. When a customer asks about refunds, "
          "point them to the refunds page and nothing else. Warranty terms cover damaged parcels.")
SPECS: list[StreamGuardrailSpec] = [
    CanaryGuardrail(id="canary", kind="canary"),
    SecretsGuardrail(id="secrets", kind="secrets"),
    RegexGuardrail(id="deny", kind="regex", patterns=[r"project\s+nightingale", r"\bcodename [A-Z]\w+",
                                                      r"launch (?:date|window)s?"], flags=["i"]),
    PiiGuardrail(id="pii", kind="pii"),
    MaxLengthGuardrail(id="len", kind="max_length", max_chars=5000),
]
PROVIDERS = build_stream_guardrails(SPECS, "[x]")
CTX = StreamContext(system_prompt=PROMPT)

_KEY_ALPHABET = string.ascii_letters + string.digits
PIECES = [
    "The deployment finished in four minutes. ", "def handle(request):\n    return None\n",
    "Ask the team; the task-based plan is risk-free. ", "Keys and tokens go in the vault. ",
    "password = ", "api_key: ", "sk-", "AKIA", "ghp_", "eyJhbGciOiJIUzI1NiJ9.eyJ", "-----BEGIN",
    "sk-XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX ", "bob@example.com ", "mail alice@corp-mail.io now ",
    "call +1 (415) 555-0100 today ", "card 4111 1111 1111 1111 ok ", "SSN 123-45-6789. ",
    "IBAN DE89 3704 0044 0532 0130 00 ", "version 1.2.3.4 ", "Project  Nightingale ", "project night ",
    "codename Falcon ", "the launch window ", "launch ", "Ｎｅｖｅｒ ｄｉｓｃｕｓｓ ",
    "naïve café — ünïcödé 😀 ", "你好，世界。", "\n\n   ", "@", "0", "+44 20 7946 0958 ",
]


@st.composite
def adversarial_text(draw: st.DrawFn) -> str:
    parts: list[str] = []
    for _ in range(draw(st.integers(1, 8))):
        choice = draw(st.integers(0, 4))
        if choice == 0:
            start = draw(st.integers(0, len(PROMPT) - 50))
            excerpt = PROMPT[start:start + draw(st.integers(8, 60))]
            if draw(st.booleans()):
                excerpt = excerpt.upper().replace(" ", draw(st.sampled_from([" ", "  ", "\n", " \t "])))
            parts.append(excerpt)
        elif choice == 1:
            prefix = draw(st.sampled_from(["sk-", "ghp_", "glpat-", "AKIA", "token = ", "xoxb-1234567890-"]))
            body = draw(st.text(_KEY_ALPHABET, min_size=8, max_size=40))
            parts.append(prefix + (body.upper() if prefix == "AKIA" else body) + draw(st.sampled_from([" ", ".", ""])))
        elif choice == 2:
            parts.append(draw(st.text(min_size=1, max_size=20)))
        else:
            parts.append(draw(st.sampled_from(PIECES)))
    return "".join(parts)


class _FixedWindow(ArmedSet):
    """The guard before horizons: hold the largest window of the armed checks."""

    def horizon(self, accumulated: str) -> int:
        return max(0, len(accumulated) - self.window)


def _drive(guard: StreamGuard, deltas: Sequence[str]) -> tuple[int | None, Trip | None, int]:
    """(index of the delta that tripped, the trip, characters released before it)."""
    released = 0
    for i, delta in enumerate(deltas):
        step = guard.push(Frame(delta.encode(), (TextDelta(delta),)))
        if step.trip is not None:
            return i, step.trip, released
        released += sum(len(f.text) for f in step.send)
    step = guard.end()
    return (len(deltas) if step.trip else None), step.trip, released


def _held_deltas(deltas: Sequence[str], released: int, upto: int) -> list[str]:
    """The deltas from the first held character (frames are released whole) through ``upto``."""
    out, offset = [], 0
    for delta in deltas[:upto + 1]:
        if offset >= released:
            out.append(delta)
        offset += len(delta)
    return out


@settings(max_examples=300, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.data())
def test_horizon_guard_blocks_exactly_when_the_fixed_window_guard_does(data: st.DataObject) -> None:
    text = data.draw(adversarial_text())
    deltas = data.draw(split_deltas(text))
    fixed = StreamGuard(_FixedWindow.arm(PROVIDERS, CTX), holdback=0)
    horizon = StreamGuard(ArmedSet.arm(PROVIDERS, CTX), holdback=0)
    at_fixed, trip_fixed, _ = _drive(fixed, deltas)
    at, trip, released = _drive(horizon, deltas)
    assert at == at_fixed
    assert (trip and (trip.guardrail_id, trip.decision.reason_code)) == (
        trip_fixed and (trip_fixed.guardrail_id, trip_fixed.decision.reason_code))
    if trip is not None and trip.guardrail_id != "len":
        held = _held_deltas(deltas, released, at)
        assert blocks_afresh([p for p in PROVIDERS if p.id == trip.guardrail_id], CTX, held), (text[:released], held)


def test_ordinary_prose_is_released_at_once() -> None:
    guard = StreamGuard(ArmedSet.arm(PROVIDERS, CTX), holdback=0)
    words = ["The", "deployment", "finished", "in", "about", "four", "minutes", "and", "the", "health", "checks", "went", "green", ".", ""]
    released = ""
    for word in words:
        delta = word + " "
        released += "".join(f.text for f in guard.push(Frame(delta.encode(), (TextDelta(delta),))).send)
    assert len("".join(w + " " for w in words)) - len(released) < 20


def test_a_pending_key_prefix_is_held_until_it_cannot_become_a_key() -> None:
    guard = StreamGuard(ArmedSet.arm(PROVIDERS, CTX), holdback=0)
    out = ""
    for delta in ["Use the key ", "sk-", "abc", " instead."]:
        out += "".join(f.text for f in guard.push(Frame(delta.encode(), (TextDelta(delta),))).send)
        if delta == "abc":
            assert "sk-" not in out
    assert out.startswith("Use the key sk-abc")


def test_holdback_chars_stays_a_minimum() -> None:
    guard = StreamGuard(ArmedSet.arm(PROVIDERS, CTX), holdback=30)
    text = "The deployment finished in about four minutes and the health checks went green. " * 2
    out = "".join("".join(f.text for f in guard.push(Frame(c.encode(), (TextDelta(c),))).send) for c in text)
    assert len(text) - len(out) >= 30


_UNBOUNDED = [p for p in PROVIDERS if p.id != "len"]


def _key() -> str:
    return "sk-" + "aZ3kQ9mX2pL7vB4nR8tY1wE6uI0oP5sD"


def test_a_long_unary_text_is_checked_in_pieces_and_a_secret_across_a_piece_boundary_is_caught() -> None:
    from proxy.core.stream_guard import CHECK_CHUNK
    for offset in (CHECK_CHUNK - 10, 5 * CHECK_CHUNK - 1, 40 * CHECK_CHUNK):
        text = "x " * (offset // 2) + " " + _key() + " and more prose after it."
        guard = StreamGuard(ArmedSet.arm(_UNBOUNDED, CTX), holdback=0, buffered=True)
        step = guard.push(Frame(b"", (TextDelta(text),)))
        assert step.trip is not None and step.trip.guardrail_id == "secrets"


def test_huge_tool_arguments_are_checked_in_pieces() -> None:
    from guardrails.datamodel import ToolCallArgsDelta, ToolCallEnd, ToolCallStart
    args = '{"content": "' + "sk-" * 80_000 + " " + _key() + '"}'
    guard = StreamGuard(ArmedSet.arm(_UNBOUNDED, CTX), holdback=0, buffered=True,
                        rearm=lambda _call=None: ArmedSet.arm([p for p in _UNBOUNDED if p.id != "canary"], CTX))
    guard.push(Frame(b"", (ToolCallStart("0", "c1", "Write"), ToolCallArgsDelta("0", args), ToolCallEnd("0"))))
    assert guard.pending_tool_chars == len(args)
    step = guard.end()
    assert step.trip is not None and step.trip.guardrail_id == "secrets"


class _RedactFirstCall(DeltaCheck):
    def __init__(self) -> None:
        self.calls = 0

    def check(self, accumulated: str, delta: str) -> Decision:
        self.calls += 1
        return Redact("pii", 0, 1, "[x]") if self.calls == 1 else PASS


class _Recorder(DeltaCheck):
    def __init__(self) -> None:
        self.seen = ""

    def check(self, accumulated: str, delta: str) -> Decision:
        self.seen += delta
        return PASS


def test_a_redaction_does_not_hide_its_delta_from_the_checks_after_it() -> None:
    recorder = _Recorder()
    guard = StreamGuard(ArmedSet([("r", _RedactFirstCall()), ("rec", recorder)]), holdback=0, buffered=True)
    for delta in ("abc", "def"):
        assert guard.push(Frame(delta.encode(), (TextDelta(delta),))).trip is None
    assert recorder.seen == "abcdef"
