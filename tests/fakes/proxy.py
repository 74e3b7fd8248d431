"""The proxy under uvicorn on a real loopback socket, in a thread (incremental arrival needs sockets)."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from typing import Any, Self

import uvicorn
import uvloop
from opentelemetry.sdk.trace import TracerProvider

from config.policy import Policy, parse_policy
from config.settings import Settings
from proxy.downstream.server_limits import LimitedHttpToolsProtocol
from proxy.edge.app import GuardProxy, create_app


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ProxyServer:
    def __init__(self, upstream_url: str, policy: Policy | str | None = None, *, policy_file: str | None = None,
                 tracer_provider: TracerProvider | None = None, **settings: Any) -> None:
        """``policy``: fixed for the server's life; ``policy_file``: read from disk and reloadable."""
        # The listening socket is bound here and handed to uvicorn: no window between choosing a
        # free port and binding it in which a parallel test (pytest-xdist) could take it.
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.port = int(self.sock.getsockname()[1])
        base = {"host": "127.0.0.1", "port": self.port, "openai_base_url": upstream_url,
                "anthropic_base_url": upstream_url, "gemini_base_url": upstream_url,
                "upstream_read_timeout_s": 5.0, "upstream_connect_timeout_s": 2.0, "shutdown_grace_s": 1.0}
        base.update(settings, policy=policy_file)
        self.settings = Settings(**base)
        if isinstance(policy, str):
            policy = parse_policy(policy, source="<test policy>")
        self.app: GuardProxy = create_app(self.settings, policy, tracer_provider)
        config = uvicorn.Config(self.app, host="127.0.0.1", port=self.port, log_level="warning",
                                lifespan="on", access_log=False, ws="none", http=LimitedHttpToolsProtocol)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.loop: asyncio.AbstractEventLoop | None = None

    def _run(self) -> None:
        # uvloop, as ``guardproxy serve`` runs (uvicorn's ``loop="auto"``): its transports are not
        # asyncio's classes, and code that assumed they were passed under the plain loop only.
        self.loop = uvloop.new_event_loop()
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_until_complete(self.server.serve(sockets=[self.sock]))
        finally:
            self.loop.close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ProxyServer:
        self.thread.start()
        end = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > end or not self.thread.is_alive():
                raise RuntimeError("proxy did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)
        self.sock.close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
