"""Invisible characters inside a credential, an email, a card or a deny phrase hide nothing.

A client renders none of Unicode's Default_Ignorable_Code_Point characters, so ``AKIA`` + U+200B + the
rest of a key shows as the key. Before, the ``secrets``, ``pii`` and ``regex`` checks read the raw
text and let such a copy through, streamed, whole or in tool arguments. Now ``ArmedSet`` hands them
the text as a reader sees it and maps what they report back to the raw text.

The differential property over random texts, streamed, whole and cut from UTF-8 bytes, is
``test_disguised_checks``'s; here: the set itself, each invisible character inside each kind of
match, tool-call arguments (raw and escaped in their JSON), emoji, and a long stream of marks.
"""

from __future__ import annotations

import json
import random
import unicodedata

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from guardrails.stream import ArmedSet, passes_complete
from guardrails.text.invisible import INVISIBLE, INVISIBLE_RUN, drop_invisible, shows_as_is
from tests.checks.disguises import CLEAN_TEXT, CTX, MARKS, PROVIDERS, drive, tool_trip, with_marks
from tests.secret_samples import TEMPLATES, fill
from tests.stream_support import split_deltas


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


def test_emoji_with_variation_selectors_and_joiners_keep_the_whole_text_fast_path() -> None:
    """Models write emoji with U+FE0F and U+200D (invisible characters too): such an answer with
    nothing in it passes the whole-text forms, as the same answer without them does."""
    text = "Done \u2764\ufe0f \U0001f468\u200d\U0001f469\u200d\U0001f467 \u2714\ufe0f, see you."
    assert passes_complete(PROVIDERS, CTX, [text])
    assert not passes_complete(PROVIDERS, CTX, ["Done \u2764\ufe0f mail al\u200dice@corp-mail.io"])


@settings(max_examples=100, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(st.data(), st.booleans())
def test_tool_arguments_with_invisible_characters_get_the_clean_verdict(data: st.DataObject, escaped: bool) -> None:
    """Raw in the arguments' JSON, or escaped (``\\u200b``): the tool gets the decoded string. (Escaped,
    the raw JSON, checked first, shows the escapes: a match they break there is found in the decoded
    strings, after another guardrail may have blocked the raw JSON; so only whether it blocks is
    compared.)"""
    text = data.draw(CLEAN_TEXT)
    dirty, _ = data.draw(with_marks(data.draw(split_deltas(text))))
    def args(content: str) -> str:
        return json.dumps({"path": "notes.txt", "content": content}, ensure_ascii=escaped)
    found, expected = tool_trip(args("".join(dirty))), tool_trip(args(text))
    assert (bool(found) == bool(expected)) if escaped else found == expected


@pytest.mark.parametrize("mark", MARKS)
def test_each_invisible_character_inside_each_kind_of_match(mark: str) -> None:
    key = fill(TEMPLATES["aws-access-key-id"], random.Random(7))
    for value, guardrail in ((key, "secrets"), ("Project Nightingale", "deny")):
        hidden = mark.join(value)
        for deltas in ([f"The value is {hidden}. Done."], list(f"The value is {hidden}. Done.")):
            _, trip, _, released, _, _ = drive(deltas)
            assert trip is not None and trip.guardrail_id == guardrail
            assert value[:2] not in drop_invisible(released)
        assert not passes_complete(PROVIDERS, CTX, [hidden])
    hidden = mark.join("alice.smith@corp-mail.co.uk")
    for deltas in ([f"Mail {hidden} now."], list(f"Mail {hidden} now.")):
        _, trip, _, released, redactions, _ = drive(deltas)
        assert trip is None and [r.mask for r in redactions] == ["[email]"]
        assert released == "Mail [email] now."


def test_a_long_stream_of_marks_forgets_old_runs_and_still_maps_a_late_match() -> None:
    """Hundreds of runs of marks before the match: the map keeps only those about the held tail."""
    words = ["word\u200b "] * 400 + ["mail ", "al\u2060ice", ".smith@", "corp\u00ad-mail", ".co.uk", " now."]
    _, trip, _, released, redactions, text = drive(words)
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
