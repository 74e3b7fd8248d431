"""A disguised credential, email, phone, card, IBAN or deny phrase gets the verdict the plain one gets.

Two disguises a model produces for free, and both at once: invisible characters anywhere (Unicode's
Default_Ignorable_Code_Point characters, which no client renders) and look-alike letters (Cyrillic
``а``, Greek ``ο``, full-width digits: each read as the ASCII character it imitates). ``ArmedSet``
hands the ``secrets``, ``pii`` and ``regex`` checks the text as a reader reads it and maps what they
report back to the raw text.

Differential property (hypothesis): a text of catalog secrets (``tests.secret_samples``), personal
data and deny phrases among prose, split into random deltas (one character, small, token-sized), and
the same deltas disguised (or the disguised text's UTF-8 cut at random bytes, inside a disguising
character too, and decoded incrementally), go through the guard: it blocks at the same delta with the
same guardrail, or redacts the same matches; what it released reads as the plain guard's release (no
character of a match), and the text it still held blocks afresh; a redaction's span runs from the
match's first visible character to its last, over every raw disguising character inside it. The same
holds for a whole answer and its whole-text fast path.
"""

from __future__ import annotations

import codecs
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from guardrails.stream import passes_complete
from guardrails.text.invisible import INVISIBLE, as_read, drop_invisible
from tests.checks.disguises import (
    CLEAN_TEXT,
    CTX,
    PLAIN_TEXT,
    PROVIDERS,
    drive,
    held,
    matched,
    whole,
    with_lookalikes,
    with_marks,
)
from tests.stream_support import blocks_afresh, split_deltas

Disguised = st.SearchStrategy[tuple[list[str], list[int]]]


@dataclass(frozen=True)
class Disguise:
    text: st.SearchStrategy[str]
    """The plain texts drawn."""
    disguise: Callable[[list[str]], Disguised]
    """The deltas disguised, and the plain delta each disguised one belongs to."""
    read: Callable[[str], str]
    """What a reader makes of a text; the plain texts read as they are (no invisible character in
    them; look-alikes, in the Russian and Greek prose, read as the letters they imitate)."""


def _same_cuts(deltas: list[str]) -> Disguised:
    return with_lookalikes(deltas).map(lambda out: (out, list(range(len(out)))))


DISGUISES = {
    "invisible": Disguise(CLEAN_TEXT, with_marks, drop_invisible),
    "lookalike": Disguise(PLAIN_TEXT, _same_cuts, as_read),
    "lookalike and invisible": Disguise(PLAIN_TEXT, lambda deltas: with_lookalikes(deltas).flatmap(with_marks), as_read),
}


def _agrees(d: Disguise, plain: list[str], disguised: list[str], owner: list[int]) -> None:
    """The guard over ``disguised`` (``plain`` disguised; ``owner``: the plain delta each disguised
    one belongs to) does what it does over ``plain`` and releases nothing of a match."""
    at_c, trip_c, _, released_c, redactions_c, text_c = drive(plain)
    at_d, trip_d, sent_d, released_d, redactions_d, text_d = drive(disguised)
    # The text the guard read; a delta over ``CHECK_CHUNK`` is read in pieces and a trip stops it at
    # the piece that tripped, which the disguise can make an earlier one than in the plain delta.
    assert d.read(text_d) == d.read(text_c) or trip_d is not None and d.read(text_c).startswith(d.read(text_d))
    # The same verdict, at the same delta of the plain text, by the same guardrail.
    assert (trip_c and (trip_c.guardrail_id, trip_c.decision.reason_code)) == (
        trip_d and (trip_d.guardrail_id, trip_d.decision.reason_code))
    if trip_d is not None:
        assert at_c == (len(plain) if at_d == len(disguised) else owner[at_d])  # type: ignore[index]
        # Nothing of the match went out: the text still held blocks afresh.
        assert blocks_afresh([p for p in PROVIDERS if p.id == trip_d.guardrail_id], CTX,
                             held(disguised, len(sent_d), at_d or 0)), (sent_d, disguised)
        return
    # The same matches redacted, each span from the match's first visible character to its last.
    assert [d.read(m) for m in matched(text_d, redactions_d)] == [d.read(m) for m in matched(text_c, redactions_c)]
    assert [r.mask for r in redactions_d] == [r.mask for r in redactions_c]
    for r in redactions_d:
        assert ord(text_d[r.start]) not in INVISIBLE and ord(text_d[r.end - 1]) not in INVISIBLE
    # The client got the plain guard's text, as read: no character of a match.
    assert d.read(released_d) == d.read(released_c)


@pytest.mark.parametrize("disguise", list(DISGUISES))
@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_a_disguise_changes_no_verdict_and_releases_no_match(disguise: str, data: st.DataObject) -> None:
    d = DISGUISES[disguise]
    plain = data.draw(split_deltas(data.draw(d.text)))
    disguised, owner = data.draw(d.disguise(plain))
    _agrees(d, plain, disguised, owner)


@pytest.mark.parametrize("disguise", ["invisible", "lookalike"])
@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_deltas_cut_from_a_disguised_texts_utf8_bytes_change_no_verdict(disguise: str, data: st.DataObject) -> None:
    """The disguised text's UTF-8 cut at random byte offsets (inside a disguising character's two to
    four bytes too) and decoded as an incremental decoder does: a character whose bytes are cut goes
    with the later piece. The plain deltas are the pieces as read (a piece of marks alone reads as an
    empty delta)."""
    d = DISGUISES[disguise]
    disguised, _ = data.draw(d.disguise(list(data.draw(d.text))))
    encoded = "".join(disguised).encode()
    cuts = sorted(set(data.draw(st.lists(st.integers(1, max(1, len(encoded) - 1)), max_size=len(encoded) // 2 + 1))))
    decoder = codecs.getincrementaldecoder("utf-8")()
    pieces = [p for a, b in zip([0, *cuts], [*cuts, len(encoded)], strict=True)
              if (p := decoder.decode(encoded[a:b]))]
    _agrees(d, [d.read(p) for p in pieces], pieces, list(range(len(pieces))))


@pytest.mark.parametrize("disguise", ["invisible", "lookalike"])
@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_a_whole_disguised_answer_gets_the_plain_verdict(disguise: str, data: st.DataObject) -> None:
    d = DISGUISES[disguise]
    text = data.draw(d.text)
    plain = data.draw(split_deltas(text))
    disguised, _ = data.draw(d.disguise(plain))
    (trip_d, matched_d, masks_d), (trip_c, matched_c, masks_c) = whole("".join(disguised)), whole(text)
    assert (trip_d, [d.read(m) for m in matched_d], masks_d) == (trip_c, [d.read(m) for m in matched_c], masks_c)
    # The whole-text forms (the fast path of a whole answer) read what the checks read.
    assert passes_complete(PROVIDERS, CTX, disguised) == passes_complete(PROVIDERS, CTX, plain)
