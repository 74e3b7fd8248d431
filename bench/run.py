"""``make bench`` (``python -m bench.run``): every contender, same run, alternating rounds.

Contenders: the fake upstream called directly, the bare relay (``bench/bare_relay.py``), guardproxy
with guardrails off, with the shipped default policy, and with every streaming guardrail armed
(``bench/policies/all-stream.toml``); ``--peers`` adds LiteLLM's proxy. A judge scenario adds
guardproxy with an LLM judge (``bench/policies/judge.toml``). Rounds alternate (A B C A B C ...) so
drift on a shared two-core machine lands on every contender alike.

Writes bench/results/latest.{md,json,png} and docs/bench-latest.md. Every server is a subprocess
on a free loopback port, killed (process group) when the run ends, errors included.
``--quick`` shortens every scenario (a smoke run, not for publishing).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench import report
from bench.common import raise_fd_limit
from bench.peers import ensure_litellm, litellm_argv, litellm_env
from bench.servers import (
    ROOT,
    Fleet,
    Server,
    bare_relay_argv,
    guardproxy_argv,
    guardproxy_env,
    upstream_argv,
)

RESULTS = ROOT / "bench" / "results"
ARMED_POLICY = "bench/policies/all-stream.toml"
AT_ONCE_RUNS = 3
"""Fresh processes per contender for the memory figure with 1,000 streams opened at once (median)."""
JUDGE_POLICY = "bench/policies/judge.toml"
JUDGE_MODEL = "bench-judge-l50"
SCENARIOS = ("nonstream", "streams", "first_token", "agent", "cpu_per_delta", "judge", "memory", "guard_cost",
             "holdback")
PACE_MODEL_MS = 17
"""A model-like pace: 15-20 ms per token (50-65 tokens a second)."""


class Driver:
    """The load driver process (``bench.driver``), fed one JSON command per line."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "bench.driver"], cwd=ROOT, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True,
                                     preexec_fn=raise_fd_limit)  # noqa: PLW1509 - no threads here

    def __call__(self, **cmd: Any) -> dict[str, Any]:
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the driver exited")
        return dict(json.loads(line))

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()


def machine() -> dict[str, Any]:
    model = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        import uvloop  # noqa: F401
        loop = "uvloop"
    except ImportError:
        loop = "asyncio"
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                          check=False).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "proxy", "guardrails", "config"], cwd=ROOT,
                           capture_output=True, text=True, check=False).stdout.strip()
    return {"date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"), "nproc": os.cpu_count(),
            "commit": (head or "unknown") + (" + uncommitted changes in proxy/guardrails/config" if dirty else ""),
            "cpu_model": model, "python": platform.python_version(), "kernel": platform.release(),
            "event_loop": loop}


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


class Bench:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.q = args.quick
        self.fleet = Fleet()
        self.drive = Driver()
        self.out: dict[str, Any] = {"machine": machine(), "contenders": {}, "scenarios": {}, "notes": []}
        self.live: dict[str, Server] = {}
        self.upstream_base = ""

    # ---------------------------------------------------------------- contenders
    def contender_specs(self) -> dict[str, tuple[str, list[str], dict[str, str]]]:
        ub = self.upstream_base
        return {
            "bare-relay": ("Starlette + one aiohttp ClientSession, streaming passthrough (bench/bare_relay.py)",
                           bare_relay_argv(ub), {}),
            "gp-off": ("guardproxy, GUARDPROXY_GUARDRAILS_ENABLED=false (pure passthrough)",
                       guardproxy_argv(), guardproxy_env(ub, policy=None, enabled=False)),
            "gp-default": ("guardproxy, shipped default policy (canary + secrets, live delivery)",
                           guardproxy_argv(), guardproxy_env(ub, policy=None)),
            "gp-armed": ("guardproxy, every streaming guardrail armed (bench/policies/all-stream.toml)",
                         guardproxy_argv(), guardproxy_env(ub, policy=ARMED_POLICY)),
        }

    def start_all(self) -> None:
        up = self.fleet.start("upstream", upstream_argv())
        self.upstream_base = f"http://127.0.0.1:{up.port}"
        self.live["direct"] = up
        self.out["contenders"]["direct"] = "the fake upstream itself (aiohttp.web), no proxy"
        for name, (desc, argv, env) in self.contender_specs().items():
            self.live[name] = self.fleet.start(name, argv, env=env)
            self.out["contenders"][name] = desc
        if self.args.peers:
            exe, version = ensure_litellm()
            if exe is None:
                self.out["notes"].append(f"LiteLLM could not run here: {version}")
                log(f"litellm: {version}")
            else:
                try:
                    self.live["litellm"] = self.fleet.start("litellm", litellm_argv(exe),
                                                            env=litellm_env(self.upstream_base),
                                                            health_path="/health/liveliness", timeout=180)
                    self.out["contenders"]["litellm"] = (f"LiteLLM proxy {version} (own venv, 1 worker, no DB, "
                                                         "callbacks and telemetry off; bench/peers/litellm.yaml)")
                except RuntimeError as exc:
                    self.out["notes"].append(f"LiteLLM {version} did not start: {exc}")
        log("contenders up: " + ", ".join(self.live))

    def wanted(self, scenario: str) -> bool:
        return not self.args.only or scenario in self.args.only

    def verify_mode(self, name: str) -> str:
        return "content" if name == "litellm" else "bytes"

    def url(self, name: str) -> str:
        return self.live[name].url

    def warm(self) -> None:
        for name in self.live:
            self.drive(op="load", url=self.url(name), model="bench-small", concurrency=4, duration=0.5, warmup=0.2,
                       verify=self.verify_mode(name))
            self.drive(op="streams", url=self.url(name), model="bench-d200-p0", concurrency=4, count=8,
                       verify=self.verify_mode(name))

    # ---------------------------------------------------------------- scenarios
    def rounds(self, key: str, names: list[str], rounds: int, **cmd: Any) -> None:
        """Alternating rounds of one scenario over ``names``."""
        res: dict[str, list[dict[str, Any]]] = {n: [] for n in names}
        for r in range(rounds):
            for name in names:
                s = self.live[name]
                result = self.drive(url=self.url(name), cpu_pid=s.pid, verify=self.verify_mode(name), **cmd)
                res[name].append(result)
                brief = result.get("rps") or (result.get("ttft") or {}).get("p50_ms")
                log(f"{key} round {r + 1}/{rounds} {name}: {brief} {result.get('error', '')}")
        self.out["scenarios"][key] = {"command": cmd, "rounds": res}

    def nonstream(self) -> None:
        names = list(self.live)
        dur = 1.0 if self.q else None
        self.rounds("ns_c1", names, 2 if self.q else 3, op="load", model="bench-small", concurrency=1,
                    duration=dur or 2.0, warmup=0.3)
        for c in (32, 128):
            self.rounds(f"ns_c{c}", names, 2 if self.q else 3, op="load", model="bench-small", concurrency=c,
                        duration=dur or 3.0, warmup=0.5, timeout=30)

    def streams(self) -> None:
        names = list(self.live)
        self.rounds("stream200_c32", names, 2 if self.q else 3, op="streams", model="bench-d200-p0",
                    concurrency=32, count=32 if self.q else 96, time_cap=30)
        self.rounds("stream200_c32_paced5ms", names, 1 if self.q else 2, op="streams", model="bench-d200-p5",
                    concurrency=32, count=32, time_cap=30)
        self.rounds(f"stream200_c16_paced{PACE_MODEL_MS}ms", names, 1, op="streams",
                    model=f"bench-d200-p{PACE_MODEL_MS}", concurrency=16, count=16, time_cap=30)

    def first_token(self) -> None:
        """Time to first token one stream at a time, contenders in turn, against the bare relay of
        the same round: at 5 ms and a model-like pace, deltas cut mid-word and deltas shaped like
        tokens. 16-delta streams (the first token is decided within the first few)."""
        names = [n for n in self.live if n != "litellm"]
        for pace in (5, PACE_MODEL_MS):
            for shape in ("", "-tok"):
                key = f"first_token_p{pace}{shape}"
                r = self.drive(op="first_token", urls={n: self.url(n) for n in names},
                               model=f"bench-d16-p{pace}{shape}", count=8 if self.q else 30)
                self.out["scenarios"][key] = {"pace_ms": pace, "tokens": bool(shape), "rounds": r}
                log(f"{key}: " + ", ".join(f"{n} {(v.get('extra_ms') or {}).get('p50_ms')}" for n, v in r.items()))

    def agent(self) -> None:
        """Requests shaped like real traffic: a 180-character system prompt, and a coding agent's turn
        (15 KB system prompt, eight tools, 50 KB of tool-call history), non-streaming at 1 and 32
        concurrent and streaming at 32. The same body on every request: turn N of a conversation,
        where whatever depends only on the prompt should already be cached. And at 1 concurrent, a
        conversation that grows as an agent's does (``grow``: 20 turns, each one tool call and its
        result longer than the last, then again from turn 1)."""
        names = [n for n in ("bare-relay", "gp-off", "gp-default", "gp-armed") if n in self.live]
        n = 2 if self.q else 3
        dur = 1.0 if self.q else 3.0
        self.rounds("ns_sys_c32", names, n, op="load", model="bench-sys", concurrency=32, duration=dur,
                    warmup=0.5, timeout=30)
        self.rounds("ns_agent_c1", names, n, op="load", model="bench-agent", concurrency=1, duration=dur,
                    warmup=0.3)
        self.rounds("ns_agent_grow_c1", names, n, op="load", model="bench-agent-grow", concurrency=1,
                    duration=dur, warmup=0.3)
        # The same two at c=1 again, one request at a time with the contenders interleaved: the
        # machine's drift between rounds above is larger than the added latency sought. 1,000 rounds:
        # the latencies' quartiles lie ~0.9 ms apart at c=1, so each median is known to ~0.03 ms
        # (at 400 rounds, ~0.05: the difference of two medians then moved by ~0.07 ms between runs).
        for key, model in (("ns_agent_c1_paired", "bench-agent"), ("ns_agent_grow_c1_paired", "bench-agent-grow")):
            r = self.drive(op="paired", urls={m: self.url(m) for m in names}, model=model, base="gp-off",
                           count=100 if self.q else 1000, verify=self.verify_mode("gp-default"))
            self.out["scenarios"][key] = {"model": model, "contenders": r}
            log(f"{key}: " + ", ".join(f"{m} +{(v.get('extra_ms') or {}).get('p50_ms')} ms" for m, v in r.items()
                                       if isinstance(v, dict)))
        self.rounds("ns_agent_c32", names, n, op="load", model="bench-agent", concurrency=32, duration=dur,
                    warmup=0.5, timeout=30)
        self.rounds("stream_agent_c32", names, n, op="streams", model="bench-agent-d200-p0", concurrency=32,
                    count=32 if self.q else 96, time_cap=30)

    def cpu_per_delta(self) -> None:
        """Proxy utime+stime per delta: paced 1 ms (one frame per read, as real upstreams send) at 100,
        1,000 and 10,000 deltas, and one 10,000-delta burst (no pacing: big reads)."""
        names = [n for n in ("bare-relay", "gp-off", "gp-default", "gp-armed") if n in self.live]
        plan = [("paced", 100, 6 if self.q else 30, "p1"), ("paced", 1000, 1 if self.q else 3, "p1"),
                ("paced", 10_000, 1, "p1"), ("burst", 10_000, 1, "p0")]
        if self.q:
            plan = [p for p in plan if p[1] != 10_000 or p[0] == "burst"]
        rows: dict[str, dict[str, Any]] = {n: {} for n in names}
        for mode, deltas, count, pace in plan:
            for name in names:
                s = self.live[name]
                r = self.drive(op="cpu", url=self.url(name), model=f"bench-d{deltas}-{pace}", count=count, pid=s.pid,
                               time_cap=60)
                rows[name][f"{mode}_{deltas}"] = r
                log(f"cpu {mode} {deltas} {name}: {r.get('us_per_delta')} us/delta ({r.get('cpu_s')} s)")
        self.out["scenarios"]["cpu_per_delta"] = rows

    def judge(self) -> None:
        ub = self.upstream_base
        self.live["gp-judge"] = self.fleet.start("gp-judge", guardproxy_argv(), env=guardproxy_env(ub, policy=JUDGE_POLICY))
        self.out["contenders"]["gp-judge"] = ("guardproxy, default stream guardrails + an llm_judge answered by the "
                                              "fake upstream after 50 ms (bench/policies/judge.toml; judge scenario only)")
        self.drive(op="load", url=self.url("gp-judge"), model="bench-small", concurrency=2, duration=0.5, warmup=0.2)
        n = 2 if self.q else 3
        own = self.drive(op="load", url=self.url("direct"), model=JUDGE_MODEL, concurrency=1,
                         duration=1.0 if self.q else 2.0, warmup=0.2, verify="content")
        self.out["scenarios"]["judge_own_latency"] = own
        self.rounds("judge_ns_c1", ["gp-default", "gp-judge"], n, op="load", model="bench-small", concurrency=1,
                    duration=1.0 if self.q else 2.0, warmup=0.3)
        self.rounds("judge_ns_c32", ["gp-default", "gp-judge"], 2, op="load", model="bench-small", concurrency=32,
                    duration=1.0 if self.q else 2.0, warmup=0.5)
        self.rounds("judge_stream200_c1", ["gp-default", "gp-judge"], 2, op="streams", model="bench-d200-p0",
                    concurrency=1, count=10 if self.q else 20, time_cap=30)
        self.fleet.stop(self.live.pop("gp-judge"))

    def memory(self) -> None:
        """1,000 idle-paced open streams per contender, each in a fresh process (a warm one's freed
        arenas would hide the cost). 100 deltas arrive at once (past every hold-back window), then
        the upstream pauses 20 s; VmRSS is sampled while all are open, then the driver hangs up.
        Twice per contender: all opened at once (the figure holds the peak of 1,000 bursts being
        read before they are checked: freed small objects leave the allocator's arenas in use), and
        50 at a time (what an open stream keeps). The all-at-once figure moves by several KiB from
        one fresh process to the next (how many bursts pile up before they are checked depends on
        the scheduling of the moment): each contender runs AT_ONCE_RUNS times, in alternating
        rounds, and the run with the median figure is reported, the others beside it."""
        n = 200 if self.q else 1000
        names = ("bare-relay", "gp-off", "gp-default", "gp-armed")
        for key, batch in (("memory_idle_streams", 0), ("memory_idle_streams_by_50", 50)):
            runs: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
            for _ in range(1 if batch or self.q else AT_ONCE_RUNS):
                for name in names:
                    runs[name].append(r := self.hold_in_fresh_process(name, n, batch))
                    log(f"{key} {name}: {r.get('kib_per_stream')} KiB/stream, opened {r.get('opened')}/{n}")
            self.out["scenarios"][key] = {name: _median_run(rs) for name, rs in runs.items()}

    def hold_in_fresh_process(self, name: str, n: int, batch: int) -> dict[str, Any]:
        _, argv, env = self.contender_specs()[name]
        s = self.fleet.start(f"{name}-mem", argv, env=env)
        try:
            self.drive(op="load", url=s.url, model="bench-small", concurrency=8, duration=0.5, warmup=0.2)
            self.drive(op="streams", url=s.url, model="bench-d200-p0", concurrency=8, count=16)
            return self.drive(op="hold", url=s.url, model="bench-d110-b100-p20000", n=n, pid=s.pid,
                              open_timeout=60, batch=batch)
        finally:
            self.fleet.stop(s)

    def guard_cost(self) -> None:
        script = ROOT / "bench" / "guard_cost.py"
        if not script.exists():
            self.out["guard_cost"] = None
            return
        log("bench.guard_cost ...")
        p = subprocess.run([sys.executable, "-m", "bench.guard_cost"], cwd=ROOT, capture_output=True, text=True,
                           timeout=300, check=False)
        data: Any = None
        try:
            data = json.loads((RESULTS / "guard_cost.json").read_text())
        except (OSError, ValueError):
            pass
        self.out["guard_cost"] = {"returncode": p.returncode, "table": p.stdout.strip(), "data": data,
                                  "stderr": p.stderr.strip()[-2000:]}

    def holdback(self) -> None:
        """What the guard holds back on real text, horizons against the fixed window (no HTTP)."""
        log("bench.holdback ...")
        p = subprocess.run([sys.executable, "-m", "bench.holdback"], cwd=ROOT, capture_output=True, text=True,
                           timeout=600, check=False)
        data: Any = None
        try:
            data = json.loads((RESULTS / "holdback.json").read_text())
        except (OSError, ValueError):
            pass
        self.out["holdback"] = {"returncode": p.returncode, "table": p.stdout.strip(), "data": data,
                                "stderr": p.stderr.strip()[-2000:]}

    # ---------------------------------------------------------------- run
    def run(self) -> None:
        t0 = time.monotonic()
        try:
            self.start_all()
            self.warm()
            for name in ("nonstream", "streams", "first_token", "agent", "cpu_per_delta", "judge"):
                if self.wanted(name):
                    getattr(self, name)()
            if "litellm" in self.live:
                self.fleet.stop(self.live.pop("litellm"))  # it has no part in the scenarios below
            if self.wanted("memory"):
                self.memory()
        finally:
            self.drive.close()
            self.fleet.stop_all()
        if self.wanted("guard_cost"):
            self.guard_cost()
        if self.wanted("holdback"):
            self.holdback()
        self.out["elapsed_s"] = round(time.monotonic() - t0, 1)
        self.out["peers_requested"] = bool(self.args.peers)
        self.out["quick"] = bool(self.q)
        report.write(self.out, RESULTS)
        log(f"done in {self.out['elapsed_s']} s: bench/results/latest.md")


def _median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The run with the median KiB per stream, with every run's figure (``runs_kib``)."""
    figures = [r.get("kib_per_stream") for r in runs]
    ranked = sorted((r for r in runs if r.get("kib_per_stream") is not None), key=lambda r: r["kib_per_stream"])
    median = dict(ranked[(len(ranked) - 1) // 2] if ranked else runs[0])
    median["runs_kib"] = figures
    return median


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__)
    parser.add_argument("--peers", action="store_true", help="also run LiteLLM's proxy (installs it under bench/.peers)")
    parser.add_argument("--quick", action="store_true", help="short smoke run; not for publishing")
    parser.add_argument("--only", nargs="+", choices=SCENARIOS, metavar="SCENARIO",
                        help=f"run only these scenarios (of {', '.join(SCENARIOS)}); writes the same reports")
    args = parser.parse_args(argv)
    # SIGTERM (and SIGINT, which a background job may inherit as ignored) unwind through the
    # ``finally`` that stops every server, instead of orphaning them.
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda signum, _frame: sys.exit(128 + signum))
    raise_fd_limit()
    Bench(args).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())

