"""The bare relay contender: the least a Python reverse proxy can do. No parsing, no checks.

``python -m bench.bare_relay --port P --upstream http://127.0.0.1:U``. One Starlette catch-all route,
one pooled ``aiohttp.ClientSession``; event streams are relayed chunk by chunk as they arrive, other
bodies in one read and one send. Served by uvicorn with the same defaults guardproxy gets (uvloop and
httptools when installed). This is the ceiling that guardproxy's numbers are held against.
"""

from __future__ import annotations

import argparse
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import aiohttp
import uvicorn
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from bench.common import raise_fd_limit

_DROP = frozenset({"host", "content-length", "connection", "keep-alive", "transfer-encoding", "upgrade",
                   "te", "trailer", "server", "date"})


def make_app(upstream: str) -> Starlette:
    state: dict[str, aiohttp.ClientSession] = {}

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        state["s"] = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0), auto_decompress=False,
                                           timeout=aiohttp.ClientTimeout(total=None, sock_read=300))
        yield
        await state["s"].close()

    async def relay(request: Request) -> Response:
        headers = [(k, v) for k, v in request.headers.items() if k not in _DROP]
        resp = await state["s"].request(request.method, upstream + request.url.path, headers=headers,
                                        data=await request.body(), params=request.query_params,
                                        allow_redirects=False)
        out = {k: v for k, v in resp.headers.items() if k.lower() not in _DROP}
        if not resp.headers.get("content-type", "").startswith("text/event-stream"):
            async with resp:  # a plain body: one read, one send (no streaming machinery)
                return Response(await resp.read(), status_code=resp.status, headers=out)
        return StreamingResponse(resp.content.iter_any(), status_code=resp.status, headers=out,
                                 background=BackgroundTask(resp.release))

    async def healthz(_: Request) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    methods = ["GET", "POST", "PUT", "PATCH", "DELETE"]
    return Starlette(routes=[Route("/healthz", healthz), Route("/{path:path}", relay, methods=methods)],
                     lifespan=lifespan)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--upstream", required=True)
    args = parser.parse_args()
    raise_fd_limit()
    uvicorn.run(make_app(args.upstream.rstrip("/")), host="127.0.0.1", port=args.port, log_level="warning",
                access_log=False, lifespan="on", ws="none")


if __name__ == "__main__":
    main()
