"""A webhook classifier and a moderation endpoint on one loopback port, in a thread, that refuse a body
larger than ``max_body`` bytes with a 413 the way a real service behind a body-size limit does.

Both flag any text holding ``flag_word``; every accepted body is recorded (``webhook_bodies``,
``moderation_inputs``) so a test can see what was sent and in how many requests.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from aiohttp import web

from tests.fakes.served import ServedApp


class FakeClassifier(ServedApp):
    client_max_size = 1 << 30

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
        super().__init__("fake-classifier")

    def reset(self) -> None:
        self.webhook_bodies.clear()
        self.moderation_inputs.clear()
        self.refused = 0
        self.down = False
        self.delay_s = 0.0

    def routes(self, app: web.Application) -> None:
        app.router.add_post("/webhook", self._webhook)
        app.router.add_post("/v1/moderations", self._moderation)

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

