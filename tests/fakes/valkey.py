"""A real ``valkey-server`` (or ``redis-server``: Debian's package, which ``make test`` installs when
neither is on PATH) on a free loopback port, no persistence, as a child process the test can kill and
start again on the same port."""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import tempfile
import time
from types import TracebackType
from typing import Self

import pytest
import redis

from tests.fakes.proxy import free_port


def server_binary() -> str:
    """The server's path; skips the test, loudly, when there is none (``make test`` installs one)."""
    found = shutil.which("valkey-server") or shutil.which("redis-server")
    if found is None:
        pytest.skip("NO valkey-server OR redis-server ON PATH: the shared-state tests over a real Valkey did "
                    "not run. `make test` installs Debian's redis-server (apt-get, as root); install it "
                    "by hand where that is impossible")
    return found


class ValkeyServer:
    def __init__(self) -> None:
        self.binary = server_binary()
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self._dir = tempfile.TemporaryDirectory(prefix="gp-valkey-")

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> Self:
        self.proc = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", self._dir.name, "--protected-mode", "yes"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        end = time.monotonic() + 20
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.binary} exited with {self.proc.returncode}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                    s.sendall(b"PING\r\n")
                    if s.recv(64).startswith(b"+PONG"):
                        return self
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"{self.binary} did not answer PING")

    def kill(self) -> None:
        """Gone at once (SIGKILL): what a crashed or unreachable store looks like to the proxies."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.kill()
            self.proc.wait(10)

    def pause(self) -> None:
        """Stopped (SIGSTOP): connections are accepted by the kernel and never answered (a hung store)."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGCONT)

    def client(self) -> redis.Redis:
        """A plain (synchronous) client, for a test to look at what the server holds."""
        return redis.Redis.from_url(self.url, socket_timeout=5)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.kill()
        self._dir.cleanup()
