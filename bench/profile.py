"""Where a guardproxy contender spends its time: one scenario under cProfile.

``python -m bench.profile --contender gp-default --scenario stream-paced`` starts the fake upstream and
one guardproxy (through ``bench.profiled`` with ``BENCH_PROFILE_DIR`` set), runs the scenario with
the bench driver, stops the proxy (which writes the profile) and prints the top functions by own
time and by cumulative time. Profiles land in bench/results/tmp/prof/. cProfile slows everything
(roughly 2x), so read shares, not absolute numbers.
"""

from __future__ import annotations

import argparse
import io
import os
import pstats
import sys
from pathlib import Path

from bench.run import ARMED_POLICY, Driver
from bench.servers import TMP, Fleet, guardproxy_argv, guardproxy_env, upstream_argv

SCENARIOS: dict[str, dict[str, object]] = {
    "stream-paced": {"op": "cpu", "model": "bench-d2000-p1", "count": 2},
    "stream-burst": {"op": "cpu", "model": "bench-d5000-p0", "count": 1},
    "stream200-c32": {"op": "streams", "model": "bench-d200-p0", "concurrency": 32, "count": 96},
    "ns-c32": {"op": "load", "model": "bench-small", "concurrency": 32, "duration": 4.0, "warmup": 0.5},
    "ns-sys-c32": {"op": "load", "model": "bench-sys", "concurrency": 32, "duration": 4.0, "warmup": 0.5},
    "ns-agent-c8": {"op": "load", "model": "bench-agent", "concurrency": 8, "duration": 4.0, "warmup": 0.5},
    "ns-agent-c1": {"op": "load", "model": "bench-agent", "concurrency": 1, "duration": 4.0, "warmup": 0.5},
    "stream-agent-c32": {"op": "streams", "model": "bench-agent-d200-p0", "concurrency": 32, "count": 96},
}
POLICIES = {"gp-off": (None, False), "gp-default": (None, True), "gp-armed": (ARMED_POLICY, True)}


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.profile", description=__doc__)
    parser.add_argument("--contender", choices=sorted(POLICIES), default="gp-default")
    parser.add_argument("--scenario", choices=sorted(SCENARIOS), default="stream-paced")
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    out_dir = TMP / "prof" / f"{args.contender}-{args.scenario}"
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in out_dir.glob("*.prof"):
        old.unlink()
    policy, enabled = POLICIES[args.contender]
    drive = Driver()
    try:
        with Fleet() as fleet:
            up = fleet.start("upstream-prof", upstream_argv())
            env = {**guardproxy_env(f"http://127.0.0.1:{up.port}", policy=policy, enabled=enabled),
                   "BENCH_PROFILE_DIR": str(out_dir)}
            gp = fleet.start(f"{args.contender}-prof", guardproxy_argv(), env=env)
            cmd = dict(SCENARIOS[args.scenario])
            result = drive(url=gp.url, pid=gp.pid, cpu_pid=gp.pid, **cmd)
            print(result)
            fleet.stop(gp)
    finally:
        drive.close()
    profs = sorted(out_dir.glob("*.prof"))
    if not profs:
        print("no profile written", file=sys.stderr)
        return 1
    for key in ("tottime", "cumulative"):
        buf = io.StringIO()
        pstats.Stats(str(profs[-1]), stream=buf).strip_dirs().sort_stats(key).print_stats(args.top)
        print(f"== by {key} ({os.path.relpath(profs[-1], Path.cwd())})")
        print(buf.getvalue().split("\n\n", 1)[-1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
