"""Runs: the frames of one upstream read that are lone answer deltas go through the guard together
(``ChoiceGuard.push_from``), their checks run once over the joined text. What a client gets must not
depend on it: the frames released, in order and with the same bytes, the same trip, the same
redactions, and before a block the same frames as when every delta is checked on its own. Every
built-in stream guardrail is armed (the bench's all-armed policy), the texts are fed in reads of
random sizes; no codec, no sockets (frame bytes are labels, a rewritten frame's bytes its text)."""

from __future__ import annotations

import random
from dataclasses import dataclass

import pytest

from config.policy import (
    CanaryGuardrail,
    HiddenTextGuardrail,
    MaxLengthGuardrail,
    PiiGuardrail,
    RegexGuardrail,
    SecretsGuardrail,
    StreamGuardrailSpec,
)
from guardrails.datamodel import PRIMARY, Frame, Lane, TextDelta
from guardrails.decision import PASS, Decision
from guardrails.seams import DeltaCheck, StreamContext, StreamGuardrail
from guardrails.stream import ArmedSet, Trip, build_stream_guardrails
from proxy.core.choice_guard import ChoiceGuard
from proxy.core.stream_guard import CHECK_CHUNK

PROMPT = ("You are Atlas, the release assistant of a small platform team. Answer in plain sentences, "
          "cite the runbook section you relied on, and never promise dates you cannot verify.")
SPECS: list[StreamGuardrailSpec] = [
    CanaryGuardrail(id="canary", kind="canary", min_chars=40),
    SecretsGuardrail(id="secrets", kind="secrets"),
    RegexGuardrail(id="deny", kind="regex", flags=["i"], patterns=[r"project\s+nightingale"]),
    PiiGuardrail(id="pii", kind="pii", action="redact"),
    MaxLengthGuardrail(id="len", kind="max_length", max_chars=100_000),
    HiddenTextGuardrail(id="hidden", kind="hidden_text"),
]
GUARDRAILS = build_stream_guardrails(SPECS, "[withheld]")
PROSE = ("The deployment finished in a few minutes, and the health checks went green right after. "
         "If the cache misses again, look at the eviction policy before scaling the workers out. ")
SECRET = "AKIAQ7XR4K2MZT9BWP3N"

TEXTS = {
    "clean": PROSE * 6,
    "credential": PROSE * 3 + f"The key is {SECRET} as requested. " + PROSE * 2,
    "credential early": f"Use {SECRET} now. " + PROSE * 4,
    "prompt leak": PROSE * 2 + PROMPT + " " + PROSE,
    "deny pattern": PROSE * 2 + "This is about Project Nightingale, internally. " + PROSE,
    "emails redacted": PROSE + "Write to jane.doe@fastmail.com or ops@northwind.io today. " + PROSE * 3,
    "email then credential": PROSE + "Mail bob.smith@gmail.com, key " + SECRET + " here. " + PROSE,
    "invisible": PROSE + "zero\u200bwidth and bidi \u202e marks " + PROSE * 2,
}


def retext(frame: Frame, texts: dict[Lane, str]) -> bytes:
    return ("R:" + texts[PRIMARY]).encode()


def guard() -> ChoiceGuard:
    ctx = StreamContext(system_prompt=PROMPT)
    return ChoiceGuard(lambda _channel: ArmedSet.arm(GUARDRAILS, ctx), holdback=0, retext=retext)


def cut(text: str, rng: random.Random) -> list[Frame]:
    frames, at = [], 0
    while at < len(text):
        size = rng.randint(1, 9)
        frames.append(Frame(f"f{len(frames)}".encode(), (TextDelta(text[at:at + size]),)))
        at += size
    return frames


@dataclass
class Outcome:
    before_trip: list[bytes]
    trip: Trip | None
    after: list[bytes]
    redactions: list[Trip]


def feed(frames: list[Frame], reads: list[int] | None) -> Outcome:
    """Frames pushed one at a time (``reads`` None), or read by read (``reads``: frames per read)
    through ``push_from``, as the turn does."""
    g, sent = guard(), list[bytes]()
    groups = [[f] for f in frames] if reads is None else []
    at = 0
    for n in reads or []:
        groups.append(frames[at:at + n])
        at += n
    for group in groups:
        i = 0
        while i < len(group):
            if reads is None:
                step, i = g.push(group[i]), i + 1
            else:
                step, i = g.push_from(group, i)
            sent += [f.raw for f in step.send]
            if step.trip is not None:
                return Outcome(sent, step.trip, [], g.redaction_log)
    end = g.end()
    if end.trip is not None:
        return Outcome(sent, end.trip, [], g.redaction_log)
    return Outcome(sent, None, [f.raw for f in g.release_all()], g.redaction_log)


def reads_of(count: int, rng: random.Random) -> list[int]:
    out = []
    while count > 0:
        n = min(count, rng.choice([1, 2, 5, 40, 400]))
        out.append(n)
        count -= n
    return out


@pytest.mark.parametrize("name", sorted(TEXTS))
def test_a_client_gets_the_same_frames_whether_deltas_are_checked_one_by_one_or_per_read(name: str) -> None:
    rng = random.Random(name)
    for _ in range(4):
        frames = cut(TEXTS[name], rng)
        one_by_one = feed(frames, None)
        per_read = feed(frames, reads_of(len(frames), rng))
        assert per_read.trip == one_by_one.trip
        assert per_read.before_trip + per_read.after == one_by_one.before_trip + one_by_one.after
        if one_by_one.trip is not None:  # a block leaves after the same frames
            assert per_read.before_trip == one_by_one.before_trip
        assert [t.decision for t in per_read.redactions] == [t.decision for t in one_by_one.redactions]


def test_the_expected_verdicts_hold() -> None:
    """The texts above do what their names say (so the comparison above compares trips)."""
    rng = random.Random(7)
    verdicts = {name: feed(cut(text, rng), None) for name, text in TEXTS.items()}
    assert verdicts["clean"].trip is None and not verdicts["clean"].redactions
    for name, gid in (("credential", "secrets"), ("credential early", "secrets"), ("prompt leak", "canary"),
                      ("deny pattern", "deny"), ("email then credential", "secrets"), ("invisible", "hidden")):
        trip = verdicts[name].trip
        assert trip is not None and trip.guardrail_id == gid, name
    assert verdicts["emails redacted"].trip is None and len(verdicts["emails redacted"].redactions) == 2
    assert any(raw.startswith(b"R:") for raw in verdicts["emails redacted"].before_trip + verdicts["emails redacted"].after)


def test_a_block_late_in_one_read_lets_out_what_came_before_it_in_that_read() -> None:
    frames = cut(TEXTS["credential"], random.Random(3))
    whole_read = feed(frames, [len(frames)])
    assert whole_read.trip is not None and len(whole_read.before_trip) > 20
    assert b"".join(whole_read.before_trip) == b"".join(feed(frames, None).before_trip)


class Counting(DeltaCheck):
    __slots__ = ("calls",)

    def __init__(self) -> None:
        self.calls = 0

    def check(self, accumulated: str, delta: str) -> Decision:
        self.calls += 1
        return PASS

    def horizon(self, accumulated: str) -> int:
        return len(accumulated)


class CountingProvider:
    id = "count"

    def __init__(self) -> None:
        self.armed: list[Counting] = []

    def arm(self, ctx: StreamContext) -> DeltaCheck | None:
        self.armed.append(Counting())
        return self.armed[-1]


def test_the_checks_run_once_per_run_of_a_read_not_once_per_delta() -> None:
    provider = CountingProvider()
    providers: list[StreamGuardrail] = [provider]
    g = ChoiceGuard(lambda _channel: ArmedSet.arm(providers, StreamContext(system_prompt="")), holdback=0)
    frames = cut(PROSE * 20, random.Random(1))  # about 3,500 characters in one read
    i, sent = 0, 0
    while i < len(frames):
        step, i = g.push_from(frames, i)
        sent += len(step.send)
    assert sent == len(frames)  # nothing to hold: every frame went out as it came
    runs = -(-len(PROSE * 20) // CHECK_CHUNK)
    assert provider.armed[0].calls <= runs + 1 < len(frames) // 50


def test_a_clean_read_goes_out_but_for_its_last_few_characters() -> None:
    """A run is not held back whole until the next read: each check's horizon lies inside it (the
    canary's letters-only view maps its chain back into a long delta)."""
    for seed in range(5):
        frames = cut(PROSE * 3, random.Random(seed))
        g, i, sent = guard(), 0, 0
        while i < len(frames):
            step, i = g.push_from(frames, i)
            sent += sum(len(f.events[0].text) for f in step.send)  # type: ignore[attr-defined]
        assert len(PROSE * 3) - sent <= 16
