"""What the fake upstream sends and the driver checks, in one place, so both agree byte for byte.

The scenario rides in the model name, because that is the one field every contender forwards
(LiteLLM forwards neither unknown headers nor unknown body fields): ``bench-d200-p5-l50`` means 200
deltas, 5 ms between deltas, 50 ms before the first byte; ``b20`` sends the first 20 frames at once
before pacing the rest (an answer that is open mid-way). A ``judge`` token makes the answer ``PASS``
(the LLM judge's verdict). Unset fields default to 20 deltas, no pacing, no latency.
"""

from __future__ import annotations

import json
import os
import re
import resource
import socket
from dataclasses import dataclass

CREATED = 1_700_000_000
COMPLETION_ID = "chatcmpl-bench"

# Clean prose: no digits, e-mail addresses, key-like runs or phrases any shipped guardrail looks for,
# so a clean stream never trips and every contender does the same work.
_PROSE = (
    "The deployment finished in a few minutes, and the health checks went green right after. "
    "If the cache misses again, look at the eviction policy before scaling the workers out. "
    "We measured the latency at the edge and inside the service; most of it was serialization. "
    "Small reviewable changes land faster, and careful tests keep them from coming back later. "
)


@dataclass(frozen=True, slots=True)
class Shape:
    deltas: int = 20
    pace_ms: float = 0.0
    latency_ms: float = 0.0
    judge: bool = False
    burst: int = 1
    request: str = "small"
    """The request the driver sends: ``small`` (two short messages), ``sys`` (a 180-character system
    prompt) or ``agent`` (a coding agent's turn: 15 KB system prompt, tools, 50 KB of history)."""
    tokens: bool = False
    """Deltas shaped like a model's tokens (`` deployment``: a word and the space before it), from
    ``tok`` in the model name; otherwise 3-8 characters cut anywhere, mid-word mostly."""
    grow: bool = False
    """``grow`` in the model name: the driver sends an agent conversation turn by turn
    (``request_bodies``), each body the previous one with one more tool call and result."""


def parse_model(model: str) -> Shape:
    deltas, pace, latency, judge, burst, request, tokens = 20, 0.0, 0.0, False, 1, "small", False
    grow = False
    for part in model.split("-"):
        if part == "judge":
            judge = True
        elif part == "tok":
            tokens = True
        elif part == "grow":
            grow = True
        elif part in ("sys", "agent"):
            request = part
        elif len(part) > 1 and part[0] in "dplb" and part[1:].replace(".", "", 1).isdigit():
            value = float(part[1:])
            if part[0] == "d":
                deltas = max(1, int(value))
            elif part[0] == "p":
                pace = value
            elif part[0] == "b":
                burst = max(1, int(value))
            else:
                latency = value
    return Shape(deltas, pace, latency, judge, burst, request, tokens, grow)


def deltas_for(n: int) -> list[str]:
    """``n`` deltas of 3-8 characters, deterministic (no RNG state shared across processes)."""
    out: list[str] = []
    i = 0
    text = _PROSE
    while len(out) < n:
        size = 3 + (len(out) * 7 + 3) % 6
        if i + size > len(text):
            i = 0
        out.append(text[i:i + size])
        i += size
    return out


def token_deltas_for(n: int) -> list[str]:
    """``n`` deltas shaped like tokens: each word of the prose with the space before it."""
    words = re.findall(r"\s*\S+", _PROSE)
    return [words[i % len(words)] for i in range(n)]


def texts_for(shape: Shape) -> list[str]:
    if shape.judge:
        return ["PASS"]
    return token_deltas_for(shape.deltas) if shape.tokens else deltas_for(shape.deltas)


def content_for(shape: Shape) -> str:
    return "".join(texts_for(shape))


def _chunk(model: str, delta: dict[str, str], finish: str | None) -> bytes:
    payload = {"id": COMPLETION_ID, "object": "chat.completion.chunk", "created": CREATED, "model": model,
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return b"data: " + json.dumps(payload, separators=(",", ":")).encode() + b"\n\n"


def stream_frames(model: str) -> list[bytes]:
    """The SSE frames of one OpenAI chat stream, ``[DONE]`` included."""
    shape = parse_model(model)
    texts = texts_for(shape)
    frames = [_chunk(model, {"role": "assistant", "content": texts[0]}, None)]
    frames += [_chunk(model, {"content": t}, None) for t in texts[1:]]
    frames.append(_chunk(model, {}, "stop"))
    frames.append(b"data: [DONE]\n\n")
    return frames


def completion_body(model: str) -> bytes:
    shape = parse_model(model)
    text = content_for(shape)
    body = {"id": COMPLETION_ID, "object": "chat.completion", "created": CREATED, "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 12, "completion_tokens": max(1, len(text) // 4),
                      "total_tokens": 12 + max(1, len(text) // 4)}}
    return json.dumps(body, separators=(",", ":")).encode()


def request_body(model: str, stream: bool) -> bytes:
    kind = parse_model(model).request
    if kind == "agent":
        return _agent_body(model, stream)
    system = _SYS_180 if kind == "sys" else "You are a concise assistant for a benchmark."
    body = {"model": model, "stream": stream, "temperature": 0,
            "messages": [{"role": "system", "content": system},
                         {"role": "user", "content": "Say something short about deployments."}]}
    return json.dumps(body, separators=(",", ":")).encode()


GROW_TURNS = 20
"""Turns of the growing agent conversation (``grow``) before it starts over: 66 KB to 84 KB."""


def request_bodies(model: str, stream: bool) -> list[bytes]:
    """What the driver sends, in order and then again: the one body of ``request_body``, or for a
    ``grow`` agent model the turns of one conversation (turn 1 is ``request_body``'s; each later
    turn appends the assistant's next read_file call and its result, as a coding agent does)."""
    shape = parse_model(model)
    if not (shape.grow and shape.request == "agent"):
        return [request_body(model, stream)]
    body = json.loads(_agent_body(model, stream))
    turns: list[bytes] = []
    for turn in range(GROW_TURNS):
        turns.append(json.dumps(body, separators=(",", ":")).encode())
        call_id = f"call_grow_{turn:04d}"
        body["messages"] += [
            {"role": "assistant", "content": None, "tool_calls": [{"id": call_id, "type": "function", "function": {
                "name": "read_file", "arguments": json.dumps({"file_path": f"/workspace/tests/test_{turn}.py"})}}]},
            {"role": "tool", "tool_call_id": call_id,
             "content": "\n".join(f"def test_{turn}_{k}():\n    assert helper_{k}({turn}) == {k + turn}"
                                  for k in range(10))}]
    return turns


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def raise_fd_limit(want: int = 16384) -> int:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = want if hard == resource.RLIM_INFINITY else min(want, hard)
    if soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def install_uvloop() -> str:
    """Use uvloop when it is installed (it comes with ``uvicorn[standard]``); report which loop runs."""
    try:
        import uvloop
    except ImportError:
        return "asyncio"
    import asyncio

    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    return "uvloop"


def proc_cpu_s(pid: int) -> float:
    """utime + stime of ``pid`` in seconds (clock-tick resolution, usually 10 ms)."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def proc_rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


_SYS_180 = ("You are Atlas, the release assistant of a small platform team. Answer in plain sentences, "
            "cite the runbook section you relied on, and never promise dates you cannot verify.")

# A coding agent's turn, built deterministically: the words are varied enough that the canary's index
# is not trivially small, and none of the answer prose (``_PROSE``) occurs in it, so clean answers
# never trip the canary. Sizes follow what real agents send (their system prompts are 10-30 KB).
_AGENT_WORDS = ("workspace", "repository", "function", "module", "refactor", "test", "suite", "fixture",
                "command", "shell", "terminal", "directory", "file", "edit", "patch", "diff", "commit",
                "branch", "review", "lint", "format", "type", "error", "warning", "import", "package",
                "dependency", "version", "build", "compile", "runtime", "config", "setting", "path",
                "absolute", "relative", "symlink", "permission", "sandbox", "approval", "network",
                "request", "response", "stream", "token", "budget", "context", "window", "summary")


def _agent_prose(seed: int, chars: int) -> str:
    out: list[str] = []
    n, i = 0, seed
    while n < chars:
        words = [_AGENT_WORDS[(i * 7 + k * 13) % len(_AGENT_WORDS)] for k in range(6 + i % 9)]
        sentence = f"Rule {i}: always check the " + " ".join(words) + " before you act."
        out.append(sentence)
        n += len(sentence) + 1
        i += 1
    return " ".join(out)[:chars]


def _agent_tools() -> list[dict[str, object]]:
    def tool(name: str, desc: str, props: dict[str, str]) -> dict[str, object]:
        return {"type": "function", "function": {
            "name": name, "description": desc,
            "parameters": {"type": "object", "required": list(props),
                           "properties": {k: {"type": "string", "description": v} for k, v in props.items()}}}}

    return [tool("read_file", "Read a file from the workspace.", {"file_path": "Absolute path to read."}),
            tool("write_file", "Write a whole file.", {"file_path": "Absolute path.", "content": "New content."}),
            tool("replace", "Replace text in a file.", {"file_path": "Absolute path.", "old_string": "Exact text.",
                                                        "new_string": "Replacement text."}),
            tool("list_directory", "List a directory.", {"dir_path": "Absolute directory path."}),
            tool("glob", "Find files by glob pattern.", {"pattern": "Glob, e.g. src/**/*.py."}),
            tool("search_file_content", "Search file contents with a regex.", {"pattern": "Regex to search."}),
            tool("run_shell_command", "Run a shell command.", {"command": "The command line.",
                                                              "description": "Why it is run."}),
            tool("web_fetch", "Fetch a URL.", {"prompt": "What to fetch and why."})]


def _agent_history(chars: int) -> list[dict[str, object]]:
    msgs: list[dict[str, object]] = [{"role": "user", "content": "Fix the failing tests in the parser module."}]
    turn = 0
    while sum(len(json.dumps(m)) for m in msgs) < chars:
        call_id = f"call_{turn:04d}"
        path = f"/workspace/src/pkg/module_{turn % 37}.py"
        msgs.append({"role": "assistant", "content": None, "tool_calls": [{
            "id": call_id, "type": "function",
            "function": {"name": "read_file", "arguments": json.dumps({"file_path": path})}}]})
        source = "\n".join(f"def helper_{turn}_{k}(value):\n    return value * {k} + {turn}" for k in range(12))
        msgs.append({"role": "tool", "tool_call_id": call_id, "content": source})
        turn += 1
    msgs.append({"role": "user", "content": "Now say in one paragraph what you found."})
    return msgs


def _agent_body(model: str, stream: bool) -> bytes:
    body = {"model": model, "stream": stream, "temperature": 0, "tools": _agent_tools(),
            "messages": [{"role": "system", "content": _agent_prose(1, 15_000)}, *_agent_history(50_000)]}
    return json.dumps(body, separators=(",", ":")).encode()
