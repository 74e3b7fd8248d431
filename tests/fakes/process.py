"""``guardproxy serve`` as a real child process on loopback (workers, signals, replicas need one)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import Self

import httpx

from tests.fakes.proxy import free_port

ROOT = Path(__file__).resolve().parents[2]


class ProxyProcess:
    def __init__(self, upstream_url: str, *args: str, **env: str) -> None:
        self.port = free_port()
        self.args = args
        self.env = {**os.environ, "PYTHONPATH": str(ROOT), "GUARDPROXY_HOST": "127.0.0.1",
                    "GUARDPROXY_PORT": str(self.port), "GUARDPROXY_OPENAI_BASE_URL": upstream_url,
                    "GUARDPROXY_ANTHROPIC_BASE_URL": upstream_url, "GUARDPROXY_GEMINI_BASE_URL": upstream_url,
                    "GUARDPROXY_SHUTDOWN_GRACE_S": "2", **env}
        self.proc: subprocess.Popen[bytes] | None = None
        # A file, not a pipe: a chatty proxy never blocks on it. Readable after stop(); gone with self.
        self._log = tempfile.TemporaryFile()  # noqa: SIM115

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def headers(self) -> dict[str, str]:
        token = self.env.get("GUARDPROXY_AUTH_TOKEN")
        return {"x-guardproxy-token": token} if token else {}

    def start(self, timeout: float = 120.0) -> Self:  # a loaded machine starts workers slowly
        self.proc = subprocess.Popen([sys.executable, "-m", "proxy", "serve", *self.args], env=self.env,
                                     cwd=ROOT, stdout=self._log, stderr=self._log)
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise RuntimeError(f"proxy exited: {self.stderr()}")
            try:
                if httpx.get(self.url + "/readyz", headers=self.headers, timeout=1).status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        raise RuntimeError("proxy did not become ready")

    def signal(self, sig: signal.Signals) -> None:
        assert self.proc is not None
        self.proc.send_signal(sig)

    def stop(self) -> int:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        return self.proc.returncode

    def stderr(self) -> str:
        """What the proxy printed so far (stdout and stderr)."""
        self._log.seek(0)
        return self._log.read().decode(errors="replace")

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
