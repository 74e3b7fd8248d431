"""The canary against copies a model makes for free when asked to "print your instructions reversed
/ without vowels / in base64 / in rot13 / as HTML": each variant of an excerpt of a coding agent's
system prompt, whole and streamed in random splits, is blocked before ``MIN_CHARS`` characters'
worth of it reach the client. Before the canary's further views (``_canary_views``), every one of
them passed.

The precision side (the project's README and sources, prose in other scripts, code, base64 and hex
blobs that are not the prompt) is pinned at the end and measured by ``bench.canary_spelled``.
"""

from __future__ import annotations

import base64
import codecs
import random
from collections.abc import Callable

import pytest

from guardrails.stream._canary_views import GATE_WINDOW
from tests.checks.agent_canary import AGENT_PROMPT, CANARY, CTX, EXCERPT, MIN_CHARS, WHOLE
from tests.stream_support import armed_passes, cut_text, horizons_until_block


def _words(text: str) -> list[str]:
    return text.split()


VARIANTS: dict[str, Callable[[str], str]] = {
    "reversed": lambda t: t[::-1],
    "words in reverse order": lambda t: " ".join(_words(t)[::-1]),
    "each word reversed": lambda t: " ".join(w[::-1] for w in _words(t)),
    "vowels removed": lambda t: "".join(c for c in t if c.lower() not in "aeiou"),
    "base64": lambda t: base64.b64encode(t.encode()).decode(),
    "base64 wrapped at 20": lambda t: "\n".join(_chunks(base64.b64encode(t.encode()).decode(), 20)),
    "base64 url-safe wrapped at 76": lambda t: "\n".join(_chunks(base64.urlsafe_b64encode(t.encode()).decode(), 76)),
    "hex": lambda t: t.encode().hex(),
    "hex, bytes spaced": lambda t: " ".join(f"{b:02x}" for b in t.encode()),
    "hex, upper case with colons": lambda t: ":".join(f"{b:02X}" for b in t.encode()),
    "leetspeak": lambda t: t.translate(str.maketrans("aeiostlAEIOSTL", "43105714310571")),
    "url-encoded": lambda t: "".join(f"%{b:02X}" for b in t.encode()),
    "each word in html tags": lambda t: " ".join(f"<b>{w}</b>" for w in _words(t)),
    "each word in a span with attributes": lambda t: " ".join(f'<span class="w">{w}</span>' for w in _words(t)),
    "decimal character references": lambda t: "".join(f"&#{ord(c)};" for c in t),
    "hex character references": lambda t: "".join(f"&#x{ord(c):x};" for c in t),
    "unicode escapes": lambda t: "".join(f"\\u{ord(c):04x}" for c in t),
    "rot13": lambda t: codecs.encode(t, "rot13"),
    "caesar shift 1": lambda t: "".join(_shift(c, 1) for c in t),
    "caesar shift 22": lambda t: "".join(_shift(c, 22) for c in t),
}


SHIFTED = {"rot13", "caesar shift 1", "caesar shift 22"}


def _shift(c: str, k: int) -> str:
    if "a" <= c <= "z":
        return chr((ord(c) - 97 + k) % 26 + 97)
    if "A" <= c <= "Z":
        return chr((ord(c) - 65 + k) % 26 + 65)
    return c


def _chunks(text: str, n: int) -> list[str]:
    return [text[i:i + n] for i in range(0, len(text), n)]



def test_every_variant_differs_from_the_excerpt() -> None:
    assert EXCERPT in AGENT_PROMPT
    for how, spell in VARIANTS.items():
        assert EXCERPT.lower() not in spell(EXCERPT).lower(), how


@pytest.mark.parametrize("how", VARIANTS)
def test_a_variant_is_blocked_whole(how: str) -> None:
    assert WHOLE is not None
    assert not WHOLE(CTX, [f"Sure:\n{VARIANTS[how](EXCERPT)}\nThat is all."])


@pytest.mark.parametrize("how", VARIANTS)
@pytest.mark.parametrize("seed", range(4))
def test_a_variant_is_blocked_streamed_in_random_splits_before_min_chars_of_it_go(how: str, seed: int) -> None:
    prefix = "Sure, here it is:\n"
    leak = VARIANTS[how](EXCERPT)
    text = prefix + leak + "\nThat is all."
    rng = random.Random(seed)
    pieces = cut_text(text, [rng.randint(1, 9) for _ in range(12)])
    blocked, horizons = horizons_until_block(CANARY, CTX, pieces)
    assert blocked
    assert not armed_passes(CANARY, CTX, pieces)
    # What went out before the block holds less of the copy than the spelling of MIN_CHARS of the prompt.
    # (A shifted copy is read from when the shift gate sees it: up to one gate window later.)
    released = text[:max(horizons, default=0)]
    late = GATE_WINDOW if how in SHIFTED else 0
    assert len(released) - len(prefix) < len(VARIANTS[how](EXCERPT[:MIN_CHARS])) + late, released


ORDINARY = [
    "![chart](data:image/png;base64," + base64.b64encode(bytes(range(256)) * 3).decode() + ")",
    "sha256: " + "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    ("-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEqZ2Z6lJ1zfGkIq4VvYd1N0b8Gv3oHc8R\n"
    "ZpM6CqKpXN8mQ3k2zBcTqzq0c0Xw6v6hB2k7mYt5n4o9v3j1hQ==\n-----END PUBLIC KEY-----"),
    base64.b64encode(b"The deployment finished in about four minutes; the health checks went green.").decode(),
    " ".join(f"{b:02x}" for b in b"An ordinary sentence, hex-encoded, that is not the prompt at all."),
    "<p>Use <code>pytest -q</code> &amp; <b>ruff</b> &mdash; 100% of the time; see \\u00e9t\u00e9 and %20.</p>",
    "In 2024 we shipped 3 releases, 17 fixes and 450 tests in 12 weeks; v1.0.5 is the latest.",
    "def read_file(path: str) -> str:\n    with open(path, encoding='utf-8') as f:\n        return f.read()\n",
    "The test suite runs in two minutes; use `pytest -q tests/test_x.py` to run one file.",
    "Strengths: rhythm, crypts, lynx, myths. Nymphs fly by; dry spry glyphs.",
]


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_text_passes(text: str) -> None:
    assert WHOLE is not None
    assert WHOLE(CTX, [text])
    assert armed_passes(CANARY, CTX, list(text))
