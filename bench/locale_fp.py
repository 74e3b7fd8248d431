"""False positives on Cyrillic and Greek text: the system's gettext catalogs as a corpus.

Run: ``.venv/bin/python -m bench.locale_fp [--root /usr/share/locale] [--mb N]``. Not part of
``make test``. The ``secrets``, ``pii`` and ``regex`` checks read look-alike letters as the ASCII
ones they imitate (``guardrails.text.confusables.shape_table``): Cyrillic ``о р с е``, Greek
``ο α``, ``б`` as ``6``, ``З`` as ``3``. This measures what that costs in false positives on real
prose in those scripts: every translated message of the installed programs' catalogs (``.mo``
files of ``ru uk bg sr be el``: coreutils, apt, git, glib...; the header entry, which names the
translators and their addresses, is left out), streamed through the armed checks in random 3-8
character deltas, each message on its own. Reports hits per MB per guardrail and writes each hit to
``bench/results/locale_fp.txt`` for review. Run it on two trees to compare them.
"""

from __future__ import annotations

import argparse
import gettext
import random
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from config.policy import PiiGuardrail, RegexGuardrail, SecretsGuardrail, StreamGuardrailSpec
from guardrails.decision import Redact
from guardrails.seams import StreamContext
from guardrails.stream import ArmedSet, build_stream_guardrails

LANGUAGES = ("ru", "uk", "bg", "sr", "be", "el")
RESULTS = Path(__file__).parent / "results" / "locale_fp.txt"
SPECS: list[StreamGuardrailSpec] = [
    SecretsGuardrail(id="secrets", kind="secrets"),
    RegexGuardrail(id="deny", kind="regex", flags=["i"],
                   patterns=[r"project\s+nightingale", r"internal\s+use\s+only", r"\bBEGIN CERT\b"]),
    PiiGuardrail(id="pii", kind="pii", action="redact"),
]


def messages(root: Path, limit_bytes: int) -> Iterator[tuple[str, str]]:
    """(catalog, translated message) of each language's catalogs, until ``limit_bytes`` of UTF-8."""
    seen = 0
    for language in LANGUAGES:
        for path in sorted((root / language / "LC_MESSAGES").glob("*.mo")):
            try:
                with path.open("rb") as f:
                    catalog = gettext.GNUTranslations(f)._catalog  # type: ignore[attr-defined]
            except (OSError, UnicodeDecodeError, ValueError):
                continue
            for key, text in catalog.items():
                if key == "" or not isinstance(text, str) or text.isascii():
                    continue
                seen += len(text.encode())
                yield f"{language}/{path.name}", text
                if seen >= limit_bytes:
                    return


def hits(text: str, armed: ArmedSet, rng: random.Random) -> list[tuple[str, str]]:
    """(guardrail, what it matched) of the first trip or redaction over ``text`` in 3-8 character
    deltas (a message holds at most one, nearly always)."""
    found: list[tuple[str, str]] = []
    acc, i = "", 0
    while i < len(text):
        delta = text[i:i + rng.randint(3, 8)]
        i += len(delta)
        acc += delta
        trip = armed.check(acc, delta)
        if trip is not None:
            span = acc[trip.decision.start:trip.decision.end] if isinstance(trip.decision, Redact) else acc[-60:]
            return [*found, (trip.guardrail_id, span)]
    trip = armed.finish(acc)
    if trip is not None:
        found.append((trip.guardrail_id, acc[-60:]))
    return found


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--root", default="/usr/share/locale")
    parser.add_argument("--mb", type=float, default=8.0)
    args = parser.parse_args()
    guards = build_stream_guardrails(SPECS, "[x]")
    ctx = StreamContext(system_prompt="")
    rng = random.Random(0)
    counts: Counter[str] = Counter()
    total = 0
    lines: list[str] = []
    for catalog, text in messages(Path(args.root), int(args.mb * 1e6)):
        total += len(text.encode())
        for guardrail_id, span in hits(text, ArmedSet.arm(guards, ctx), rng):
            counts[guardrail_id] += 1
            lines.append(f"{guardrail_id}\t{catalog}\t{span!r}")
    mb = total / 1e6
    print(f"{mb:.2f} MB of Cyrillic and Greek catalog messages ({', '.join(LANGUAGES)})")
    for spec in SPECS:
        print(f"  {spec.id}: {counts[spec.id]} hits ({counts[spec.id] / mb:.2f} per MB)")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
