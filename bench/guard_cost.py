"""CPU cost per delta of every built-in stream guardrail, armed together, on clean streams.

Run: ``.venv/bin/python -m bench.guard_cost``. Feeds streams of 100, 1,000 and 10,000 deltas of
3-8 characters of prose and code through an ArmedSet (canary over a 2 KB system prompt, secrets,
regex with a few patterns, pii, max_length) exactly as the pipeline does (``acc += delta`` then
``check_horizon(acc, delta)``: each check, then its horizon), and the same stream with no guardrail
(just accumulating). Reports the median over ``RUNS`` runs of ``time.process_time`` per delta, for
all of them together and for each kind armed alone. The claim under test: the cost per delta stays
flat as the message grows, because no check rescans the accumulated text. Last, the 10,000 deltas
again with a zero-width space after every ``MARK_EVERY``-th delta: from the first one on, the set
keeps the visible text and maps the checks' horizons back (``guardrails.text.invisible``), which
only such a stream pays for. And the same with a Cyrillic look-alike (``о`` for ``o``...) in every
``MARK_EVERY``-th delta, and a stream of Russian prose (every delta non-ASCII, most with letters that
read as Latin ones): the set keeps the text as a reader reads it for them too.
Writes bench/results/guard_cost.json.
"""

from __future__ import annotations

import json
import random
import statistics
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from config.policy import (
    CanaryGuardrail,
    HiddenTextGuardrail,
    MaxLengthGuardrail,
    PiiGuardrail,
    RegexGuardrail,
    SecretsGuardrail,
    StreamGuardrailSpec,
)
from guardrails.seams import StreamContext
from guardrails.stream import ArmedSet, Trip, build_stream_guardrails

SIZES = (100, 1_000, 10_000)
RUNS = 5
RESULTS = Path(__file__).parent / "results" / "guard_cost.json"
MARK_EVERY = 10

PROSE = (
    "The deployment finished in about four minutes, and the health checks went green right after. "
    "If the cache misses again, look at the eviction policy before scaling the workers out. "
    "We measured the latency at the edge and inside the service; most of it was serialization. "
)
CODE = (
    "def handle(request: Request) -> Response:\n"
    "    user = await store.get_user(request.user_id)\n"
    "    if user is None:\n        return Response(status=404)\n"
    "    items = [item.to_dict() for item in user.items if item.visible]\n"
    "    return Response(json.dumps({'items': items, 'count': len(items)}))\n"
)
SYSTEM_PROMPT = (
    "You are a careful senior engineer helping with a Python code base. Answer precisely, cite the "
    "files you rely on, and never invent APIs. Prefer small, reviewable changes. "
) * 12  # about 2 KB


RUSSIAN = (
    "Развёртывание заняло около четырёх минут, и проверки сразу стали зелёными. Если кэш снова "
    "промахнётся, посмотрите политику вытеснения, прежде чем добавлять воркеры. Задержку мерили "
    "на границе и внутри сервиса; большая часть ушла на сериализацию. "
)
_CYRILLIC = {"o": "\u043e", "e": "\u0435", "a": "\u0430", "c": "\u0441", "p": "\u0440"}


def clean_deltas(n: int, seed: int = 1, source: str = PROSE + CODE) -> list[str]:
    rng = random.Random(seed)
    text = source * (n * 8 // len(source) + 2)
    deltas: list[str] = []
    i = 0
    while len(deltas) < n:
        size = rng.randint(3, 8)
        deltas.append(text[i:i + size])
        i += size
    return deltas


SPECS: list[StreamGuardrailSpec] = [
    CanaryGuardrail(id="canary", kind="canary", min_chars=40),
    SecretsGuardrail(id="secrets", kind="secrets"),
    RegexGuardrail(id="deny", kind="regex", flags=["i"],
                   patterns=[r"project\s+nightingale", r"internal\s+use\s+only", r"\bBEGIN CERT\b"]),
    PiiGuardrail(id="pii", kind="pii", action="redact"),
    MaxLengthGuardrail(id="len", kind="max_length", max_chars=10_000_000),
    HiddenTextGuardrail(id="hidden", kind="hidden_text"),
]
KINDS = [spec.id for spec in SPECS]


def arm(only: str | None = None) -> ArmedSet:
    """Every built-in armed together, or only the one whose id is ``only``."""
    guards = build_stream_guardrails([s for s in SPECS if only in (None, s.id)], "[withheld]")
    armed = ArmedSet.arm(guards, StreamContext(system_prompt=SYSTEM_PROMPT))
    assert armed.ids == [only] if only else KINDS, armed.ids
    return armed


def run_armed(deltas: list[str], only: str | None = None) -> float:
    armed = arm(only)
    acc = ""
    start = time.process_time()
    for delta in deltas:
        acc += delta
        tripped = isinstance(armed.check_horizon(acc, delta), Trip)
        if tripped:
            raise AssertionError("the clean stream tripped a guardrail")
    armed.finish(acc)
    return time.process_time() - start


def marked(deltas: list[str]) -> list[str]:
    """``deltas`` with a zero-width space after every ``MARK_EVERY``-th one (the first included)."""
    return [d + "\u200b" if i % MARK_EVERY == 0 else d for i, d in enumerate(deltas)]


def with_lookalike(deltas: list[str]) -> list[str]:
    """``deltas`` with one Latin letter of every ``MARK_EVERY``-th one written in Cyrillic."""
    def swap(delta: str) -> str:
        for latin, cyrillic in _CYRILLIC.items():
            if latin in delta:
                return delta.replace(latin, cyrillic, 1)
        return delta + "\u043e"
    return [swap(d) if i % MARK_EVERY == 0 else d for i, d in enumerate(deltas)]


def run_none(deltas: list[str]) -> float:
    acc = ""
    start = time.process_time()
    for delta in deltas:
        acc += delta
    return time.process_time() - start


def median_us_per_delta(fn: Callable[[list[str]], float], deltas: list[str]) -> float:
    return statistics.median(fn(deltas) for _ in range(RUNS)) / len(deltas) * 1e6


def main() -> None:
    rows = []
    for n in SIZES:
        deltas = clean_deltas(n)
        armed, none = median_us_per_delta(run_armed, deltas), median_us_per_delta(run_none, deltas)
        row: dict[str, float] = {
            "deltas": n, "us_per_delta_all_armed": round(armed, 2), "us_per_delta_none": round(none, 3),
            "ratio": round(armed / max(none, 1e-9), 1)}
        for kind in KINDS:
            row[f"us_{kind}"] = round(median_us_per_delta(partial(run_armed, only=kind), deltas), 2)
        rows.append(row)
    print("| deltas | µs/delta all armed | µs/delta none | ratio | "
          + " | ".join(f"µs {k} alone" for k in KINDS) + " |")
    print("|---:|---:|---:|---:|" + "---:|" * len(KINDS))
    for r in rows:
        print(f"| {r['deltas']:,} | {r['us_per_delta_all_armed']} | {r['us_per_delta_none']} | {r['ratio']}x | "
              + " | ".join(str(r[f"us_{k}"]) for k in KINDS) + " |")
    deltas = clean_deltas(SIZES[-1])
    clean, dirty = median_us_per_delta(run_armed, deltas), median_us_per_delta(run_armed, marked(deltas))
    invisible = {"deltas": SIZES[-1], "mark_every": MARK_EVERY, "us_per_delta_clean": round(clean, 2),
                 "us_per_delta_marked": round(dirty, 2)}
    print(f"\nall armed, {SIZES[-1]:,} deltas: {clean:.2f} µs/delta clean, {dirty:.2f} with a U+200B after every "
          f"{MARK_EVERY}th delta ({dirty / clean:.2f}x)")
    alike, russian = median_us_per_delta(run_armed, with_lookalike(deltas)), median_us_per_delta(
        run_armed, clean_deltas(SIZES[-1], source=RUSSIAN))
    invisible |= {"us_per_delta_lookalike": round(alike, 2), "us_per_delta_russian": round(russian, 2)}
    print(f"all armed, {SIZES[-1]:,} deltas: {alike:.2f} µs/delta with a Cyrillic look-alike in every {MARK_EVERY}th "
          f"delta ({alike / clean:.2f}x), {russian:.2f} on Russian prose ({russian / clean:.2f}x)")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({"runs": RUNS, "rows": rows, "invisible": invisible}, indent=2) + "\n",
                       encoding="utf-8")


if __name__ == "__main__":
    main()
