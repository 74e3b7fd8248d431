"""Throughput against the number of workers (``guardproxy serve --workers N``), side by side in one run.

Run: ``.venv/bin/python -m bench.workers [--workers 1 2 3] [--rounds 3] [--quick]``. Starts the fake
upstream and one guardproxy per worker count (shipped default policy) on its own port, all up at
once, then alternates the scenarios over them round by round (N=1, N=2, N=3, N=1, ...), so drift on
a shared machine lands on every contender alike. Scenarios: non-streaming requests at 32 concurrent
(req/s) and 200-delta streams at 32 concurrent (completed streams per second). Medians over rounds;
ratios against one worker. The load driver and the fake upstream share the same cores, so the
figures are what one machine gives with everything on it, not a proxy-only ceiling.
Writes bench/results/workers.json and prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path
from typing import Any

from bench.run import Driver, log, machine
from bench.servers import Fleet, guardproxy_argv, guardproxy_env, upstream_argv

RESULTS = Path(__file__).parent / "results" / "workers.json"


def _median(values: list[float]) -> float:
    return round(statistics.median(values), 1) if values else 0.0


def run(workers: list[int], rounds: int, quick: bool) -> dict[str, Any]:
    drive = Driver()
    out: dict[str, Any] = {"machine": machine(), "workers": workers, "rounds": rounds, "results": {},
                           "loadavg": [os.getloadavg()[0]]}
    with Fleet() as fleet:
        up = fleet.start("upstream", upstream_argv())
        ub = f"http://127.0.0.1:{up.port}"
        live = {}
        for n in workers:
            argv = [*guardproxy_argv(), "--workers", str(n)]
            live[n] = fleet.start(f"gp-w{n}", argv, env=guardproxy_env(ub, policy=None))
        rps: dict[int, list[float]] = {n: [] for n in workers}
        sps: dict[int, list[float]] = {n: [] for n in workers}
        errors: dict[int, int] = dict.fromkeys(workers, 0)
        for n in workers:  # warm every worker's pools
            drive(op="load", url=live[n].url, model="bench-small", concurrency=8, duration=0.5, warmup=0.2)
        for r in range(rounds):
            for n in workers:
                ns = drive(op="load", url=live[n].url, model="bench-small", concurrency=32,
                           duration=1.0 if quick else 3.0, warmup=0.5, timeout=30)
                st = drive(op="streams", url=live[n].url, model="bench-d200-p0", concurrency=32,
                           count=32 if quick else 128, time_cap=60)
                rps[n].append(float(ns.get("rps", 0.0)))
                wall = float(st.get("wall_s") or 0.0)
                sps[n].append(st.get("completed", 0) / wall if wall else 0.0)
                errors[n] += int(ns.get("errors", 0) or 0) + int(st.get("errors", 0) or 0)
                log(f"round {r + 1}/{rounds} workers={n}: {rps[n][-1]} req/s, {sps[n][-1]:.1f} streams/s")
    drive.close()
    out["loadavg"].append(os.getloadavg()[0])
    base_r, base_s = _median(rps[workers[0]]), _median(sps[workers[0]])
    for n in workers:
        mr, ms = _median(rps[n]), _median(sps[n])
        out["results"][str(n)] = {"rps_rounds": rps[n], "streams_per_s_rounds": [round(v, 1) for v in sps[n]],
                                  "rps_median": mr, "streams_per_s_median": ms, "errors": errors[n],
                                  "rps_ratio": round(mr / base_r, 2) if base_r else None,
                                  "streams_ratio": round(ms / base_s, 2) if base_s else None}
    return out


def table(out: dict[str, Any]) -> str:
    m = out["machine"]
    lines = [(f"{m['nproc']} cores ({m['cpu_model']}), {m['date']}, commit {m['commit']}, "
              f"median of {out['rounds']} alternating rounds, shipped default policy; load average "
              f"{out['loadavg'][0]:.1f} before, {out['loadavg'][1]:.1f} after the run:"), "",
             ("| workers | non-streaming req/s (32 concurrent) | vs 1 | 200-delta streams/s (32 concurrent) | vs 1 "
              "| errors |"), "|---|---|---|---|---|---|"]
    for n, r in out["results"].items():
        lines.append(f"| {n} | {r['rps_median']:,} | {r['rps_ratio']}x | {r['streams_per_s_median']:,} | "
                     f"{r['streams_ratio']}x | {r['errors']} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--workers", type=int, nargs="+", default=[1, 2, 3])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--quick", action="store_true")
    args = p.parse_args(argv)
    out = run(args.workers, args.rounds, args.quick)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(out, indent=2) + "\n")
    print(table(out))
    print(f"\n(os.cpu_count() = {os.cpu_count()}; results in {RESULTS})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
