"""A webhook classifier and a moderation endpoint on one loopback port, in a thread, that refuse a body
larger than ``max_body`` bytes with a 413 the way a real service behind a body-size limit does.

Both flag any text holding ``flag_word``; every accepted body is recorded (``webhook_bodies``,
``moderation_inputs``) so a test can see what was sent and in how many requests.
"""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any, Self

from aiohttp import web


class FakeClassifier:
    def __init__(self, max_body: int = 1 << 30, flag_word: str = "FORBIDDEN") -> None:
        self.max_body = max_body
        self.flag_word = flag_word
        self.webhook_bodies: list[dict[str, Any]] = []
        self.moderation_inputs: list[Any] = []
        self.refused = 0
        self.down = False
        self.delay_s = 0.0
        """Every request gets a 503 (a classifier that is down)."""
        self.delay_s = 0.0
        """How long each request takes to answer (a slow classifier, for queueing tests)."""
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._runner: web.AppRunner | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def reset(self) -> None:
        self.webhook_bodies.clear()
        self.moderation_inputs.clear()
        self.refused = 0
        self.down = False
        self.delay_s = 0.0

    def __enter__(self) -> Self:
        self._thread.start()
        self._ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        async def _stop() -> None:
            if self._runner:
                await self._runner.cleanup()
        asyncio.run_coroutine_threadsafe(_stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        app = web.Application(client_max_size=1 << 30)
        app.router.add_post("/webhook", self._webhook)
        app.router.add_post("/v1/moderations", self._moderation)
        self._runner = web.AppRunner(app, access_log=None)
        self._loop.run_until_complete(self._runner.setup())
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        self._loop.run_until_complete(site.start())
        self.port = self._runner.addresses[0][1]
        self._ready.set()
        try:
            self._loop.run_forever()
        finally:
            self._loop.close()

    async def _read(self, request: web.Request) -> Any:
        raw = await request.read()
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        if self.down:
            raise web.HTTPServiceUnavailable()
        if len(raw) > self.max_body:
            self.refused += 1
            raise web.HTTPRequestEntityTooLarge(max_size=self.max_body, actual_size=len(raw))
        return json.loads(raw)

    async def _webhook(self, request: web.Request) -> web.Response:
        body = await self._read(request)
        self.webhook_bodies.append(body)
        flagged = self.flag_word in body["output"] or self.flag_word in json.dumps(body["tool_calls"])
        return web.json_response({"decision": "block" if flagged else "pass"})

    async def _moderation(self, request: web.Request) -> web.Response:
        body = await self._read(request)
        self.moderation_inputs.append(body["input"])
        inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
        return web.json_response({"results": [
            {"flagged": self.flag_word in text, "categories": {"violence": self.flag_word in text},
             "category_scores": {}} for text in inputs]})

