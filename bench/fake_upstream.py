"""A fast fake OpenAI chat-completions upstream (aiohttp.web, uvloop when installed).

``python -m bench.fake_upstream --port P``. ``POST /v1/chat/completions`` answers non-streaming or
streaming (``"stream": true``) in the shape the model name asks for (see ``bench.common``): N deltas,
a pause between deltas, a latency before the first byte; ``judge`` models answer ``PASS``. Frames are
precomputed per model name, so the upstream spends its time on I/O, not on JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from functools import lru_cache

from aiohttp import web

from bench.common import completion_body, install_uvloop, parse_model, raise_fd_limit, stream_frames

_SSE_HEADERS = {"content-type": "text/event-stream", "cache-control": "no-cache"}


@lru_cache(maxsize=256)
def _frames(model: str) -> tuple[bytes, ...]:
    return tuple(stream_frames(model))


@lru_cache(maxsize=256)
def _body(model: str) -> bytes:
    return completion_body(model)


async def chat(request: web.Request) -> web.StreamResponse:
    data = json.loads(await request.read())
    model = str(data.get("model", "bench"))
    shape = parse_model(model)
    if shape.latency_ms:
        await asyncio.sleep(shape.latency_ms / 1000)
    if not data.get("stream"):
        return web.Response(body=_body(model), content_type="application/json")
    resp = web.StreamResponse(headers=_SSE_HEADERS)
    await resp.prepare(request)
    pace = shape.pace_ms / 1000
    for i, frame in enumerate(_frames(model)):
        if pace and i >= shape.burst:
            await asyncio.sleep(pace)
        await resp.write(frame)
    await resp.write_eof()
    return resp


async def healthz(_: web.Request) -> web.Response:
    return web.json_response({"status": "ok"})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    raise_fd_limit()
    loop = install_uvloop()
    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.router.add_post("/v1/chat/completions", chat)
    app.router.add_get("/healthz", healthz)
    print(f"fake upstream on 127.0.0.1:{args.port} ({loop})", flush=True)
    web.run_app(app, host="127.0.0.1", port=args.port, access_log=None, print=None, backlog=4096)


if __name__ == "__main__":
    main()
