"""An aiohttp application served on a free loopback port from a thread with its own event loop.

The fakes (model APIs, classifier, the agents' scripted upstreams) differ only in their routes; the
start, the port lookup and the orderly stop are here once. A subclass implements ``routes``.
``serve_here`` serves one on the running loop instead, for an async test that drives an SDK's async
client against it.
"""

from __future__ import annotations

import asyncio
import ssl
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, Self

from aiohttp import web


class ServedApp:
    client_max_size = 64 * 1024 * 1024
    handler_cancellation = False
    keepalive_timeout = 75.0
    """Idle keep-alive connections are closed after this (aiohttp's default); the soak sets 1-5 s."""
    shutdown_timeout = 60.0
    ssl_context: ssl.SSLContext | None = None
    """Set (before ``start``) to serve HTTPS."""
    """How long ``stop`` lets open answers run (aiohttp's default); a short one is a crash-like stop."""

    def __init__(self, name: str = "fake-server", port: int = 0) -> None:
        """``port``: 0 for a free one; a fixed one to start again where a stopped server was."""
        self.port = port
        self._loop = asyncio.new_event_loop()
        self._runner: web.AppRunner | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True, name=name)

    def routes(self, app: web.Application) -> None:
        raise NotImplementedError

    @property
    def url(self) -> str:
        return f"http{'s' if self.ssl_context else ''}://127.0.0.1:{self.port}"

    def start(self) -> Self:
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError(f"{self._thread.name} did not start")
        return self

    def stop(self) -> None:
        async def _stop() -> None:
            if self._runner is not None:
                await self._runner.cleanup()
        asyncio.run_coroutine_threadsafe(_stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        app = web.Application(client_max_size=self.client_max_size)
        self.routes(app)
        self._runner = web.AppRunner(app, access_log=None, handler_cancellation=self.handler_cancellation,
                                     keepalive_timeout=self.keepalive_timeout,
                                     shutdown_timeout=self.shutdown_timeout)
        self._loop.run_until_complete(self._runner.setup())
        site = web.TCPSite(self._runner, "127.0.0.1", self.port, ssl_context=self.ssl_context)
        self._loop.run_until_complete(site.start())
        self.port = int(self._runner.addresses[0][1])
        self._ready.set()
        try:
            self._loop.run_forever()
        finally:
            self._loop.close()


@asynccontextmanager
async def serve_here(routes: Callable[[web.Application], None], **runner: Any) -> AsyncIterator[str]:
    """An application with ``routes`` on a free loopback port of the running loop, for the block; yields
    its base URL. ``runner``: ``web.AppRunner`` options."""
    app = web.Application()
    routes(app)
    app_runner = web.AppRunner(app, **runner)
    await app_runner.setup()
    site = web.TCPSite(app_runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{app_runner.addresses[0][1]}"
    finally:
        await app_runner.cleanup()
