"""The view the ``secrets`` check reads (#29 class 4): the text as a Markdown or HTML view shows it
(``guardrails.stream._rendered``). Any split into deltas gives the view the whole text gets, the same
verdict and the same masks; a mask covers the markup inside the key; what may still be markup is held
back, and only that; the reading costs a bounded amount per character whatever the text.
"""

from __future__ import annotations

import random
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import guardrails.stream._rendered as rendered_module
from guardrails.stream._rendered import RUN_MAX, RenderedText, render
from tests.checks.test_secrets_catalog import blocked_category
from tests.checks.test_secrets_redact import masked
from tests.secret_samples import TEMPLATES, fill
from tests.stream_support import split_deltas

GITHUB = fill(TEMPLATES["github-token"], random.Random(4))
AWS = fill(TEMPLATES["aws-access-key-id"], random.Random(4))
DISGUISED = [
    f"Use ghp_**{GITHUB[4:12]}**{GITHUB[12:]} now.",
    f"Use `{AWS[:4]}`{AWS[4:]} now.",
    f"Use &#{ord('g')};hp_{GITHUB[4:]} now.",
    f"Use ghp&lowbar;{GITHUB[4:]} now.",
    f"Use {AWS[:5]}&#x{ord(AWS[5]):X}{AWS[6:]} now.",  # hex without its ';', as an HTML parser reads it
    f"Use {GITHUB[:9]}<span class=\"k\">{GITHUB[9:30]}</span>{GITHUB[30:]} now.",
    f"Use {GITHUB[:20]}<!-- -->{GITHUB[20:30]}&#8203;{GITHUB[30:]} now.",
    f"x {GITHUB[:7]}\\-{GITHUB[7:]}",  # an escape that is no key's: the key stays split
]
BENIGN = [
    "def f(*args, **kwargs):\n    return g(a*b, x**2)  # __init__, __dunder__\n",
    "<p>Tom &amp; Jerry &lt;3 &quot;cats&quot;</p> <b>bold</b> and *emphasis* and `code`.",
    "List<String> names = new ArrayList<>(); Map<K, V> m; if (a<b && c>d) {}",
    "https://httpbin.org/get?key1=value1&amp;key2=value2 and src/**/*.py ~~struck~~ a~b",
    "SELECT * FROM t WHERE a*2 > 3; echo `date`; printf '%s\\n' \"$x\"",
]
PARTS = ["ghp_", "AKIA", "abc", "XY7", "9", "_", "-", ".", " ", "\n", "*", "**", "`", "~~", "~", "<b>", "</b>",
         "<span a=\"1\">", "<!-- c -->", "<", ">", "&", "&#103;", "&#x67", "&lowbar;", "&amp;", "&#8203;", "&shy;",
         "&#", "&#x", "\\_", "\\", "\\\\", ";", "kwargs", "="]


def _fed(text: str, deltas: list[str]) -> RenderedText:
    view, raw = RenderedText(), ""
    for delta in deltas:
        raw += delta
        view.feed(raw)
        assert len(raw) - view.consumed <= RUN_MAX + 1  # what waits is one construct still growing, at most
    view.feed(raw, final=True)
    return view


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(PARTS), max_size=40), st.data())
def test_the_view_is_the_same_whatever_the_split(parts: list[str], data: st.DataObject) -> None:
    text = "".join(parts)
    view = _fed(text, data.draw(split_deltas(text)))
    assert view.text == render(text)
    for i, char in enumerate(view.text):  # each character of the view stands where the map says
        start, end = view.raw_start(i), view.raw_end(i)
        piece = text[start:end]
        assert piece == char or (len(piece) > 1 and piece[0] in "&\\"), (i, char, piece)


@pytest.mark.parametrize("text", BENIGN)
def test_ordinary_code_and_markup_pass(text: str) -> None:
    assert blocked_category(text, list(text)) is None
    assert masked(text, list(text)) == (text, [])


def test_markup_is_removed_only_between_key_characters() -> None:
    assert render("ghp_**abc**def") == "ghp_abcdef"
    assert render("**bold** and f(**kw)") == "**bold** and f(**kw)"
    assert render("version `2025-06-30.basil`.") == "version `2025-06-30.basil`."
    assert render("a&#8203;b &#x61; &amp; \\n \\_") == "ab a &amp; \\n _"


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(DISGUISED), st.data())
def test_a_disguised_key_is_masked_the_same_whatever_the_split(text: str, data: st.DataObject) -> None:
    deltas = data.draw(split_deltas(text))
    assert masked(text, deltas) == masked(text, [text]), deltas
    assert (blocked_category(text, deltas) is None) == (blocked_category(text, [text]) is None)


@pytest.mark.parametrize("text", DISGUISED[:-1])
def test_the_mask_covers_the_markup_inside_the_key(text: str) -> None:
    out, rules = masked(text, list(text))
    out = out.replace("Use `", "Use ")  # (a code span's opening mark before the key is not inside it)
    assert rules and out.startswith("Use [redacted by no-secrets: ") and out.endswith("] now."), out
    assert GITHUB[-6:] not in out and AWS[-6:] not in out


def test_a_key_split_by_markup_no_renderer_joins_passes() -> None:
    text = DISGUISED[-1]
    assert blocked_category(text, list(text)) is None


class _Counted:
    """A compiled pattern charging each call the characters it may read to a shared counter."""

    def __init__(self, pattern: re.Pattern[str], spent: list[int]) -> None:
        self._pattern, self._spent = pattern, spent

    def _charge(self, text: str, args: tuple[Any, ...], found: re.Match[str] | None) -> None:
        """A call that found something read to its end (the patterns do not look past what they
        take); one that found nothing, everything it was given."""
        pos = args[0] if args else 0
        end = found.end() if found is not None else min(args[1] if len(args) > 1 else len(text), len(text))
        self._spent[0] += end - pos + 1

    def match(self, text: str, *args: Any) -> Any:
        found = self._pattern.match(text, *args)
        self._charge(text, args, found)
        return found

    def search(self, text: str, *args: Any) -> Any:
        found = self._pattern.search(text, *args)
        self._charge(text, args, found)
        return found


WORK_PER_CHAR = 4 * RUN_MAX
"""Measured: about 7 on this project's own source, fed one character at a time; 130 to 260 on the
worst runs below (a construct re-read on every one-character delta while it may still grow, up to
``RUN_MAX``); a reading that went back over the text would grow with its length instead."""


@pytest.mark.parametrize("text", [
    "a" + "*" * 20_000 + "b",
    "a<span " + "x" * 20_000,
    ("a<i " + " " * 250) * 80,
    "a" + "*<b>" * 5_000 + "b",
    ("&#" + "1" * 7) * 2_000,
    "x" + "`~~" * 6_000 + "y",
    "a\\" * 10_000,
])
def test_the_reading_costs_a_bounded_amount_per_character(monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    spent = [0]
    for name in ("SPECIAL", "_REF", "_REF_PARTIAL", "_TAG", "_TAG_PARTIAL"):
        monkeypatch.setattr(rendered_module, name, _Counted(getattr(rendered_module, name), spent))
    monkeypatch.setattr(rendered_module, "_RUNS", {k: _Counted(v, spent) for k, v in rendered_module._RUNS.items()})
    view, raw = RenderedText(), ""
    for char in text:
        raw += char
        view.feed(raw)
    view.feed(raw, final=True)
    assert spent[0] <= WORK_PER_CHAR * len(text), spent[0] / len(text)
