"""What the input guardrails add to a growing agent conversation (``python -m bench.input_cost``).

In process, one ``Exchange`` per request against an upstream that answers at once from memory (as
``bench.request_cost``): the agent's conversation (15 KB system prompt, eight tools, 50 KB of earlier
history) grows turn by turn, each turn one more read_file call and its result, and a user message
every fifth turn. Two contenders take the same turns, interleaved: the shipped default policy
(``gp-default``: no input guardrail, the request sent before it is read) and the same policy plus
four input guardrails on user, tool-result and system texts (secrets, pii, hidden_text to redact,
a deny pattern to reject), once reading adjacent text parts of a message as one text (``joined``, as
shipped) and once reading each part alone (``one by one``: the reading before, the same code
otherwise). Each round is a new conversation (its texts never seen before); the figure is the
median over rounds of the wall time of the 50th turn, when the checks' cache holds the 49 turns
before it and only the new turn is read. ``cold``: the 50th turn's body sent to a fresh proxy
(nothing cached: every text of the conversation checked). ``--parts N`` sends each user message and
tool result (the history's and the new turns') as a list of N text parts (Claude Code sends its
reminders and the user's words as separate parts); 1 sends strings, where nothing is joined. The upstream answers at once, so
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
from proxy.drive.input_guard import InputGuard
from proxy.drive.services import Services
from proxy.edge.app import create_app
from proxy.edge.exchange import Exchange
from proxy.wire.input_parts import InputText

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


def _cut(text: str, parts: int) -> str | list[dict[str, str]]:
    """``text`` as ``parts`` text parts of about equal length (a string when 1)."""
    if parts == 1 or not isinstance(text, str):
        return text
    step = -(-len(text) // parts)
    return [{"type": "text", "text": text[i:i + step]} for i in range(0, len(text), step)]


def conversation(seed: int, parts: int = 1) -> list[bytes]:
    """The bodies of turns 1..TURNS of one conversation; ``seed`` makes its new texts its own."""
    body = json.loads(_agent_body(MODEL, False))
    for m in body["messages"]:
        if m["role"] in ("user", "tool"):
            m["content"] = _cut(m["content"], parts)
    turns: list[bytes] = []
    for turn in range(TURNS):
        turns.append(json.dumps(body, separators=(",", ":")).encode())
        call_id = f"call_{seed}_{turn:04d}"
        result = "\n".join(f"def test_{seed}_{turn}_{k}():\n    assert helper_{k}({turn}) == {k + turn + seed}"
                           for k in range(10))
        body["messages"] += [
            {"role": "assistant", "content": None, "tool_calls": [{"id": call_id, "type": "function", "function": {
                "name": "read_file", "arguments": json.dumps({"file_path": f"/workspace/tests/test_{turn}.py"})}}]},
            {"role": "tool", "tool_call_id": call_id, "content": _cut(result, parts)}]
        if turn % 5 == 4:
            body["messages"].append({"role": "user", "content": _cut(
                f"Round {seed}: now look at test {turn + 1}, and mail bob at the team address if it fails.", parts)})
    return turns


class _Memory(_Upstream):
    """``bench.request_cost``'s upstream, answering at once."""

    async def request(self, method: str, url: str, headers: object, body: bytes | None, *,
                      decode: bool = False) -> _Answer:
        await asyncio.sleep(0)
        return _Answer(self._body)


class _OneByOne(InputGuard):
    """Each text read alone: the reading before adjacent parts were joined."""

    @staticmethod
    def units(texts: list[InputText]) -> list[list[int]]:
        return [[i] for i in range(len(texts))]


def _services(policy_text: str, one_by_one: bool = False) -> Services:
    policy = parse_policy(policy_text, source="<bench>")
    services = create_app(Settings(), policy).services
    services.upstream = _Memory(completion_body(MODEL))  # type: ignore[assignment]
    if one_by_one:  # what input_guard_of builds, read part by part
        services.guard.once(InputGuard, _OneByOne, services.guard.input_checks)
    return services


async def _timed(services: Services, body: bytes) -> float:
    t0 = time.perf_counter()
    await Exchange(services, _scope(body), body, _drop).run()
    return time.perf_counter() - t0


_LABELS = {"off": "gp-default (no input guardrail)",
           "one": "+ 4 input guardrails, one by one, cached turns 1-49",
           "on": "+ 4 input guardrails, joined, cached turns 1-49",
           "one-cold": "+ 4 input guardrails, one by one, nothing cached",
           "on-cold": "+ 4 input guardrails, joined, nothing cached"}


async def _run(rounds: int, parts: int) -> None:
    import structlog

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(30))
    base = default_policy_text()
    proxies = {"off": _services(base), "one": _services(base + INPUT, True), "on": _services(base + INPUT)}
    for turn in conversation(10_000, parts):  # warm: imports, first-use tables, the canary's prompt index
        for services in proxies.values():
            await _timed(services, turn)
    gc.freeze()
    last: dict[str, list[float]] = {name: [] for name in _LABELS}
    names = list(proxies)
    for r in range(rounds):
        turns = conversation(r, parts)
        for k, body in enumerate(turns):
            shift = (r + k) % len(names)
            for name in names[shift:] + names[:shift]:
                elapsed = await _timed(proxies[name], body)
                if k == TURNS - 1:
                    last[name].append(elapsed)
        for name, one in (("one-cold", True), ("on-cold", False))[::1 if r % 2 else -1]:
            fresh = _services(base + INPUT, one)
            await _timed(fresh, conversation(20_000 + r, parts)[0])  # (its first-use setup, not measured)
            last[name].append(await _timed(fresh, turns[-1]))
    p50 = {name: statistics.median(times) * 1e3 for name, times in last.items()}
    size = len(conversation(0, parts)[-1])
    print(f"turn {TURNS}, body {size / 1024:,.0f} KiB, {parts} text part(s) per user message and tool result, "
          f"{rounds} conversations")
    print("| contender | p50 ms at turn 50 | added p50 ms |")
    print("|:---|---:|---:|")
    for name, label in _LABELS.items():
        added = "" if name == "off" else f"{p50[name] - p50['off']:.3f}"
        print(f"| {label} | {p50[name]:.3f} | {added} |")


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.input_cost", description=__doc__)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--parts", type=int, nargs="+", default=[1, 3],
                        help="text parts per user message and tool result, one table each (default: 1 3)")
    args = parser.parse_args()
    for parts in args.parts:
        asyncio.run(_run(args.rounds, parts))


if __name__ == "__main__":
    main()
