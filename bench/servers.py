"""Start, health-check and stop the benchmark's server processes (each in its own process group).

Every server listens on a free 127.0.0.1 port, gets a raised fd limit before exec, writes its output
to a log under ``bench/results/tmp/``, and is killed with its whole group when the run ends, errors
included (``Fleet`` is a context manager).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from bench.common import free_port, raise_fd_limit

ROOT = Path(__file__).resolve().parent.parent
TMP = ROOT / "bench" / "results" / "tmp"


@dataclass
class Server:
    name: str
    port: int
    proc: subprocess.Popen[bytes]
    health_path: str
    base_path: str = ""

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}{self.base_path}/v1/chat/completions"


def _preexec() -> None:
    os.setsid()
    raise_fd_limit()


@dataclass
class Fleet:
    servers: list[Server] = field(default_factory=list)

    def start(self, name: str, argv: list[str], *, env: dict[str, str] | None = None, port: int | None = None,
              health_path: str = "/healthz", timeout: float = 60.0, headers: dict[str, str] | None = None,
              cwd: Path = ROOT) -> Server:
        port = port or free_port()
        TMP.mkdir(parents=True, exist_ok=True)
        log = open(TMP / f"{name}.log", "wb")  # noqa: SIM115 - owned by the child until it exits
        full_env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
        cmd = [a.replace("{port}", str(port)) for a in argv]
        proc = subprocess.Popen(cmd, cwd=cwd, env=full_env, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL,
                                preexec_fn=_preexec)  # noqa: PLW1509 - the bench runs no threads
        server = Server(name, port, proc, health_path)
        self.servers.append(server)
        self._wait_healthy(server, timeout, headers or {})
        return server

    def _wait_healthy(self, server: Server, timeout: float, headers: dict[str, str]) -> None:
        deadline = time.monotonic() + timeout
        url = f"http://127.0.0.1:{server.port}{server.health_path}"
        while time.monotonic() < deadline:
            if server.proc.poll() is not None:
                raise RuntimeError(f"{server.name} exited with {server.proc.returncode}; see {TMP / server.name}.log")
            try:
                with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=2) as r:
                    if r.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            time.sleep(0.2)
        raise RuntimeError(f"{server.name} not healthy on {url} after {timeout:.0f} s")

    def stop(self, server: Server) -> None:
        if server.proc.poll() is None:
            try:
                os.killpg(server.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                server.proc.wait(timeout=8)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(server.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                server.proc.wait(timeout=5)
        if server in self.servers:
            self.servers.remove(server)

    def stop_all(self) -> None:
        for server in list(reversed(self.servers)):
            self.stop(server)

    def __enter__(self) -> Fleet:  # noqa: PYI034 - a dataclass nobody subclasses
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop_all()


PY = sys.executable


def upstream_argv() -> list[str]:
    return [PY, "-m", "bench.fake_upstream", "--port", "{port}"]


def bare_relay_argv(upstream: str) -> list[str]:
    return [PY, "-m", "bench.bare_relay", "--port", "{port}", "--upstream", upstream]


def guardproxy_argv() -> list[str]:
    # ``bench.profiled`` is ``python -m proxy`` under cProfile when BENCH_PROFILE_DIR is set.
    return [PY, "-m", "bench.profiled", "serve", "--host", "127.0.0.1", "--port", "{port}"]


def guardproxy_env(upstream: str, *, policy: str | None, enabled: bool = True) -> dict[str, str]:
    env = {"GUARDPROXY_OPENAI_BASE_URL": upstream, "GUARDPROXY_GUARDRAILS_ENABLED": "true" if enabled else "false"}
    if policy:
        env["GUARDPROXY_POLICY"] = str(ROOT / policy)
    return env
