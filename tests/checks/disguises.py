"""What the disguised-match tests share: the guardrails they arm (``secrets``, a ``regex`` deny list,
``pii`` redacting), texts of matches among prose, invisible characters inserted anywhere, and drivers
that run a text through the streamed guard, the whole-answer check and the tool-argument check and
report what each did (``test_disguised_checks``, ``test_invisible_checks``, ``test_lookalike_checks``).
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from hypothesis import strategies as st

from config.policy import PiiGuardrail, RegexGuardrail, SecretsGuardrail, StreamGuardrailSpec
from guardrails.datamodel import (
    Event,
    Finish,
    Frame,
    TextDelta,
    ToolCallArgsDelta,
    ToolCallEnd,
    ToolCallStart,
)
from guardrails.decision import Redact
from guardrails.seams import StreamContext
from guardrails.stream import ArmedSet, Trip, build_stream_guardrails, passes_complete
from guardrails.text.confusables import shape_table
from guardrails.text.invisible import INVISIBLE
from proxy.core.stream_guard import StreamGuard
from proxy.core.whole_answer import check_whole_answer
from tests.secret_samples import TEMPLATES, fill

SPECS: list[StreamGuardrailSpec] = [
    SecretsGuardrail(id="secrets", kind="secrets"),
    RegexGuardrail(id="deny", kind="regex", patterns=[r"project\s+nightingale", r"codename falcon"], flags=["i"]),
    PiiGuardrail(id="pii", kind="pii", action="redact"),
]
PROVIDERS = build_stream_guardrails(SPECS, "[x]")
TOOL_PROVIDERS = build_stream_guardrails(SPECS[:2], "[x]")
CTX = StreamContext(system_prompt="")
MARKS = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", "\u200e", "\u202e", "\u2066", "\u034f",
         "\ufe0f", "\U000e0041", "\u180e", "\u2064", "\U000e007f", "\u061c", "\ufff9", "\ufffa", "\ufffb"]
DENY = ["Project Nightingale", "project  nightingale", "codename Falcon"]
PII = ["alice.smith@corp-mail.co.uk", "jane.doe@corp-mail.net", "4111 1111 1111 1111", "5500-0000-0000-0004",
       "+44 20 7946 0958", "DE89 3704 0044 0532 0130 00"]
PROSE = ["Here it is: ", " and that is all. ", "naïve café ", "你好，世界。", "\n", " ", "Key: ", "(", ") ",
         "version 1.2.3 ", "mail me ", "😀 "]
RUSSIAN = ("Привет! Сегодня в Москве солнечно, около 12 градусов. Встреча в 15:30 у метро, "
           "комната 4б, телефон знаете. Скоро обсудим проект и бюджет на 2025 год. ")
GREEK = ("Καλημέρα σας. Ο καιρός στην Αθήνα είναι καλός σήμερα, περίπου 18 βαθμοί. Η συνάντηση "
         "είναι στις 10:00, αίθουσα Β2, και θα μιλήσουμε για το έργο του Μαΐου. ")


@st.composite
def texts(draw: st.DrawFn, pii: Sequence[str], prose: Sequence[str]) -> str:
    """Catalog secrets (``tests.secret_samples``), personal data from ``pii`` and deny phrases, each
    followed by a piece of ``prose``."""
    parts: list[str] = []
    for _ in range(draw(st.integers(1, 5))):
        kind = draw(st.integers(0, 3))
        if kind == 0:
            template = draw(st.sampled_from(sorted(TEMPLATES)))
            parts.append(fill(TEMPLATES[template], random.Random(draw(st.integers(0, 2**16)))))
        elif kind == 1:
            parts.append(draw(st.sampled_from(pii)))
        elif kind == 2:
            parts.append(draw(st.sampled_from(DENY)))
        parts.append(draw(st.sampled_from(prose)))
    return "".join(parts)


CLEAN_TEXT = texts(PII, PROSE)
"""Matches among ASCII and a little other prose (the invisible-character tests' text)."""
PLAIN_TEXT = texts([*PII, "+1 415 555 2671", "GB82 WEST 1234 5698 7654 32"], [*PROSE, RUSSIAN, GREEK])
"""Matches, also a US phone and a British IBAN, among prose that has Russian and Greek paragraphs
(letters that look like Latin ones: the look-alike tests' text)."""


@st.composite
def with_marks(draw: st.DrawFn, deltas: list[str]) -> tuple[list[str], list[int]]:
    """The deltas with invisible characters inserted (inside them and as deltas of their own), and the
    clean delta each one belongs to (a delta of marks alone belongs to the one before it)."""
    density = draw(st.sampled_from([0.05, 0.3, 1.0]))
    rng = random.Random(draw(st.integers(0, 2**32)))
    out: list[str] = []
    owner: list[int] = []
    for index, delta in enumerate(deltas):
        if rng.random() < density / 4:
            out.append("".join(rng.choice(MARKS) for _ in range(rng.randint(1, 3))))
            owner.append(max(0, index - 1))
        dirty = "".join(ch + (rng.choice(MARKS) * rng.randint(1, 2) if rng.random() < density else "")
                        for ch in delta)
        if rng.random() < density / 2:
            dirty = rng.choice(MARKS) + dirty
        out.append(dirty)
        owner.append(index)
    return out, owner


def _lookalikes() -> dict[str, list[str]]:
    """Each ASCII character with the characters that read as it (the table's keys, less the few
    that are invisible too: they are dropped, not read)."""
    alikes: dict[str, list[str]] = {}
    for code, ascii_char in sorted(shape_table().items()):
        if code not in INVISIBLE:
            alikes.setdefault(ascii_char, []).append(chr(code))
    return alikes


LOOKALIKES = _lookalikes()
COMMON = {"a": "аɑα", "A": "АΑᎪ", "c": "сϲ", "C": "СϹ", "e": "еҽ", "E": "ЕΕ", "o": "оοօ", "O": "ОΟ", "p": "рρ",
          "P": "РΡ", "x": "хχ", "X": "ХΧ", "y": "уү", "i": "іι", "I": "ІΙӀ", "K": "КΚ", "M": "МΜ", "H": "НΗ",
          "T": "ТΤ", "B": "ВΒ", "s": "ѕ", "j": "ј", "N": "Ν", "0": "０", "1": "１", "4": "４", "@": "＠", ".": "．"}
"""The look-alikes a model writes most (Cyrillic, Greek, Armenian, Cherokee, full-width), drawn more often."""


@st.composite
def with_lookalikes(draw: st.DrawFn, deltas: list[str]) -> list[str]:
    """The deltas with look-alikes substituted anywhere (one character for one: the same cuts)."""
    density = draw(st.sampled_from([0.05, 0.3, 1.0]))
    rng = random.Random(draw(st.integers(0, 2**32)))
    def swap(ch: str) -> str:
        if ch not in LOOKALIKES or rng.random() >= density:
            return ch
        return rng.choice(COMMON[ch] if ch in COMMON and rng.random() < 0.7 else LOOKALIKES[ch])
    return ["".join(map(swap, delta)) for delta in deltas]


def drive(deltas: Sequence[str]) -> tuple[int | None, Trip | None, list[str], str, list[Redact], str]:
    """(index of the delta that tripped, the trip, the deltas wholly sent, text sent, redactions, text)."""
    guard = StreamGuard(ArmedSet.arm(PROVIDERS, CTX), holdback=0, retext=lambda _f, t: t.encode())
    sent_frames = 0
    released = ""
    at: int | None = None
    trip: Trip | None = None
    for i, delta in enumerate(deltas):
        step = guard.push(Frame(delta.encode(), (TextDelta(delta),)))
        if step.trip is not None:
            at, trip = i, step.trip
            break
        sent_frames += len(step.send)
        released += "".join(f.text for f in step.send)
    else:
        step = guard.end()
        if step.trip is not None:
            at, trip = len(deltas), step.trip
        else:
            out = guard.release_all()
            sent_frames += len(out)
            released += "".join(f.text for f in out)
    redactions = [t.decision for t in guard.redaction_log if isinstance(t.decision, Redact)]
    return at, trip, list(deltas[:sent_frames]), released, redactions, guard.text


def matched(text: str, redactions: Sequence[Redact]) -> list[str]:
    return [text[r.start:r.end] for r in redactions]


def held(deltas: Sequence[str], sent: int, upto: int) -> list[str]:
    """The deltas from the first one not sent through the one that tripped."""
    return list(deltas[sent:upto + 1])


def whole(text: str) -> tuple[tuple[str, str] | None, list[str], list[str]]:
    """A whole (unary) answer's verdict: the trip, the redacted matches (raw) and their masks. Every
    redaction starts and ends on a visible character."""
    events: tuple[Event, ...] = (TextDelta(text), Finish("stop"))
    verdict = check_whole_answer(events, lambda _channel: ArmedSet.arm(PROVIDERS, CTX),
                                 lambda: ArmedSet.arm(TOOL_PROVIDERS, CTX), frozenset(),
                                 passes=lambda _channel, pieces: passes_complete(PROVIDERS, CTX, pieces))
    assert verdict is not None
    trip = verdict.trip and (verdict.trip.guardrail_id, verdict.trip.decision.reason_code)
    redactions = [t.decision for t in verdict.redactions if isinstance(t.decision, Redact)]
    for r in redactions:
        assert ord(text[r.start]) not in INVISIBLE and ord(text[r.end - 1]) not in INVISIBLE
    return trip, matched(text, redactions), [r.mask for r in redactions]


def tool_trip(arguments: str) -> tuple[str, str] | None:
    """The trip (guardrail, reason code) of a ``Write`` tool call with these JSON arguments, if any."""
    guard = StreamGuard(ArmedSet.arm(TOOL_PROVIDERS, CTX), holdback=0,
                        rearm=lambda _call=None: ArmedSet.arm(TOOL_PROVIDERS, CTX))
    guard.push(Frame(b"", (ToolCallStart("0", "c1", "Write"), ToolCallArgsDelta("0", arguments), ToolCallEnd("0"))))
    trip = guard.end().trip
    return trip and (trip.guardrail_id, trip.decision.reason_code)
