"""The canary against a system prompt spelled out or marked up, as a model writes it on request:
letters spaced out, one letter per line, spaces removed, ``_``/``-``/``.`` between letters or words,
each word bolded, quoted or bulleted, markup between letters. Every reader still reads the prompt,
so the canary also compares the answer's letters and digits alone with the prompt's
(``_canary_text.squeeze``), streamed and whole. Before that view, every spelling here passed.

The precision side (the project's README and sources, Russian and Greek prose, code) is pinned by
``tests/checks/test_canary_lookalikes.py`` and measured by ``bench.canary_lookalikes``.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from guardrails.stream._canary_text import squeeze
from tests.checks.agent_canary import AGENT_PROMPT, CANARY, CTX, EXCERPT, MIN_CHARS, WHOLE
from tests.stream_support import armed_passes, cut_text, horizons_until_block


def _words(text: str) -> list[str]:
    return text.split()


SPELLINGS: dict[str, Callable[[str], str]] = {
    "letters spaced out": lambda t: " ".join(t.replace(" ", "")),
    "letters spaced, words by two spaces": lambda t: "  ".join(" ".join(w) for w in _words(t)),
    "one letter per line": lambda t: "\n".join(t.replace(" ", "")),
    "spaces removed": lambda t: t.replace(" ", ""),
    "underscores between letters": lambda t: "_".join(t.replace(" ", "")),
    "underscores between words": lambda t: "_".join(_words(t)),
    "dashes between letters": lambda t: "-".join(t.replace(" ", "")),
    "dashes between words": lambda t: "-".join(_words(t)),
    "dots between letters": lambda t: ".".join(t.replace(" ", "")),
    "dots between words": lambda t: ".".join(_words(t)),
    "each word bold": lambda t: " ".join(f"**{w}**" for w in _words(t)),
    "each word quoted": lambda t: " ".join(f'"{w}"' for w in _words(t)),
    "each word in backticks": lambda t: " ".join(f"`{w}`" for w in _words(t)),
    "each word bulleted": lambda t: "\n".join(f"- {w}" for w in _words(t)),
    "each word a numbered-free list item with stars": lambda t: "\n".join(f"* {w}" for w in _words(t)),
    "each letter bold": lambda t: " ".join(f"**{c}**" for c in t.replace(" ", "")),
    "letters joined by markup": lambda t: "*".join(t.replace(" ", "")),
    "upper case spaced": lambda t: " ".join(t.upper().replace(" ", "")),
    "each word numbered": lambda t: "\n".join(f"{n}. {w}" for n, w in enumerate(_words(t), start=1)),
    "each letter numbered": lambda t: " ".join(f"{n}){c}" for n, c in enumerate(t.replace(" ", ""), start=1)),
}


def test_the_excerpt_is_the_prompts() -> None:
    assert EXCERPT in AGENT_PROMPT


@pytest.mark.parametrize("how", SPELLINGS)
def test_a_spelled_out_prompt_is_blocked_whole(how: str) -> None:
    leak = SPELLINGS[how](EXCERPT)
    assert EXCERPT not in leak
    assert WHOLE is not None
    assert not WHOLE(CTX, [f"Sure:\n{leak}\nThat is all."])


@pytest.mark.parametrize("how", SPELLINGS)
@pytest.mark.parametrize("size", [1, 2, 5])
def test_a_spelled_out_prompt_is_blocked_streamed_before_any_of_it_is_released(how: str, size: int) -> None:
    prefix = "Sure, here it is:\n"
    text = prefix + SPELLINGS[how](EXCERPT) + "\nThat is all."
    blocked, horizons = horizons_until_block(CANARY, CTX, cut_text(text, [size]))
    assert blocked
    # What was released before the block ends before the copy's first letters run long enough to be
    # the prompt's (its start may go: a few letters are every text's).
    released = text[:max(horizons, default=0)]
    assert len(squeeze(released[len(prefix):])) < MIN_CHARS // 2, released


@settings(max_examples=200, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(at=st.integers(0, len(AGENT_PROMPT) - 300), length=st.integers(80, 300),
       how=st.sampled_from(sorted(SPELLINGS)), sizes=st.lists(st.integers(1, 7), min_size=1, max_size=6))
def test_any_spelled_out_excerpt_is_blocked_streamed_and_whole(at: int, length: int, how: str, sizes: list[int]) -> None:
    excerpt = AGENT_PROMPT[at:at + length]
    if len(squeeze(excerpt)) < MIN_CHARS + 8:
        return  # (markdown runs with few letters)
    text = "Ok.\n" + SPELLINGS[how](excerpt)
    pieces = cut_text(text, sizes)
    assert WHOLE is not None
    assert not WHOLE(CTX, pieces)
    assert not armed_passes(CANARY, CTX, pieces)


CODE_AND_PROSE = [
    "def read_file(path: str) -> str:\n    with open(path, encoding='utf-8') as f:\n        return f.read()\n",
    "The test suite runs in two minutes; use `pytest -q tests/test_x.py` to run one file.",
    "- install the dependencies\n- run the tests\n- open a pull request\n",
    "**Note**: the `--force` flag overwrites the existing file without asking.",
    "S-E-C-R-E-T is how you spell it, but this is not the prompt.",
    "1. install\n2. test\n3. ship\n4. repeat\n5. rest\n6. measure\n7. write it down\n",
]


@pytest.mark.parametrize("text", CODE_AND_PROSE)
def test_ordinary_code_and_prose_pass(text: str) -> None:
    assert WHOLE is not None
    assert WHOLE(CTX, [text])
    assert armed_passes(CANARY, CTX, list(text))
