"""What the guard holds back, on real text: horizons against the fixed window they replace.

Run: ``.venv/bin/python -m bench.holdback``. Streams the project's own README and sources in
token-sized deltas (about 4 characters: a word piece, its leading whitespace) through
``StreamGuard`` exactly as the driver does, with the shipped default policy (canary + secrets) and
with every stream guardrail armed, twice each: releasing by the checks' horizons, and by the fixed
window the guard used before (the largest ``window`` of the armed checks). Reports, per policy and
mode: the median and p95 of characters held after each delta, how many deltas the first released
byte waited, CPU per delta (``process_time``) and the bytes one guard keeps (``tracemalloc``) after
a 2,000-delta message, besides the message text itself. Also the canary's cost of arming at
system prompts of 0.2, 2, 14 and 57 KB: first turn (index built) and turn N (cache hit).
Writes bench/results/holdback.json.
"""

from __future__ import annotations

import json
import re
import statistics
import time
import tracemalloc
from pathlib import Path
from typing import Any

from bench.guard_cost import SPECS as ALL_SPECS
from bench.guard_cost import SYSTEM_PROMPT
from config.policy import CanaryGuardrail, SecretsGuardrail, StreamGuardrailSpec
from guardrails.datamodel import Frame, TextDelta
from guardrails.seams import StreamContext
from guardrails.stream import ArmedSet, build_stream_guardrails
from guardrails.stream.canary import CanaryProvider
from proxy.core.stream_guard import StreamGuard

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results" / "holdback.json"
DEFAULT_SPECS: list[StreamGuardrailSpec] = [CanaryGuardrail(id="canary", kind="canary"),
                                            SecretsGuardrail(id="secrets", kind="secrets")]
_TOKEN = re.compile(r"\s*[^\s]{1,4}|\s+")
MAX_DELTAS = 20_000
PROMPT_SIZES_KB = (0.2, 2, 14, 57)


class FixedWindow(ArmedSet):
    """The release rule before horizons: hold the largest window of the armed checks."""

    def horizon(self, accumulated: str) -> int:
        return max(0, len(accumulated) - self.window)


def real_text() -> str:
    parts = [(ROOT / "README.md").read_text(encoding="utf-8")]
    for folder in ("guardrails", "proxy", "config"):
        parts += [p.read_text(encoding="utf-8") for p in sorted((ROOT / folder).rglob("*.py"))]
    return "\n".join(parts)


def token_deltas(text: str) -> list[str]:
    return _TOKEN.findall(text)[:MAX_DELTAS]


def _frame(delta: str) -> Frame:
    return Frame(delta.encode(), (TextDelta(delta),))


def stream(specs: list[StreamGuardrailSpec], fixed: bool, deltas: list[str]) -> dict[str, Any]:
    """Held characters after each delta, the first release's delta, CPU per delta."""
    providers = build_stream_guardrails(specs, "[withheld]")
    cls = FixedWindow if fixed else ArmedSet
    # One message per 2,000 deltas (a long answer), as a client would see them.
    held: list[int] = []
    first_release: list[int] = []
    cpu = 0.0
    trips: list[str] = []
    for start in range(0, len(deltas), 2000):
        guard = StreamGuard(cls.arm(providers, StreamContext(system_prompt=SYSTEM_PROMPT)), holdback=0)
        arrived = released = 0
        first = -1
        t = time.process_time()
        for i, delta in enumerate(deltas[start:start + 2000]):
            step = guard.push(_frame(delta))
            if step.trip is not None:  # the docs quote key-shaped text: that message ends there, the next begins
                trips.append(step.trip.guardrail_id)
                guard = StreamGuard(cls.arm(providers, StreamContext(system_prompt=SYSTEM_PROMPT)), holdback=0)
                arrived = released = 0
                continue
            arrived += len(delta)
            released += sum(len(f.text) for f in step.send)
            held.append(arrived - released)
            if first < 0 and released:
                first = i
        cpu += time.process_time() - t
        first_release.append(first)
    held.sort()
    return {"median_held_chars": statistics.median(held), "p95_held_chars": held[int(len(held) * 0.95)],
            "first_release_after_deltas": statistics.median(first_release),
            "cpu_us_per_delta": round(cpu / len(deltas) * 1e6, 2), "trips": trips}


def guard_bytes(specs: list[StreamGuardrailSpec], fixed: bool, deltas: list[str]) -> int:
    """Bytes one guard holds after a 2,000-delta message, the message text itself excluded."""
    providers = build_stream_guardrails(specs, "[withheld]")
    cls = FixedWindow if fixed else ArmedSet
    ctx = StreamContext(system_prompt=SYSTEM_PROMPT)
    cls.arm(providers, ctx)  # the canary's prompt index is cached, shared by every stream
    frames = [_frame(d) for d in deltas[:2000]]
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    guard = StreamGuard(cls.arm(providers, ctx), holdback=0)
    for frame in frames:
        guard.push(frame)
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    total = sum(s.size_diff for s in after.compare_to(before, "filename"))
    return max(0, total - len(guard.text.encode("utf-8")) - 49)


def canary_arming() -> list[dict[str, Any]]:
    """Microseconds to arm the canary for one request: first turn, then turn N of the same prompt."""
    base = real_text()
    rows = []
    for kb in PROMPT_SIZES_KB:
        prompt = base[:int(kb * 1024)]
        provider = CanaryProvider(CanaryGuardrail(id="canary", kind="canary"), "[withheld]")
        ctx = StreamContext(system_prompt=prompt)
        t = time.perf_counter()
        provider.arm(ctx)
        first = time.perf_counter() - t
        hits = []
        for _ in range(20):
            same = StreamContext(system_prompt="".join(prompt))  # a fresh string, as a new request has
            t = time.perf_counter()
            provider.arm(same)
            hits.append(time.perf_counter() - t)
        rows.append({"prompt_kb": kb, "first_turn_us": round(first * 1e6, 1),
                     "turn_n_us": round(statistics.median(hits) * 1e6, 1),
                     "index_kib": round(provider.cache.used_bytes / 1024, 1)})
    return rows


def main() -> None:
    deltas = token_deltas(real_text())
    rows = []
    for name, specs in (("default", DEFAULT_SPECS), ("all armed", ALL_SPECS)):
        for fixed in (True, False):
            row = {"policy": name, "release": "fixed window" if fixed else "horizons",
                   **stream(specs, fixed, deltas), "guard_bytes": guard_bytes(specs, fixed, deltas)}
            rows.append(row)
    arming = canary_arming()
    chars = sum(map(len, deltas))
    print(f"{len(deltas):,} deltas, {chars / len(deltas):.1f} characters each (README and sources)\n")
    print("| policy | release | median held chars | p95 held chars | first release after (deltas) | "
          "CPU µs/delta | guard bytes |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['policy']} | {r['release']} | {r['median_held_chars']} | {r['p95_held_chars']} | "
              f"{r['first_release_after_deltas']} | {r['cpu_us_per_delta']} | {r['guard_bytes']:,} |")
    print("\n| system prompt | canary arm, first turn (µs) | turn N (µs) | cached index (KiB) |")
    print("|---:|---:|---:|---:|")
    for a in arming:
        print(f"| {a['prompt_kb']} KB | {a['first_turn_us']} | {a['turn_n_us']} | {a['index_kib']} |")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({"deltas": len(deltas), "rows": rows, "canary_arming": arming}, indent=2)
                       + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
