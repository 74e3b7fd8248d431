"""CPU cost per streamed frame of SSE framing (``SSESplitter.feed`` + ``parse_fields``), the current
code side by side with another revision of ``proxy/wire/sse.py`` in the same run.

Run: ``.venv/bin/python -m bench.sse_split [REV]`` (REV defaults to ``main``; it is read with
``git show REV:proxy/wire/sse.py``). Streams of 2,000 chat-like deltas, framed with LF (OpenAI, Anthropic),
CRLF (Gemini) and mixed line ends, are fed one frame per read (a live stream) and in 16 KB reads
(a burst); rounds alternate between the two revisions and the median ns per frame is reported.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
import types
from collections.abc import Callable

import proxy.wire.sse as current

FRAMES = 2_000
ROUNDS = 15


def _load(rev: str) -> types.ModuleType:
    source = subprocess.run(["git", "show", f"{rev}:proxy/wire/sse.py"], capture_output=True, text=True,
                            check=True).stdout
    module = types.ModuleType(f"sse_{rev}")
    sys.modules[module.__name__] = module  # dataclasses look their module up
    exec(compile(source, f"{rev}:proxy/wire/sse.py", "exec"), module.__dict__)  # noqa: S102 - our own file
    return module


def _stream(ending: str) -> bytes:
    out = []
    for n in range(FRAMES):
        chunk = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "m",
                 "choices": [{"index": 0, "delta": {"content": f" word{n}"}, "finish_reason": None}]}
        nl = {"lf": "\n", "crlf": "\r\n", "mixed": ("\n", "\r\n")[n % 2]}[ending]
        blank = {"lf": "\n", "crlf": "\r\n", "mixed": ("\r\n", "\n")[n % 2]}[ending]
        out.append(f"data: {json.dumps(chunk)}{nl}{blank}")
    return "".join(out).encode()


def _reads(data: bytes, per_frame: bool) -> list[bytes]:
    if not per_frame:
        return [data[i:i + 16384] for i in range(0, len(data), 16384)]
    frames, start = [], 0
    for i in range(1, len(data)):
        if data[i - 1:i + 1] in (b"\n\n", b"\n\r") or (data[i - 1:i + 1] == b"\r\n" and data[i - 3:i - 1] == b"\r\n"):
            frames.append(data[start:i + 1])
            start = i + 1
    return frames + ([data[start:]] if start < len(data) else [])


def _time(module: types.ModuleType, reads: list[bytes]) -> float:
    split: Callable[[], object] = module.SSESplitter
    parse = module.parse_fields
    t = time.perf_counter_ns()
    s = split()
    for chunk in reads:
        for raw in s.feed(chunk):  # type: ignore[attr-defined]
            parse(raw)
    elapsed = time.perf_counter_ns() - t
    return elapsed / FRAMES  # per upstream event (a splitter that glues events yields fewer frames)


def main() -> None:
    rev = sys.argv[1] if len(sys.argv) > 1 else "main"
    other = _load(rev)
    print(f"ns per frame (median of {ROUNDS}), current vs {rev}")
    for ending in ("lf", "crlf", "mixed"):
        data = _stream(ending)
        for per_frame in (True, False):
            reads = _reads(data, per_frame)
            cur, old = [], []
            for _ in range(ROUNDS):
                cur.append(_time(current, reads))
                old.append(_time(other, reads))
            c, o = statistics.median(cur), statistics.median(old)
            mode = "one read per frame" if per_frame else "16 KB reads"
            print(f"  {ending:5} {mode:19} current {c:7.0f}  {rev} {o:7.0f}  ratio {c / o:.2f}")


if __name__ == "__main__":
    main()
