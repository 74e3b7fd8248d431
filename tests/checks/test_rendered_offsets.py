"""The secrets check's markup view (``guardrails.stream._rendered.RenderedText``) asked as the check
asks on every delta: ``raw_horizon`` (one search of the pieces) is ``raw_end`` of the character
before, ``0`` at the start, after any ``forget_before`` the check makes first; and what ``feed``
returns, delta by delta (its shortcut for new text without markup included), adds up to the view.
The drawn texts are ``test_secrets_markup``'s parts, split anywhere.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from guardrails.stream._rendered import RenderedText, render
from tests.checks.test_secrets_markup import PARTS
from tests.stream_support import split_deltas


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([*PARTS, "plain words ", "x" * 70]), max_size=60), st.data())
def test_the_horizon_is_raw_end_of_the_character_before(parts: list[str], data: st.DataObject) -> None:
    text = "".join(parts)
    view, raw, added = RenderedText(), "", ""
    for delta in data.draw(split_deltas(text)):
        raw += delta
        added += view.feed(raw)
        assert added == view.text
        at = data.draw(st.integers(max(0, len(view.text) - 40), len(view.text)))
        view.forget_before(at)  # (as ``SecretsCheck._raw_horizon`` does before it asks)
        for v in range(at, len(view.text) + 1):
            assert view.raw_horizon(v) == (view.raw_end(v - 1) if v > 0 else 0), (v, view.text)
    added += view.feed(raw, final=True)
    assert added == view.text == render(text)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from([*PARTS, "a", " ", "**", "```", "~~~", "x*", "`a`"]), max_size=50), st.data())
def test_a_mark_after_what_no_key_holds_reads_as_the_whole_reading_reads_it(parts: list[str],
                                                                              data: st.DataObject) -> None:
    """``_shown_run`` (a run of marks read as text at once) against the reading without it: the same
    view, the same map of every character, whatever the split."""
    text = "".join(parts)
    deltas = data.draw(split_deltas(text))

    class Whole(RenderedText):
        __slots__ = ()

        def _shown_run(self, raw: str, pos: int) -> int | None:
            return None

    views = []
    for cls in (RenderedText, Whole):
        view, raw = cls(), ""
        for delta in deltas:
            raw += delta
            view.feed(raw)
        view.feed(raw, final=True)
        views.append(view)
    fast, whole = views
    assert fast.text == whole.text
    assert [(fast.raw_start(i), fast.raw_end(i)) for i in range(len(fast.text))] == \
        [(whole.raw_start(i), whole.raw_end(i)) for i in range(len(whole.text))]
