"""Shell analysis in worker processes: a crash in the C parser costs one worker, never the proxy.

``analyze_isolated`` is what the tool rules call. It sends the command line to one of ``WORKERS``
long-lived processes (``serve`` in a child Python) that run ``shell.analyze`` and
answer with the facts as one JSON line. A worker that dies (a segmentation fault in
tree-sitter-bash's C scanner) or does not answer within ``REPLY_TIMEOUT_S`` is killed and replaced;
the call gets ``status="parser_failed"``, which the rules block as ``unparseable_arguments``
(fail closed). A worker that died *before* it was handed the command (killed from outside) is not
the command's fault: the command is retried once on a fresh worker.

Why a process and not the parser in-process: a segmentation fault cannot be caught; tree-sitter-bash
0.25.1 (the newest release on PyPI) has one an input of 7 bytes reaches (``shell.ctype_safe``
removes that class; nothing else proves the C code has no other). Measured (``bench/tool_cost.py``,
load ~11 on 2 cores): the round trip adds 0.15-0.25 ms to a new command line (typical: 0.10 ms
in-process, 0.33 ms through a worker), and answers are cached by command line (``CACHE_BYTES``):
a repeated line costs 7-9 µs, less than a parse, and an agent's history is re-read on every request.

The proxy process imports ``shell`` for the data types only. A worker imports the shell analysis and
nothing of the policy (``guardrails.tools`` loads its names lazily): 17 MB and a third of a second
to start, measured.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import subprocess
import sys
import threading
import time
from collections import OrderedDict
from dataclasses import asdict

from guardrails.tools import shell
from guardrails.tools.shell import MAX_COMMAND_BYTES, ShellFacts

WORKERS = 2
REPLY_TIMEOUT_S = 10.0
"""A 32 KiB worst case parses in under 0.1 s; ten seconds is a hung parser, not a busy machine."""
CACHE_BYTES = 8 << 20
"""The answer cache's bound: command lines plus answers, in bytes (about 2,000 typical lines)."""
CACHE_ENTRY_BYTES = 64 << 10
"""A longer line and answer are not cached (agents do not repeat those; they would crowd out the rest)."""
FAILED = "parser_failed"


WORKER_ARGV = (sys.executable, "-c", "from guardrails.tools.shell_worker import serve; serve()")


class _Worker:
    def __init__(self, argv: tuple[str, ...]) -> None:
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, bufsize=0)

    def ask(self, request: bytes) -> bytes | None:
        """The worker's answer line; None when it died or hung (it is then stopped).
        Raises BrokenPipeError when it was already dead before it got the request."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        if self.proc.poll() is not None:
            raise BrokenPipeError("the worker had exited")
        self.proc.stdin.write(request)
        self.proc.stdin.flush()
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + REPLY_TIMEOUT_S
        answer = bytearray()
        while not answer.endswith(b"\n"):
            left = deadline - time.monotonic()
            ready = select.select([fd], [], [], left)[0] if left > 0 else []
            chunk = os.read(fd, 1 << 16) if ready else b""
            if not chunk:
                self.stop()
                return None
            answer += chunk
        return bytes(answer)

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                pipe.close()


class WorkerPool:
    """Up to ``size`` workers, started on first use (or by ``start``), shared by every thread."""

    def __init__(self, size: int = WORKERS, argv: tuple[str, ...] = WORKER_ARGV) -> None:
        self._size, self._argv = size, argv
        self._idle: list[_Worker] = []
        self._running = 0
        self._cond = threading.Condition()
        self._cache: OrderedDict[tuple[str, str | None], bytes] = OrderedDict()
        self._cached_bytes = 0
        self.crashes = 0
        """Workers lost to a crash or a hang since start (each one blocked its call)."""
        self._pid = os.getpid()

    def _after_fork(self) -> None:
        """In a forked child the parent's workers are not ours to talk to (their pipes are shared):
        forget them and start our own. Called with the lock held."""
        if self._pid != os.getpid():
            self._pid, self._idle, self._running = os.getpid(), [], 0

    def start(self) -> None:
        """Start the workers now (they take a fraction of a second to import), not on the first call."""
        with self._cond:
            self._after_fork()
            while self._running < self._size:
                self._idle.append(_Worker(self._argv))
                self._running += 1

    def analyze(self, command: str, stdin: str | None = None, dialect: str = "bash") -> ShellFacts:
        if len(command.encode("utf-8", "surrogatepass")) > MAX_COMMAND_BYTES:
            return ShellFacts(status="too_large")
        key = (command, stdin if dialect == "bash" else f"{stdin}\0{dialect}")
        with self._cond:
            cached = self._cache.get(key)
            if cached is not None:
                self._cache.move_to_end(key)
        if cached is None:
            cached = self._ask(json.dumps({"command": command, "stdin": stdin, "dialect": dialect}).encode() + b"\n")
            self._remember(key, cached)
        return decode(cached)

    def _remember(self, key: tuple[str, str | None], answer: bytes) -> None:
        size = len(key[0]) + len(answer)
        with self._cond:
            if key in self._cache or size > CACHE_ENTRY_BYTES:
                return
            self._cache[key] = answer
            self._cached_bytes += size
            while self._cached_bytes > CACHE_BYTES:
                old, dropped = self._cache.popitem(last=False)
                self._cached_bytes -= len(old[0]) + len(dropped)

    def _ask(self, request: bytes) -> bytes:
        for _ in range(2):
            worker = self._take()
            try:
                answer = worker.ask(request)
            except OSError:  # BrokenPipeError: it died before it read this command, not its doing
                worker.stop()
                self._lost()
                continue
            except BaseException:
                worker.stop()
                self._lost()
                raise
            if answer is None:
                self._lost()
                with self._cond:
                    self.crashes += 1
                return json.dumps({"status": FAILED}).encode()
            self._give(worker)
            return answer
        return json.dumps({"status": FAILED}).encode()

    def _take(self) -> _Worker:
        with self._cond:
            self._after_fork()
            while not self._idle and self._running >= self._size:
                self._cond.wait()
            if self._idle:
                return self._idle.pop()
            self._running += 1
        try:
            return _Worker(self._argv)
        except BaseException:
            self._lost()
            raise

    def _give(self, worker: _Worker) -> None:
        with self._cond:
            self._idle.append(worker)
            self._cond.notify()

    def _lost(self) -> None:
        with self._cond:
            self._running -= 1
            self._cond.notify()

    def forget(self) -> None:
        """Empty the answer cache (benchmarks: the cost of a command line not seen before)."""
        with self._cond:
            self._cache.clear()

    def close(self) -> None:
        with self._cond:
            idle, self._idle = self._idle, []
            self._running -= len(idle)
        for w in idle:
            w.stop()


def encode(facts: ShellFacts) -> bytes:
    return json.dumps(asdict(facts)).encode() + b"\n"


def decode(answer: bytes) -> ShellFacts:
    """The facts in a worker's answer; an answer that is not what ``encode`` writes is a failure."""
    try:
        data = json.loads(answer)
        return ShellFacts(segments=[dict(seg) for seg in data.get("segments", [])],
                          paths=[(str(op), str(p)) for op, p in data.get("paths", [])],
                          urls=[str(u) for u in data.get("urls", [])],
                          writes=[(str(p), None if t is None else str(t)) for p, t in data.get("writes", [])],
                          autorun=[str(a) for a in data.get("autorun", [])],
                          git_runs=[str(f) for f in data.get("git_runs", [])], status=str(data.get("status", FAILED)),
                          detail=str(data.get("detail", "")), work=int(data.get("work", 0)))
    except (ValueError, TypeError, AttributeError):
        return ShellFacts(status=FAILED)


_pool = WorkerPool()
atexit.register(_pool.close)


def pool() -> WorkerPool:
    return _pool


def analyze_isolated(command: str, stdin: str | None = None, dialect: str = "bash") -> ShellFacts:
    """``shell.analyze(command, stdin, dialect)``, run in a worker process (see the module docstring)."""
    return _pool.analyze(command, stdin, dialect)


def serve() -> None:
    """The worker: one JSON request line in, one JSON facts line out, until stdin closes."""
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        request = json.loads(line)
        dialect = str(request.get("dialect") or "bash")
        out.write(encode(shell.analyze(str(request["command"]), request.get("stdin"),
                                       dialect if dialect in shell.DIALECTS else "bash")))
        out.flush()
