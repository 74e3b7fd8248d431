"""What the shared state costs (``proxy.state``), side by side in one run.

Run: ``.venv/bin/python -m bench.state_cost [--rounds 5] [--quick]``. Needs ``valkey-server`` or
``redis-server`` on PATH (``make state-deps``); without one the Valkey rows are left out, saying so.

1. **A lookup** on an agent-shaped chained turn: a 12 KB developer message (a coding agent's
   instructions) held under the previous answer's id; per turn the edge recalls it (``recall``) and
   remembers the new answer's id (``remember_turn``). Timed in one process, per engine: in memory,
   SQLite (the workers' runtime file, its calls in the store's thread as shipped and inline on the loop,
   for the choice; and a durable file named by ``sqlite:///``), and
   Valkey on loopback. Engines alternate round by round; medians and p99 over every turn.
2. **Requests per second** of chained Responses turns (unary, 16 concurrent, each naming the answer
   before it) through ``serve`` (1 worker, in memory), ``serve --workers 2`` (the embedded SQLite),
   and 1 and 2 workers on Valkey, against the stateful fake upstream; contenders alternate round by
   round. The load driver, the fake upstream, Valkey and the proxies share the machine's cores.

Writes bench/results/state_cost.json and prints Markdown tables.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from bench.run import log, machine
from guardrails.datamodel import RequestView
from proxy.drive.held_prompts import HeldPrompts
from proxy.state.base import Budgets, Store
from proxy.state.memory import MemoryStore
from proxy.state.seal import Sealer
from proxy.state.sqlite import SqliteStore
from proxy.wire.openai_responses import OpenAIResponses

RESULTS = Path(__file__).parent / "results" / "state_cost.json"
DEVELOPER = ("You are a coding agent working in the user's repository. " * 220)[:12_000]
BUDGETS = Budgets(16 << 20, 64 << 20)
SCOPE = "b" * 32


class _InlineSqlite(SqliteStore):
    """The same engine with its calls made on the event loop (the alternative to its thread)."""

    async def get(self, scope: str, key: str) -> list[bytes] | None:
        return self._get(scope, key)

    async def put(self, scope: str, key: str, members: Any, ttl_s: float, *, join: bool = False) -> bool:
        return self._put(scope, key, dict(members), ttl_s, join)


def _view(prev: str | None) -> RequestView:
    body: dict[str, Any] = {"model": "m", "input": [{"role": "developer", "content": DEVELOPER},
                                                    {"role": "user", "content": "run the tests"}]}
    if prev is not None:
        body["previous_response_id"] = prev
    return OpenAIResponses().parse_request(body, stream=False)


async def _turns(held: HeldPrompts, tag: str, n: int) -> list[float]:
    """``n`` chained turns: recall the previous answer's texts, remember the new answer's. Seconds each."""
    out = []
    prev = f"{tag}-0"
    await held.remember_turn(SCOPE, _view(None), (), (prev,))
    for i in range(1, n + 1):
        view = _view(prev)
        t = time.perf_counter()
        recalled, missing = await held.recall(SCOPE, (f"response:{prev}",))
        prev = f"{tag}-{i}"
        await held.remember_turn(SCOPE, view, recalled, (prev,))
        out.append(time.perf_counter() - t)
        assert not missing and recalled == (DEVELOPER,)
    return out


def _pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


async def lookups(rounds: int, per_round: int, valkey_url: str | None, tmp: Path) -> dict[str, Any]:
    stores: dict[str, Store] = {
        "in memory": MemoryStore(BUDGETS),
        "SQLite (workers' runtime file, store thread: shipped)": SqliteStore(str(tmp / "a.db"), BUDGETS,
                                                                             busy_timeout_s=1.0, durable=False),
        "SQLite (the same, inline on the loop)": _InlineSqlite(str(tmp / "b.db"), BUDGETS, busy_timeout_s=1.0,
                                                               durable=False),
        "SQLite (sqlite:/// path, durable)": SqliteStore(str(tmp / "c.db"), BUDGETS, busy_timeout_s=1.0),
    }
    if valkey_url is not None:
        from proxy.state.valkey import ValkeyStore
        stores["Valkey (loopback)"] = ValkeyStore(valkey_url, BUDGETS, timeout_s=1.0)
    held = {name: HeldPrompts(s, Sealer(None, seal=False), timeout_s=5.0) for name, s in stores.items()}
    sealed = {f"{name}, sealed": HeldPrompts(s, Sealer(os.urandom(32), seal=True), timeout_s=5.0)
              for name, s in stores.items() if s.shared and "shipped" in name or "Valkey" in name}
    held.update(sealed)
    times: dict[str, list[float]] = {name: [] for name in held}
    for r in range(rounds):
        for name, h in held.items():
            times[name] += await _turns(h, f"r{r}-{abs(hash(name))}", per_round)
        log(f"lookups round {r + 1}/{rounds}")
    for s in stores.values():
        await s.close()
    return {name: {"median_us": round(statistics.median(t) * 1e6, 1), "p99_us": round(_pct(t, 0.99) * 1e6, 1),
                   "turns": len(t)} for name, t in times.items()}


# ------------------------------------------------------------------ requests per second
async def _load(url: str, key: str, chains: list[str], concurrency: int, duration: float) -> tuple[int, int]:
    ok = errors = 0
    end = time.monotonic() + duration
    async with httpx.AsyncClient(base_url=url, headers={"authorization": f"Bearer {key}"}, timeout=30) as client:
        async def worker(i: int) -> None:
            nonlocal ok, errors
            prev = chains[i]
            while time.monotonic() < end:
                r = await client.post("/v1/responses", json={
                    "model": "m", "previous_response_id": prev,
                    "input": [{"role": "user", "content": "run the tests"}]})
                if r.status_code == 200:
                    ok += 1
                    prev = r.json()["id"]
                else:
                    errors += 1
            chains[i] = prev
        await asyncio.gather(*(worker(i) for i in range(concurrency)))
    return ok, errors


def _chains(url: str, key: str, n: int) -> list[str]:
    out = []
    with httpx.Client(base_url=url, headers={"authorization": f"Bearer {key}"}, timeout=30) as client:
        for _ in range(n):
            r = client.post("/v1/responses", json={"model": "m", "input": [
                {"role": "developer", "content": DEVELOPER}, {"role": "user", "content": "hello"}]})
            r.raise_for_status()
            out.append(r.json()["id"])
    return out


def throughput(rounds: int, duration: float, valkey_url: str | None, tmp: Path) -> dict[str, Any]:
    from tests.fakes.process import ProxyProcess
    from tests.fakes.stateful import StatefulUpstream
    policy = tmp / "policy.toml"
    policy.write_text('[[stream_guardrails]]\nid = "leak"\nkind = "canary"\naction = "replace"\n'
                      'replacement = "[withheld]"\nunseen_prompt = "refuse"\n')
    contenders: dict[str, tuple[tuple[str, ...], dict[str, str]]] = {
        "1 worker, in memory": ((), {}),
        "2 workers, embedded SQLite": (("--workers", "2"), {}),
    }
    if valkey_url is not None:
        contenders["1 worker, Valkey"] = ((), {"GUARDPROXY_STATE_URL": valkey_url})
        contenders["2 workers, Valkey"] = (("--workers", "2"), {"GUARDPROXY_STATE_URL": valkey_url})
    concurrency = 16
    with StatefulUpstream() as up:
        procs = {name: ProxyProcess(up.url, *args, GUARDPROXY_POLICY=str(policy), GUARDPROXY_LOG_LEVEL="warning",
                                    GUARDPROXY_STATE_TIMEOUT_S="1", **env)
                 for name, (args, env) in contenders.items()}
        try:
            for p in procs.values():
                p.start(timeout=120)
            # A credential per contender: two on one Valkey would share a scope, and one's 12 KB a turn
            # would push the other's chains out of its 16 MiB budget between their rounds.
            keys = {name: f"sk-bench-{i}" for i, name in enumerate(procs)}
            chains = {name: _chains(p.url, keys[name], concurrency) for name, p in procs.items()}
            rps: dict[str, list[float]] = {name: [] for name in procs}
            errors: dict[str, int] = dict.fromkeys(procs, 0)
            for r in range(rounds):
                for name, p in procs.items():
                    ok, bad = asyncio.run(_load(p.url, keys[name], chains[name], concurrency, duration))
                    rps[name].append(ok / duration)
                    errors[name] += bad
                    log(f"round {r + 1}/{rounds} {name}: {ok / duration:.1f} req/s, {bad} errors")
        finally:
            for p in procs.values():
                if p.proc is not None:
                    p.stop()
    base = statistics.median(rps["1 worker, in memory"]) or 1.0
    return {name: {"median_rps": round(statistics.median(v), 1), "vs_memory": round(statistics.median(v) / base, 2),
                   "rounds": [round(x, 1) for x in v], "errors": errors[name]} for name, v in rps.items()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    per_round, duration = (100, 1.5) if args.quick else (300, 4.0)
    binary = shutil.which("valkey-server") or shutil.which("redis-server")
    out: dict[str, Any] = {"machine": machine(), "loadavg_before": os.getloadavg()[0],
                           "time": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    with tempfile.TemporaryDirectory(prefix="gp-state-bench-") as d:
        tmp = Path(d)
        server = None
        if binary is None:
            log("NO valkey-server OR redis-server ON PATH: the Valkey rows are left out (make state-deps)")
        else:
            from tests.fakes.valkey import ValkeyServer
            server = ValkeyServer().start()
        try:
            url = server.url if server is not None else None
            out["lookup"] = asyncio.run(lookups(args.rounds, per_round, url, tmp))
            out["throughput"] = throughput(args.rounds, duration, url, tmp)
        finally:
            if server is not None:
                server.kill()
    out["loadavg_after"] = os.getloadavg()[0]
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(out, indent=2))
    print("| store | lookup + remember, median µs | p99 µs |\n|---|---|---|")
    for name, v in out["lookup"].items():
        print(f"| {name} | {v['median_us']} | {v['p99_us']} |")
    print("\n| proxies | chained turns/s (median) | vs 1 worker in memory | errors |\n|---|---|---|---|")
    for name, v in out["throughput"].items():
        print(f"| {name} | {v['median_rps']} | {v['vs_memory']}x | {v['errors']} |")
    print(f"\nload average {out['loadavg_before']:.1f} before, {out['loadavg_after']:.1f} after", file=sys.stderr)


if __name__ == "__main__":
    main()
