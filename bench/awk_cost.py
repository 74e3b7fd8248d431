"""The awk reading before and after #29 (class 9), side by side: the regular expressions it used (kept
here as the reference, quadratic in a run of word characters or of quotes) against the tokenizer in
``guardrails.tools.embedded`` (one pass). Run: ``.venv/bin/python -m bench.awk_cost``.

Shapes: a run of one word character, a run of ``"x"`` strings, of ``"\\"``, a run of ``print >`` and an ordinary
program repeated, each at 1, 4 and 16 KiB. Reports the median of ``RUNS`` runs per reader (in-process
CPU time) and the ratio old/new; the old reader refused programs over 4 KiB, so its 16 KiB figure is
what the same patterns cost had it read them. Writes bench/results/awk_cost.json.
"""

from __future__ import annotations

import json
import re
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from guardrails.tools.awk import awk

RUNS = 5
RESULTS = Path(__file__).parent / "results" / "awk_cost.json"

_STRING = r'"((?:\\.|[^"\\])*)"'
_OLD = [re.compile(r"\bsystem\s*\("), re.compile(r"\s*" + _STRING + r"\s*\)"),
        re.compile(r"(?<![|&])\|&?\s*(?:" + _STRING + r"|(?!getline\b)([A-Za-z_]\w*)\s*(?:[;}\n)]|$))"),
        re.compile(r"(?:" + _STRING + r"|([A-Za-z_]\w*))\s*\|&?\s*getline\b"),
        re.compile(r"\bprintf?\b[^;{}\n]*?(>>?)\s*" + _STRING),
        re.compile(r"\bgetline\b\s*(?:[A-Za-z_]\w*\s*)?<\s*" + _STRING)]


def old_reader(program: str) -> int:
    """The pre-#29 patterns, each run over the whole program as the old reader ran them."""
    return sum(1 for pattern in _OLD for _ in pattern.finditer(program))


def new_reader(program: str) -> int:
    return len(awk([program])[0])


def _median(fn: Callable[[str], int], program: str) -> float:
    times = []
    for _ in range(RUNS):
        start = time.process_time()
        fn(program)
        times.append(time.process_time() - start)
    return statistics.median(times)


SHAPES: dict[str, Callable[[int], str]] = {
    "word run": lambda n: "a" * n,
    "quoted strings": lambda n: '"x"' * (n // 3),
    "escaped quotes": lambda n: '"\\"' * (n // 3),
    "print > runs": lambda n: "print print print > " * (n // 20),
    "ordinary program": lambda n: ('{ if ($3 > 10) { s += $3; print $1, $3 > "out.txt" } } ' * n)[:n],
}


def main() -> None:
    rows = []
    for shape, make in SHAPES.items():
        for kib in (1, 4, 16):
            program = make(kib * 1024)
            old, new = _median(old_reader, program), _median(new_reader, program)
            rows.append({"shape": shape, "kib": kib, "old_ms": round(old * 1e3, 2), "new_ms": round(new * 1e3, 2),
                         "old_over_new": round(old / new, 1) if new else None})
            print(f"{shape:18} {kib:3} KiB  old {old * 1e3:9.2f} ms  new {new * 1e3:7.2f} ms")
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
