"""Look-alike letters inside a credential, an email, a phone, a card, an IBAN or a deny phrase hide
nothing.

A reader sees ``аlice@corр.com`` (Cyrillic ``а`` and ``р``) as an address, ``AKIА...`` (Cyrillic
``А``) as an AWS key and ``Prοject Nightingale`` (Greek ``ο``) as the phrase; full-width ``４１１１``
as digits. Before, the ``secrets``, ``pii`` and ``regex`` checks read the raw text and let such a
copy through. Now ``ArmedSet`` hands them the text as a reader reads it (each look-alike as the ASCII
character it imitates, ``guardrails.text.confusables.shape_table``, one character to one) and maps
what they report back to the raw text.

The differential property over random texts, streamed, whole and cut from UTF-8 bytes, with
look-alikes and with invisible characters too, is ``test_disguised_checks``'s; here: tool-call
arguments (raw and escaped in their JSON), each kind of match, Russian and Greek prose, and the
search that tells a text holds a character to read otherwise.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from guardrails.stream import passes_complete
from guardrails.text.invisible import as_read, read_table, reads_as_is
from tests.checks.disguises import (
    CTX,
    GREEK,
    PLAIN_TEXT,
    PROVIDERS,
    RUSSIAN,
    drive,
    tool_trip,
    with_lookalikes,
)
from tests.secret_samples import TEMPLATES, fill
from tests.stream_support import split_deltas


@settings(max_examples=100, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_tool_arguments_with_lookalikes_get_the_plain_verdict(data: st.DataObject) -> None:
    """Raw in the arguments' JSON: the plain verdict. Escaped (``\\u0430``), the raw JSON shows the
    escapes, which end a match there (or break it); the tool gets the decoded string, so what the
    plain arguments block is blocked still."""
    text = data.draw(PLAIN_TEXT)
    disguised = "".join(data.draw(with_lookalikes(data.draw(split_deltas(text)))))
    def args(content: str, escaped: bool = False) -> str:
        return json.dumps({"path": "notes.txt", "content": content}, ensure_ascii=escaped)
    expected = tool_trip(args(text))
    assert tool_trip(args(disguised)) == expected
    if expected:
        assert tool_trip(args(disguised, escaped=True))


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
        _, trip, _, released, _, _ = drive(deltas)
        assert trip is not None and trip.guardrail_id == guardrail
        assert as_read(value)[:3] not in as_read(released)
    assert not passes_complete(PROVIDERS, CTX, [value])


@pytest.mark.parametrize("case", list(REDACTED))
def test_each_kind_of_personal_data_in_lookalikes_is_redacted_whole(case: str) -> None:
    value, mask = REDACTED[case]
    for deltas in ([f"Use {value} now."], list(f"Use {value} now.")):
        _, trip, _, released, redactions, text = drive(deltas)
        assert trip is None and [r.mask for r in redactions] == [mask]
        assert text[redactions[0].start:redactions[0].end] == value  # the raw look-alikes went with it
        assert released == f"Use {mask} now."


def _quiet(pieces: Sequence[str]) -> bool:
    """No trip and no redaction, streamed in ``pieces`` and as a whole."""
    _, trip, _, _, redactions, _ = drive(list(pieces))
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
