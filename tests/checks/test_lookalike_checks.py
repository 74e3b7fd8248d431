"""Look-alike letters inside a credential, an email, a phone, a card, an IBAN or a deny phrase hide
nothing.

A reader sees ``аlice@corр.com`` (Cyrillic ``а`` and ``р``) as an address, ``AKIА...`` (Cyrillic
``А``) as an AWS key and ``Prοject Nightingale`` (Greek ``ο``) as the phrase; full-width ``４１１１``
as digits. Before, the ``secrets``, ``pii`` and ``regex`` checks read the raw text and let such a
copy through. Now ``ArmedSet`` hands them the text as a reader reads it (each look-alike as the ASCII
character it imitates, ``guardrails.text.confusables.shape_table``, one character to one) and maps
what they report back to the raw text.

Differential property (hypothesis): a text of catalog secrets, emails, phones, cards, IBANs and deny
phrases among prose (Russian and Greek too), cut into random deltas, and the same deltas with
look-alikes substituted anywhere (and invisible characters added, or the text's UTF-8 cut at random
bytes and decoded incrementally), go through the guard: it blocks at the same delta with the same
guardrail, or redacts the same matches, each span over the raw look-alikes of the match; what it
released reads as the plain guard's release (no character of a match), and the text it still held
blocks afresh. The same for a whole answer and its whole-text fast path.
"""

from __future__ import annotations

import codecs
import json
import random
from collections.abc import Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from guardrails.stream import passes_complete
from guardrails.text.confusables import shape_table
from guardrails.text.invisible import INVISIBLE, as_read, read_table, reads_as_is
from tests.checks.test_invisible_checks import (
    CTX,
    DENY,
    PROVIDERS,
    _drive,
    _held,
    _matched,
    _tool_trip,
    _whole,
    with_marks,
)
from tests.secret_samples import TEMPLATES, fill
from tests.stream_support import blocks_afresh, split_deltas

PII = ["alice.smith@corp-mail.co.uk", "jane.doe@corp-mail.net", "4111 1111 1111 1111", "5500-0000-0000-0004",
       "+44 20 7946 0958", "+1 415 555 2671", "DE89 3704 0044 0532 0130 00", "GB82 WEST 1234 5698 7654 32"]
RUSSIAN = ("Привет! Сегодня в Москве солнечно, около 12 градусов. Встреча в 15:30 у метро, "
           "комната 4б, телефон знаете. Скоро обсудим проект и бюджет на 2025 год. ")
GREEK = ("Καλημέρα σας. Ο καιρός στην Αθήνα είναι καλός σήμερα, περίπου 18 βαθμοί. Η συνάντηση "
         "είναι στις 10:00, αίθουσα Β2, και θα μιλήσουμε για το έργο του Μαΐου. ")
PROSE = ["Here it is: ", " and that is all. ", "naïve café ", "你好，世界。", "\n", " ", "Key: ", "(", ") ",
         "version 1.2.3 ", "mail me ", "😀 ", RUSSIAN, GREEK]


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
def plain_text(draw: st.DrawFn) -> str:
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
def with_lookalikes(draw: st.DrawFn, deltas: list[str]) -> list[str]:
    """The deltas with look-alikes substituted anywhere (one character for one: the same cuts)."""
    density = draw(st.sampled_from([0.05, 0.3, 1.0]))
    rng = random.Random(draw(st.integers(0, 2**32)))
    def swap(ch: str) -> str:
        if ch not in LOOKALIKES or rng.random() >= density:
            return ch
        return rng.choice(COMMON[ch] if ch in COMMON and rng.random() < 0.7 else LOOKALIKES[ch])
    return ["".join(map(swap, delta)) for delta in deltas]


def _agrees(plain: list[str], disguised: list[str], owner: list[int]) -> None:
    """The guard over ``disguised`` (``plain`` with look-alikes and maybe invisible characters;
    ``owner``: the plain delta each disguised one belongs to) does what it does over ``plain`` and
    releases nothing of a match."""
    at_c, trip_c, _, released_c, redactions_c, text_c = _drive(plain)
    at_d, trip_d, sent_d, released_d, redactions_d, text_d = _drive(disguised)
    assert as_read(text_d) == as_read(text_c) or trip_d is not None and as_read(text_c).startswith(as_read(text_d))
    assert (trip_c and (trip_c.guardrail_id, trip_c.decision.reason_code)) == (
        trip_d and (trip_d.guardrail_id, trip_d.decision.reason_code))
    if trip_d is not None:
        assert at_c == (len(plain) if at_d == len(disguised) else owner[at_d])  # type: ignore[index]
        assert blocks_afresh([p for p in PROVIDERS if p.id == trip_d.guardrail_id], CTX,
                             _held(disguised, len(sent_d), at_d or 0)), (sent_d, disguised)
        return
    # The same matches, each span over the raw characters (the look-alikes) of the match.
    assert [as_read(m) for m in _matched(text_d, redactions_d)] == [as_read(m) for m in _matched(text_c, redactions_c)]
    assert [r.mask for r in redactions_d] == [r.mask for r in redactions_c]
    for r in redactions_d:
        assert ord(text_d[r.start]) not in INVISIBLE and ord(text_d[r.end - 1]) not in INVISIBLE
    # The client got the plain guard's text, as read: no character of a match.
    assert as_read(released_d) == as_read(released_c)


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_lookalikes_change_no_verdict_and_release_no_match(data: st.DataObject) -> None:
    plain = data.draw(split_deltas(data.draw(plain_text())))
    _agrees(plain, data.draw(with_lookalikes(plain)), list(range(len(plain))))


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_lookalikes_and_invisible_characters_together(data: st.DataObject) -> None:
    plain = data.draw(split_deltas(data.draw(plain_text())))
    disguised, owner = data.draw(with_marks(data.draw(with_lookalikes(plain))))
    _agrees(plain, disguised, owner)


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_deltas_cut_from_utf8_bytes_with_lookalikes(data: st.DataObject) -> None:
    """The disguised text's UTF-8 cut at random byte offsets (inside a look-alike's two to four bytes)
    and decoded incrementally; the plain deltas are the pieces read as ASCII."""
    disguised = "".join(data.draw(with_lookalikes([data.draw(plain_text())])))
    encoded = disguised.encode()
    cuts = sorted(set(data.draw(st.lists(st.integers(1, max(1, len(encoded) - 1)), max_size=len(encoded) // 2 + 1))))
    decoder = codecs.getincrementaldecoder("utf-8")()
    pieces = [p for a, b in zip([0, *cuts], [*cuts, len(encoded)], strict=True)
              if (p := decoder.decode(encoded[a:b]))]
    _agrees([as_read(p) for p in pieces], pieces, list(range(len(pieces))))


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_a_whole_answer_with_lookalikes_gets_the_plain_verdict(data: st.DataObject) -> None:
    text = data.draw(plain_text())
    plain = data.draw(split_deltas(text))
    disguised = data.draw(with_lookalikes(plain))
    (trip_d, matched_d, masks_d), (trip_c, matched_c, masks_c) = _whole("".join(disguised)), _whole(text)
    assert (trip_d, [as_read(m) for m in matched_d], masks_d) == (trip_c, [as_read(m) for m in matched_c], masks_c)
    assert passes_complete(PROVIDERS, CTX, disguised) == passes_complete(PROVIDERS, CTX, plain)


@settings(max_examples=100, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_tool_arguments_with_lookalikes_get_the_plain_verdict(data: st.DataObject) -> None:
    """Raw in the arguments' JSON: the plain verdict. Escaped (``\\u0430``), the raw JSON shows the
    escapes, which end a match there (or break it); the tool gets the decoded string, so what the
    plain arguments block is blocked still."""
    text = data.draw(plain_text())
    disguised = "".join(data.draw(with_lookalikes(data.draw(split_deltas(text)))))
    def args(content: str, escaped: bool = False) -> str:
        return json.dumps({"path": "notes.txt", "content": content}, ensure_ascii=escaped)
    expected = _tool_trip(args(text))
    assert _tool_trip(args(disguised)) == expected
    if expected:
        assert _tool_trip(args(disguised, escaped=True))


KEY = fill(TEMPLATES["aws-access-key-id"], random.Random(7))
CASES = {
    "aws key, Cyrillic А": (KEY.replace("A", "\u0410", 1), "secrets"),
    "aws key, full-width digits": (KEY[:4] + KEY[4:].translate(str.maketrans("0123456789", "０１２３４５６７８９")), "secrets"),
    "github token, Cyrillic р": (fill(TEMPLATES["github-token"], random.Random(3)).replace("p", "\u0440", 1), "secrets"),
    "deny phrase, Greek ο": ("Pr\u03bfject Nightingale", "deny"),
    "deny phrase, Cyrillic а е": ("codename F\u0430lcon".replace("e", "\u0435"), "deny"),
}
REDACTED = {
    "email, Cyrillic а р": ("\u0430lice.smith@cor\u0440-mail.co.uk", "[email]"),
    "phone, Unicode hyphens": ("+1 415\u2010555\u20112671", "[phone]"),
    "card, full-width": ("４１１１ １１１１ １１１１ １１１１", "[card]"),
    "iban, Cyrillic Е В": ("D\u041589 3704 0044 0532 0130 00", "[iban]"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_each_kind_of_match_in_lookalikes_is_blocked(case: str) -> None:
    value, guardrail = CASES[case]
    for deltas in ([f"The value is {value}. Done."], list(f"The value is {value}. Done.")):
        _, trip, _, released, _, _ = _drive(deltas)
        assert trip is not None and trip.guardrail_id == guardrail
        assert as_read(value)[:3] not in as_read(released)
    assert not passes_complete(PROVIDERS, CTX, [value])


@pytest.mark.parametrize("case", list(REDACTED))
def test_each_kind_of_personal_data_in_lookalikes_is_redacted_whole(case: str) -> None:
    value, mask = REDACTED[case]
    for deltas in ([f"Use {value} now."], list(f"Use {value} now.")):
        _, trip, _, released, redactions, text = _drive(deltas)
        assert trip is None and [r.mask for r in redactions] == [mask]
        assert text[redactions[0].start:redactions[0].end] == value  # the raw look-alikes went with it
        assert released == f"Use {mask} now."


def _quiet(pieces: Sequence[str]) -> bool:
    """No trip and no redaction, streamed in ``pieces`` and as a whole."""
    _, trip, _, _, redactions, _ = _drive(list(pieces))
    return trip is None and not redactions and passes_complete(PROVIDERS, CTX, ["".join(pieces)])


def test_russian_and_greek_prose_trips_nothing() -> None:
    """Cyrillic and Greek read as Latin letters where they look alike (``б`` as ``6``, ``З`` as
    ``3``): ordinary prose, with its numbers, times and dates, is still neither a secret, nor
    personal data, nor a deny phrase."""
    prose = [RUSSIAN, GREEK,
             "Номер заказа 2024-11-05, сумма 1 250 руб., код подтверждения отправлен. Звоните завтра. ",
             "Ключ от квартиры у соседа, пароль от Wi-Fi на холодильнике, токен не нужен. ",
             "Το κλειδί είναι στο γραφείο. Ο κωδικός πρόσβασης αλλάζει κάθε μήνα (ΑΦΜ δεν χρειάζεται). ",
             "Вот пример: аккаунт ВКонтакте, почта на Яндексе, сервер в облаке, ТОКЕН_ДОСТУПА = ещё не выдан. ",
             "ΑΒΓΔΕΖΗΘ ΙΚΛΜΝΞΟΠ ΡΣΤΥΦΧΨΩ αβγδεζηθ ικλμνξοπ ρστυφχψω. АБВГДЕЁЖЗ ИЙКЛМНОП РСТУФХЦЧШЩ. "]
    for text in prose:
        for pieces in ([text], list(text), [text[i:i + 4] for i in range(0, len(text), 4)]):
            assert _quiet(pieces), (text, pieces[:3])


def test_the_search_finds_exactly_the_characters_that_read_otherwise() -> None:
    """``reads_as_is`` is False for every character the reading table changes (a look-alike or an
    invisible one, in the BMP or beyond) and True for their neighbours that it leaves alone."""
    table = read_table()
    assert not any(reads_as_is(chr(code)) for code in table)
    neighbours = {code + d for code in table for d in (-1, 1)} - set(table)
    assert all(reads_as_is(chr(code)) for code in neighbours if not 0xD800 <= code <= 0xDFFF)
    assert reads_as_is("naïve café 你好 😀") and not reads_as_is("😀 \u0430") and not reads_as_is("\U0001d400")
