"""What the input guardrails add to a growing agent conversation (``python -m bench.input_cost``).

In process, one ``Exchange`` per request against an upstream that answers at once from memory (as
``bench.request_cost``): the agent's conversation (15 KB system prompt, eight tools, 50 KB of earlier
history) grows turn by turn, each turn one more read_file call and its result, and a user message
every fifth turn. Two contenders take the same turns, interleaved: the shipped default policy
(``gp-default``: no input guardrail, the request sent before it is read) and the same policy plus
four input guardrails on user, tool-result and system texts (secrets, pii, hidden_text to redact,
a deny pattern to reject). Each round is a new conversation (its texts never seen before); the
figure is the median over rounds of the wall time of the 50th turn, when the checks' cache holds the
49 turns before it and only the new turn is read. ``cold``: the 50th turn's body sent to a fresh
proxy (nothing cached: every text of the conversation checked). The upstream answers at once, so
what the early send saves in a live proxy (reading the body while the upstream works) is not
credited to gp-default here."""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import statistics
import time

from bench.common import _agent_body, completion_body
from bench.request_cost import _Answer, _drop, _scope, _Upstream
from config.policy import default_policy_text, parse_policy
from config.settings import Settings
from proxy.drive.services import Services
from proxy.edge.app import create_app
from proxy.edge.exchange import Exchange

MODEL = "bench-agent"
TURNS = 50
INPUT = """
[[input_guardrails]]
id = "no-secrets-in"
kind = "secrets"
action = "redact"
parts = ["user", "tool_result", "system"]

[[input_guardrails]]
id = "no-pii-in"
kind = "pii"
action = "redact"
parts = ["user", "tool_result"]

[[input_guardrails]]
id = "no-hidden-in"
kind = "hidden_text"
action = "redact"
parts = ["user", "tool_result", "system"]

[[input_guardrails]]
id = "no-injection"
kind = "regex"
patterns = ["ignore (all )?previous instructions"]
flags = ["i"]
action = "reject"
parts = ["tool_result"]
"""


def conversation(seed: int) -> list[bytes]:
    """The bodies of turns 1..TURNS of one conversation; ``seed`` makes its new texts its own."""
    body = json.loads(_agent_body(MODEL, False))
    turns: list[bytes] = []
    for turn in range(TURNS):
        turns.append(json.dumps(body, separators=(",", ":")).encode())
        call_id = f"call_{seed}_{turn:04d}"
        body["messages"] += [
            {"role": "assistant", "content": None, "tool_calls": [{"id": call_id, "type": "function", "function": {
                "name": "read_file", "arguments": json.dumps({"file_path": f"/workspace/tests/test_{turn}.py"})}}]},
            {"role": "tool", "tool_call_id": call_id,
             "content": "\n".join(f"def test_{seed}_{turn}_{k}():\n    assert helper_{k}({turn}) == {k + turn + seed}"
                                  for k in range(10))}]
        if turn % 5 == 4:
            body["messages"].append({"role": "user", "content": f"Round {seed}: now look at test {turn + 1}, "
                                                                "and mail bob at the team address if it fails."})
    return turns


class _Memory(_Upstream):
    """``bench.request_cost``'s upstream, answering at once."""

    async def request(self, method: str, url: str, headers: object, body: bytes | None, *,
                      decode: bool = False) -> _Answer:
        await asyncio.sleep(0)
        return _Answer(self._body)


def _services(policy_text: str) -> Services:
    policy = parse_policy(policy_text, source="<bench>")
    services = create_app(Settings(), policy).services
    services.upstream = _Memory(completion_body(MODEL))  # type: ignore[assignment]
    return services


async def _timed(services: Services, body: bytes) -> float:
    t0 = time.perf_counter()
    await Exchange(services, _scope(body), body, _drop).run()
    return time.perf_counter() - t0


async def _run(rounds: int) -> None:
    import structlog

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(30))
    base = default_policy_text()
    off, on = _services(base), _services(base + INPUT)
    for turn in conversation(10_000):  # warm: imports, first-use tables, the canary's prompt index
        await _timed(off, turn)
        await _timed(on, turn)
    gc.freeze()
    last: dict[str, list[float]] = {"off": [], "on": [], "cold": []}
    for r in range(rounds):
        turns = conversation(r)
        for k, body in enumerate(turns):
            order = ("off", "on") if (r + k) % 2 else ("on", "off")
            for name in order:
                elapsed = await _timed(off if name == "off" else on, body)
                if k == TURNS - 1:
                    last[name].append(elapsed)
        fresh = _services(base + INPUT)
        await _timed(fresh, conversation(20_000 + r)[0])  # (its first-use setup, not the measured request)
        last["cold"].append(await _timed(fresh, turns[-1]))
    a, b, c = (statistics.median(last[n]) * 1e3 for n in ("off", "on", "cold"))
    size = len(conversation(0)[-1])
    print(f"turn {TURNS}, body {size / 1024:,.0f} KiB, {rounds} conversations")
    print("| contender | p50 ms at turn 50 | added p50 ms |")
    print("|:---|---:|---:|")
    print(f"| gp-default (no input guardrail) | {a:.3f} | |")
    print(f"| + 4 input guardrails, cached turns 1-49 | {b:.3f} | {b - a:.3f} |")
    print(f"| + 4 input guardrails, nothing cached | {c:.3f} | {c - a:.3f} |")


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.input_cost", description=__doc__)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    asyncio.run(_run(args.rounds))


if __name__ == "__main__":
    main()
