"""Invisible characters inside a credential, an email, a card or a deny phrase hide nothing.

A client renders none of Unicode's Default_Ignorable_Code_Point characters, so ``AKIA`` + U+200B + the
rest of a key shows as the key. Before, the ``secrets``, ``pii`` and ``regex`` checks read the raw
text and let such a copy through, streamed, whole or in tool arguments. Now ``ArmedSet`` hands them
the text as a reader sees it and maps what they report back to the raw text.

Differential property (hypothesis): a text of secrets from the catalog (``tests.secret_samples``),
emails, cards, phones and deny phrases among prose, split into random deltas (one character, small,
token-sized), and the same deltas with invisible characters inserted anywhere, within deltas and as
deltas of their own (or the marked text's UTF-8 cut at random bytes, inside the marks too, and
decoded incrementally), go through the guard: it blocks at the same delta with the same guardrail, or
redacts the same matches; no visible character of a match is ever in what it released (the text it
still held blocks afresh; the released text, invisible characters dropped, is the clean guard's);
a redaction's span runs from the match's first visible character to its last, every invisible one
inside it. The same holds for a whole answer and for tool-call arguments.
"""

from __future__ import annotations

import codecs
import json
import random
import unicodedata
from collections.abc import Sequence

import pytest
from hypothesis import HealthCheck, given, settings
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
from guardrails.text.invisible import INVISIBLE, INVISIBLE_RUN, drop_invisible, shows_as_is
from proxy.core.stream_guard import StreamGuard
from proxy.core.whole_answer import check_whole_answer
from tests.secret_samples import TEMPLATES, fill
from tests.stream_support import blocks_afresh, split_deltas

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
PII = ["alice.smith@corp-mail.co.uk", "jane.doe@corp-mail.net", "4111 1111 1111 1111", "5500-0000-0000-0004",
       "+44 20 7946 0958", "DE89 3704 0044 0532 0130 00"]
DENY = ["Project Nightingale", "project  nightingale", "codename Falcon"]
PROSE = ["Here it is: ", " and that is all. ", "naïve café ", "你好，世界。", "\n", " ", "Key: ", "(", ") ",
         "version 1.2.3 ", "mail me ", "😀 "]


def test_the_set_is_one_definition_shared_with_the_canary() -> None:
    from guardrails.stream import _canary_text  # the canary's normalise
    assert _canary_text.INVISIBLE is INVISIBLE
    assert drop_invisible("a\u200bb\u00adc\U000e0041d\ufe0f") == "abcd"
    assert drop_invisible("plain") == "plain"
    # The search that tells a delta carries one finds exactly the characters the table drops.
    assert all(INVISIBLE_RUN.fullmatch(chr(cp)) for cp in INVISIBLE)
    neighbours = {cp + d for cp in INVISIBLE for d in (-1, 1)} - set(INVISIBLE)
    assert not any(INVISIBLE_RUN.search(chr(cp)) for cp in neighbours)
    assert all(shows_as_is(chr(cp)) for cp in neighbours) and not shows_as_is("a\u200bb")


VISIBLE_FORMAT = {*range(0x0600, 0x0606), 0x06DD, 0x070F, 0x0890, 0x0891, 0x08E2, 0x110BD, 0x110CD,
                  *range(0x13430, 0x13440)}
"""The format (Cf) characters a client draws: Prepended_Concatenation_Mark=Yes (signs over the digits
that follow) and the Egyptian hieroglyph format controls."""


def test_every_other_format_character_is_one_a_client_draws() -> None:
    """General_Category Cf outside the set: only the visible ones (the interlinear annotation
    characters U+FFF9-U+FFFB, not Default_Ignorable but drawn as nothing, are in it)."""
    outside = {cp for cp in range(0x110000) if unicodedata.category(chr(cp)) == "Cf"} - set(INVISIBLE)
    assert outside <= VISIBLE_FORMAT
    assert {0xFFF9, 0xFFFA, 0xFFFB} <= set(INVISIBLE)


@st.composite
def clean_text(draw: st.DrawFn) -> str:
    parts: list[str] = []
    for _ in range(draw(st.integers(1, 5))):
        kind = draw(st.integers(0, 3))
        if kind == 0:
            template = draw(st.sampled_from(sorted(TEMPLATES)))
            parts.append(fill(TEMPLATES[template], random.Random(draw(st.integers(0, 2**16)))))
        elif kind == 1:
            parts.append(draw(st.sampled_from(PII)))
        elif kind == 2:
            parts.append(draw(st.sampled_from(DENY)))
        parts.append(draw(st.sampled_from(PROSE)))
    return "".join(parts)


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


def _drive(deltas: Sequence[str]) -> tuple[int | None, Trip | None, list[str], str, list[Redact], str]:
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


def _matched(text: str, redactions: Sequence[Redact]) -> list[str]:
    return [text[r.start:r.end] for r in redactions]


def _held(deltas: Sequence[str], sent: int, upto: int) -> list[str]:
    """The deltas from the first one not sent through the one that tripped."""
    return list(deltas[sent:upto + 1])


@st.composite
def utf8_split(draw: st.DrawFn, deltas: list[str]) -> list[str]:
    """The marked text's UTF-8 cut at random byte offsets (inside a mark's three or four bytes too) and
    decoded as an incremental decoder does: a character whose bytes are cut goes with the later piece."""
    marked, _ = draw(with_marks(deltas))
    data = "".join(marked).encode()
    cuts = sorted(set(draw(st.lists(st.integers(1, max(1, len(data) - 1)), max_size=len(data) // 2 + 1))))
    decoder = codecs.getincrementaldecoder("utf-8")()
    pieces = [decoder.decode(data[a:b]) for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]
    return [p for p in pieces if p]


def _agrees(clean: list[str], dirty: list[str], owner: list[int]) -> None:
    """The guard over ``dirty`` (``clean`` with invisible characters, ``owner``: the clean delta each
    dirty one belongs to) does what it does over ``clean`` and releases nothing of a match."""
    at_c, trip_c, _, released_c, redactions_c, text_c = _drive(clean)
    at_d, trip_d, sent_d, released_d, redactions_d, text_d = _drive(dirty)
    # The text the guard read; a delta over ``CHECK_CHUNK`` is read in pieces and a trip stops it at
    # the piece that tripped, which the marks can make an earlier one than in the clean delta.
    assert drop_invisible(text_d) == text_c or trip_d is not None and text_c.startswith(drop_invisible(text_d))
    # The same verdict, at the same delta of the clean text, by the same guardrail.
    assert (trip_c and (trip_c.guardrail_id, trip_c.decision.reason_code)) == (
        trip_d and (trip_d.guardrail_id, trip_d.decision.reason_code))
    if trip_d is not None:
        assert at_c == (len(clean) if at_d == len(dirty) else owner[at_d])  # type: ignore[index]
        # Nothing of the match went out: the text still held blocks afresh.
        assert blocks_afresh([p for p in PROVIDERS if p.id == trip_d.guardrail_id], CTX,
                             _held(dirty, len(sent_d), at_d or 0)), (sent_d, dirty)
        return
    # The same matches redacted, each span from the match's first visible character to its last.
    assert [drop_invisible(m) for m in _matched(text_d, redactions_d)] == _matched(text_c, redactions_c)
    assert [r.mask for r in redactions_d] == [r.mask for r in redactions_c]
    for r in redactions_d:
        assert ord(text_d[r.start]) not in INVISIBLE and ord(text_d[r.end - 1]) not in INVISIBLE
    # The client got the clean guard's text, invisible characters aside: no character of a match.
    assert drop_invisible(released_d) == released_c


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_invisible_characters_change_no_verdict_and_release_no_match(data: st.DataObject) -> None:
    text = data.draw(clean_text())
    clean = data.draw(split_deltas(text))
    dirty, owner = data.draw(with_marks(clean))
    _agrees(clean, dirty, owner)


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_deltas_cut_from_utf8_bytes_change_no_verdict_and_release_no_match(data: st.DataObject) -> None:
    """Deltas cut from the marked text's bytes; the clean deltas are the same ones without the marks
    (some empty: a delta of marks alone)."""
    dirty = data.draw(utf8_split(list(data.draw(clean_text()))))
    _agrees([drop_invisible(d) for d in dirty], dirty, list(range(len(dirty))))


def _whole(text: str) -> tuple[tuple[str, str] | None, list[str], list[str]]:
    """A whole (unary) answer's verdict: the trip, the redacted matches and their masks."""
    events: tuple[Event, ...] = (TextDelta(text), Finish("stop"))
    verdict = check_whole_answer(events, lambda _channel: ArmedSet.arm(PROVIDERS, CTX),
                                 lambda: ArmedSet.arm(TOOL_PROVIDERS, CTX), frozenset(),
                                 passes=lambda _channel, pieces: passes_complete(PROVIDERS, CTX, pieces))
    assert verdict is not None
    trip = verdict.trip and (verdict.trip.guardrail_id, verdict.trip.decision.reason_code)
    redactions = [t.decision for t in verdict.redactions if isinstance(t.decision, Redact)]
    for r in redactions:
        assert ord(text[r.start]) not in INVISIBLE and ord(text[r.end - 1]) not in INVISIBLE
    return trip, [drop_invisible(m) for m in _matched(text, redactions)], [r.mask for r in redactions]


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_a_whole_answer_with_invisible_characters_gets_the_clean_verdict(data: st.DataObject) -> None:
    text = data.draw(clean_text())
    clean = data.draw(split_deltas(text))
    dirty, _ = data.draw(with_marks(clean))
    assert _whole("".join(dirty)) == _whole(text)
    # The whole-text forms (the fast path of a whole answer) read what the checks read.
    assert passes_complete(PROVIDERS, CTX, dirty) == passes_complete(PROVIDERS, CTX, clean)


def test_emoji_with_variation_selectors_and_joiners_keep_the_whole_text_fast_path() -> None:
    """Models write emoji with U+FE0F and U+200D (invisible characters too): such an answer with
    nothing in it passes the whole-text forms, as the same answer without them does."""
    text = "Done \u2764\ufe0f \U0001f468\u200d\U0001f469\u200d\U0001f467 \u2714\ufe0f, see you."
    assert passes_complete(PROVIDERS, CTX, [text])
    assert not passes_complete(PROVIDERS, CTX, ["Done \u2764\ufe0f mail al\u200dice@corp-mail.io"])


def _tool_trip(arguments: str) -> tuple[str, str] | None:
    guard = StreamGuard(ArmedSet.arm(TOOL_PROVIDERS, CTX), holdback=0,
                        rearm=lambda _call=None: ArmedSet.arm(TOOL_PROVIDERS, CTX))
    guard.push(Frame(b"", (ToolCallStart("0", "c1", "Write"), ToolCallArgsDelta("0", arguments), ToolCallEnd("0"))))
    trip = guard.end().trip
    return trip and (trip.guardrail_id, trip.decision.reason_code)


@settings(max_examples=100, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(st.data(), st.booleans())
def test_tool_arguments_with_invisible_characters_get_the_clean_verdict(data: st.DataObject, escaped: bool) -> None:
    """Raw in the arguments' JSON, or escaped (``\\u200b``): the tool gets the decoded string. (Escaped,
    the raw JSON, checked first, shows the escapes: a match they break there is found in the decoded
    strings, after another guardrail may have blocked the raw JSON; so only whether it blocks is
    compared.)"""
    text = data.draw(clean_text())
    dirty, _ = data.draw(with_marks(data.draw(split_deltas(text))))
    def args(content: str) -> str:
        return json.dumps({"path": "notes.txt", "content": content}, ensure_ascii=escaped)
    found, expected = _tool_trip(args("".join(dirty))), _tool_trip(args(text))
    assert (bool(found) == bool(expected)) if escaped else found == expected


@pytest.mark.parametrize("mark", MARKS)
def test_each_invisible_character_inside_each_kind_of_match(mark: str) -> None:
    key = fill(TEMPLATES["aws-access-key-id"], random.Random(7))
    for value, guardrail in ((key, "secrets"), ("Project Nightingale", "deny")):
        hidden = mark.join(value)
        for deltas in ([f"The value is {hidden}. Done."], list(f"The value is {hidden}. Done.")):
            _, trip, _, released, _, _ = _drive(deltas)
            assert trip is not None and trip.guardrail_id == guardrail
            assert value[:2] not in drop_invisible(released)
        assert not passes_complete(PROVIDERS, CTX, [hidden])
    hidden = mark.join("alice.smith@corp-mail.co.uk")
    for deltas in ([f"Mail {hidden} now."], list(f"Mail {hidden} now.")):
        _, trip, _, released, redactions, _ = _drive(deltas)
        assert trip is None and [r.mask for r in redactions] == ["[email]"]
        assert released == "Mail [email] now."


def test_a_long_stream_of_marks_forgets_old_runs_and_still_maps_a_late_match() -> None:
    """Hundreds of runs of marks before the match: the map keeps only those about the held tail."""
    words = ["word\u200b "] * 400 + ["mail ", "al\u2060ice", ".smith@", "corp\u00ad-mail", ".co.uk", " now."]
    _, trip, _, released, redactions, text = _drive(words)
    assert trip is None and [r.mask for r in redactions] == ["[email]"]
    assert text[redactions[0].start:redactions[0].end] == "al\u2060ice.smith@corp\u00ad-mail.co.uk"
    assert released == "word\u200b " * 400 + "mail [email] now."
    armed, clean = ArmedSet.arm(PROVIDERS, CTX), ArmedSet.arm(PROVIDERS, CTX)
    acc = seen = ""
    for word in words[:400]:
        acc += word
        seen += drop_invisible(word)
        at, expected = armed.check_horizon(acc, word), clean.check_horizon(seen, drop_invisible(word))
        # the clean horizon, in the raw text: the same visible characters before it, and no mark after them
        assert isinstance(at, int) and len(drop_invisible(acc[:at])) == expected and ord(acc[at - 1]) not in INVISIBLE
    assert armed._view is not None and len(armed._view._at) <= 33
