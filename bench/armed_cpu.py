"""CPU per delta of unpaced 200-delta streams at 32 concurrent: bare relay, gp-default, gp-armed (#32).

``python -m bench.armed_cpu`` starts the fake upstream, the bare relay (``bench/bare_relay.py``) and
guardproxy with the shipped default policy and with every streaming guardrail armed
(``bench/policies/all-stream.toml``), each a subprocess on a free 127.0.0.1 port, then runs
``--rounds`` alternating rounds (relay, default, armed, relay, ...) of ``--count`` streams of 200
deltas sent at once by the upstream, 32 at a time. Each round reads the server process's
utime+stime over the round and divides by the deltas of the streams that completed; every body is
checked byte for byte against the upstream's. It prints the median µs per delta per contender and
its ratio to the bare relay's (the ratio of medians, and the median of the per-round ratios), and
the unpaced throughput (streams a second) beside the relay's. ``--off`` adds guardproxy with
guardrails off; ``--baseline DIR`` adds gp-default and gp-armed run from another checkout of the
repository (``git archive REV | tar -x -C DIR``), same interpreter, same run: before and after
side by side. Bounded: at most ``--rounds`` x contenders x ``--count`` streams, each round capped
at 30 s.
"""

from __future__ import annotations

import argparse
import json
import signal
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from bench.common import raise_fd_limit
from bench.run import ARMED_POLICY, Driver
from bench.servers import Fleet, bare_relay_argv, guardproxy_argv, guardproxy_env, upstream_argv

MODEL = "bench-d200-p0"


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.armed_cpu", description=__doc__)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--count", type=int, default=320, help="streams per round (default 320: 64,000 deltas)")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--off", action="store_true", help="also run guardproxy with guardrails off")
    parser.add_argument("--baseline", type=Path, help="a checkout of another revision to run beside this one")
    parser.add_argument("--json", help="also write the rounds to this file")
    args = parser.parse_args(argv)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda signum, _frame: sys.exit(128 + signum))
    raise_fd_limit()
    drive = Driver()
    rows: dict[str, list[dict[str, Any]]] = {}
    try:
        with Fleet() as fleet:
            up = fleet.start("upstream-armed-cpu", upstream_argv())
            base = f"http://127.0.0.1:{up.port}"
            specs: list[tuple[str, list[str], dict[str, str]]] = [("bare-relay", bare_relay_argv(base), {})]
            if args.off:
                specs.append(("gp-off", guardproxy_argv(), guardproxy_env(base, policy=None, enabled=False)))
            specs += [("gp-default", guardproxy_argv(), guardproxy_env(base, policy=None)),
                      ("gp-armed", guardproxy_argv(), guardproxy_env(base, policy=ARMED_POLICY))]
            servers = {name: fleet.start(f"{name}-armed-cpu", argv_, env=env) for name, argv_, env in specs}
            if args.baseline is not None:
                base_dir = args.baseline.resolve()
                for name, policy in (("gp-default", None), ("gp-armed", str(base_dir / ARMED_POLICY))):
                    servers[f"{name} (baseline)"] = fleet.start(
                        f"{name}-baseline-armed-cpu", guardproxy_argv(), cwd=base_dir,
                        env={**guardproxy_env(base, policy=None), "PYTHONPATH": str(base_dir),
                             **({"GUARDPROXY_POLICY": policy} if policy else {})})
            for s in servers.values():  # warm: imports, pools, the canary's index
                drive(op="streams", url=s.url, model=MODEL, concurrency=8, count=16)
            rows = {name: [] for name in servers}
            for r in range(args.rounds):
                for name, s in servers.items():
                    res = drive(op="streams", url=s.url, model=MODEL, concurrency=args.concurrency,
                                count=args.count, time_cap=30, cpu_pid=s.pid)
                    rows[name].append(res)
                    log(f"round {r + 1}/{args.rounds} {name}: {res.get('us_per_delta')} µs/delta, "
                        f"{res['completed']}/{res['streams']} completed, {res['verified']} verified")
    finally:
        drive.close()
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(rows, f, indent=1)
    print(table(rows))
    return 0


def table(rows: dict[str, list[dict[str, Any]]]) -> str:
    relay = rows.get("bare-relay", [])
    relay_us = [r.get("us_per_delta") or 0.0 for r in relay]
    relay_rate = [r["completed"] / r["wall_s"] for r in relay if r.get("wall_s")]
    out = [("| contender | CPU µs/delta (median) | rounds | x relay (ratio of medians) "
            "| x relay (median of per-round ratios) | streams/s (median) | x relay "
            "| first token p50 / p99 ms (medians) | verified |"),
           "|:---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, rs in rows.items():
        us = [r.get("us_per_delta") or 0.0 for r in rs]
        rate = [r["completed"] / r["wall_s"] for r in rs if r.get("wall_s")]
        per_round = [a / b for a, b in zip(us, relay_us, strict=False) if b]
        ok = sum(r["verified"] for r in rs)
        total = sum(r["streams"] for r in rs)
        m_us, m_relay = statistics.median(us), statistics.median(relay_us)
        out.append(f"| {name} | {m_us:.1f} | {', '.join(f'{u:.0f}' for u in us)} | {m_us / m_relay:.2f}x "
                   f"| {statistics.median(per_round):.2f}x | {statistics.median(rate):.1f} "
                   f"| {statistics.median(rate) / statistics.median(relay_rate):.2f}x "
                   f"| {_ttft(rs, 'p50_ms'):.0f} / {_ttft(rs, 'p99_ms'):.0f} | {ok}/{total} |")
    return "\n".join(out)


def _ttft(rounds: list[dict[str, Any]], key: str) -> float:
    return statistics.median(float(r["ttft"].get(key) or 0.0) for r in rounds)


if __name__ == "__main__":
    sys.exit(main())
