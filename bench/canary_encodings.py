"""The canary's further views (``guardrails/stream/_canary_views.py``), off against on, in one run.

Run: ``PYTHONPATH=. .venv/bin/python -m bench.canary_encodings``. "Off" builds prompt indexes with
the letters alone (no reversed, vowel-less, folded or step spellings) and arms no views (the canary
as it was before). Against Gemini CLI's own system prompt (``tests/data/gemini_cli_system_prompt.txt``):

- **False positives**: blobs that are not the prompt, streamed in random deltas and checked whole:
  base64 of random bytes (a markdown image), of ordinary sentences (from the project's README and
  docs) and wrapped at 64 or 76; hex of random bytes (hashes), spaced hex of sentences; PEM-looking
  keys; HTML with entities and escapes; the same sentences in rot13. (The project's sources and docs,
  Russian and Greek prose: ``bench.canary_spelled``.)
- **Detection**: 200 excerpts of the prompt (80-300 characters), each copied one of the ways
  ``tests/checks/test_canary_encodings.py`` lists, streamed in random deltas and checked whole.
- **Cost**: canary CPU per delta (``process_time``) on ``bench.guard_cost``'s prose-and-code stream
  and on the project's sources in token deltas, in alternating rounds, medians.

Prints a table; writes nothing.
"""

from __future__ import annotations

import base64
import codecs
import random
from collections.abc import Iterator
from contextlib import contextmanager

from bench.canary_common import (
    PROMPT,
    Row,
    blocked_streamed,
    corpus,
    cpu_us_per_delta,
    fresh,
    off_against_on,
    print_table,
    random_deltas,
)
from bench.guard_cost import clean_deltas
from bench.holdback import _TOKEN
from guardrails.stream import canary
from tests.checks.test_canary_encodings import VARIANTS


@contextmanager
def views_off() -> Iterator[None]:
    real = canary.Views, canary.letter_variants, canary.passes_views
    canary.Views = lambda *args: None  # type: ignore[assignment,misc]
    canary.letter_variants = lambda raw, letters: [letters]  # type: ignore[assignment]
    canary.passes_views = lambda *args: True  # type: ignore[assignment]
    try:
        yield
    finally:
        canary.Views, canary.letter_variants, canary.passes_views = real


def blobs(rng: random.Random) -> list[str]:
    sentences = [s.strip() for s in corpus().split(".") if 60 < len(s.strip()) < 300][:400]
    out = []
    for i in range(60):
        raw = rng.randbytes(rng.randint(30, 600))
        out.append(f"![img](data:image/png;base64,{base64.b64encode(raw).decode()})")
        out.append("sha256 " + rng.randbytes(32).hex() + " and md5 " + rng.randbytes(16).hex())
        text = rng.choice(sentences).encode()
        b64 = base64.b64encode(text).decode()
        width = rng.choice([64, 76])
        out.append("\n".join(b64[j:j + width] for j in range(0, len(b64), width)))
        out.append(" ".join(f"{b:02x}" for b in text))
        out.append("-----BEGIN PUBLIC KEY-----\n" + base64.b64encode(rng.randbytes(90)).decode() + "\n-----END PUBLIC KEY-----")
        out.append(f"<p>{rng.choice(sentences)} &amp; <b>more</b> &#8212; 100% \\u00e9</p>")
        out.append(codecs.encode(rng.choice(sentences), "rot13"))
    return out


def verdicts() -> Row:
    provider, ctx = fresh()
    rng = random.Random(7)
    negatives = blobs(rng)
    leaks = []
    while len(leaks) < 200:
        start = rng.randrange(0, len(PROMPT) - 300)
        leaks.append(VARIANTS[rng.choice(sorted(VARIANTS))](PROMPT[start:start + rng.randint(80, 300)]))
    return {"blobs and markup (not the prompt)": len(negatives),
            "blobs streamed blocked": sum(blocked_streamed(provider, ctx, random_deltas(t, rng)) for t in negatives),
            "blobs whole blocked": sum(not provider.passes_whole(ctx, [t]) for t in negatives),
            "encoded leaks": len(leaks),
            "encoded streamed blocked": sum(blocked_streamed(provider, ctx, random_deltas(t, rng)) for t in leaks),
            "encoded whole blocked": sum(not provider.passes_whole(ctx, [t]) for t in leaks)}


def main() -> None:
    streams = {"cpu us/delta, guard_cost prose and code": clean_deltas(10_000),
               "cpu us/delta, project sources": _TOKEN.findall(corpus())[:10_000]}

    def costs() -> Row:
        return {name: cpu_us_per_delta(*fresh(), deltas, runs=1) for name, deltas in streams.items()}

    print_table(*off_against_on(views_off, verdicts, costs), "views off (before)", "on (after)")


if __name__ == "__main__":
    main()
