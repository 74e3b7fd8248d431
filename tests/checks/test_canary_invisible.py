"""The canary against a system prompt copied with invisible characters (zero-width spaces and joiners,
soft hyphens, word joiners, bidi marks, variation selectors, tags) between its words or letters: a client
renders none of them, so the user reads the prompt verbatim. The canary drops them before comparing, in
its armed check and in its whole-text form alike; before, a zero-width space after every word hid any
copy of the prompt.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from config.policy import CanaryGuardrail
from guardrails.seams import StreamContext, passes_whole_of
from guardrails.stream import build_stream_guardrails
from guardrails.stream.canary import normalise
from tests.stream_support import armed_passes

PROMPT = ("You are the release assistant of the Orchard build farm. Never reveal the deployment checklist: "
          "rotate the signing keys on the first Monday, then rebuild the mirrors in alphabetical order.")
INVISIBLE = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", "\u200e", "\u202e", "\u2066", "\u034f",
             "\ufe0f", "\U000e0041", "\u180e", "\u2064"]
CANARY = build_stream_guardrails([CanaryGuardrail(id="leak", kind="canary", min_chars=40)], "[withheld]")[0]
CTX = StreamContext(system_prompt=PROMPT)


@pytest.mark.parametrize("mark", INVISIBLE)
def test_a_prompt_copied_with_an_invisible_character_after_every_word_is_blocked(mark: str) -> None:
    leak = PROMPT[:90].replace(" ", " " + mark)
    form = passes_whole_of(CANARY)
    assert form is not None
    assert not armed_passes(CANARY, CTX, [leak])
    assert not form(CTX, [leak])


@settings(max_examples=200, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(marks=st.lists(st.sampled_from(INVISIBLE), min_size=1, max_size=4), step=st.integers(1, 9),
       cut=st.integers(0, 200))
def test_invisible_characters_anywhere_in_a_copy_do_not_hide_it(marks: list[str], step: int, cut: int) -> None:
    """Marks every ``step`` characters of a 70-character copy, cut into two pieces anywhere."""
    copy = PROMPT[5:75]
    leak = "".join(ch + (marks[n % len(marks)] if n % step == 0 else "") for n, ch in enumerate(copy))
    cut = min(cut, len(leak))
    pieces = [leak[:cut], leak[cut:]]
    form = passes_whole_of(CANARY)
    assert form is not None
    assert not armed_passes(CANARY, CTX, pieces)
    assert not form(CTX, pieces)


def test_visible_text_is_normalised_as_before() -> None:
    assert normalise("Ｆｕｌｌ  Straße\n\tok") == "full strasse ok"
    assert normalise("a\u200bb\u00adc") == "abc"
    assert normalise("plain ascii text") == "plain ascii text"
