"""Read-before-write folds the conversation's history on every tool call: is it linear in the history?
(``python -m bench.history_fold``)

An agent conversation of N turns (each a ``read_file`` call on a real file of a temporary workspace
and its result, in Chat Completions form), then one ``write_file`` call assessed against it: the time
to read the request (``parse_request``, which also builds the history), the time to assess the call
(which folds the history, resolving each path through the filesystem), and both per turn. Linear
means the per-turn column stays flat as N grows. Then a message of several write calls: assessed
one call at a time (a fold per call, as before) and together (``assess_all``: one fold for the
message). Median of several runs.
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from config.policy import ToolsPolicy
from guardrails.datamodel import ToolCall
from guardrails.tools.assessor import ToolAssessor
from proxy.wire.openai_chat import OpenAIChat

TURNS = (25, 50, 100, 200, 400)
CALLS = 4
"""Tool calls in the assessed message (agents often write several files in one turn)."""


def _body(root: Path, turns: int) -> dict[str, Any]:
    msgs: list[dict[str, Any]] = [{"role": "system", "content": "You are a coding agent."},
                                  {"role": "user", "content": "Fix the parser."}]
    for t in range(turns):
        path = root / f"src/module_{t % 50}.py"
        msgs.append({"role": "assistant", "content": None, "tool_calls": [{
            "id": f"call_{t}", "type": "function",
            "function": {"name": "read_file", "arguments": json.dumps({"file_path": str(path)})}}]})
        msgs.append({"role": "tool", "tool_call_id": f"call_{t}", "content": f"def f{t}():\n    return {t}\n" * 8})
    return {"model": "m", "messages": msgs}


def _median_us(fn: Any, runs: int) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e6


def main() -> None:
    wire = OpenAIChat()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp).resolve()
        (root / "src").mkdir()
        for i in range(50):
            (root / f"src/module_{i}.py").write_text("x = 1\n")
        assessor = ToolAssessor(ToolsPolicy(workspace_root=str(root)))
        call = ToolCall("c", "write_file", json.dumps({"file_path": str(root / "src/module_7.py"),
                                                       "content": "x = 2\n"}))
        calls = [ToolCall(f"c{i}", "write_file", json.dumps({"file_path": str(root / f"src/module_{i}.py"),
                                                             "content": "x = 2\n"})) for i in range(CALLS)]
        print(f"| turns | request bytes | parse_request µs | assess µs | parse µs/turn | assess µs/turn | decision "
              f"| {CALLS} calls, one fold per call µs | {CALLS} calls, one fold µs |")
        print("|---:|---:|---:|---:|---:|---:|:---|---:|---:|")
        for turns in TURNS:
            body = _body(root, turns)
            size = len(json.dumps(body))
            parse = _median_us(lambda body=body: list(wire.parse_request(body, stream=False).history), 15)
            history = list(wire.parse_request(body, stream=False).history)
            verdict = assessor.assess(call, history)
            assess = _median_us(lambda history=history: assessor.assess(call, history), 15)
            each = _median_us(lambda history=history: [assessor.assess(c, history) for c in calls], 7)
            once = _median_us(lambda history=history: assessor.assess_all(calls, history), 7)
            print(f"| {turns} | {size:,} | {parse:,.0f} | {assess:,.0f} | {parse / turns:.2f} | "
                  f"{assess / turns:.2f} | {verdict.decision} | {each:,.0f} | {once:,.0f} |")


if __name__ == "__main__":
    main()
