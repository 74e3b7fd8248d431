"""The ASGI application: ops routes on FastAPI, every other path on the raw-ASGI proxy path.

``create_app(settings, policy)`` builds everything up front (a bad policy fails here, not on a
request) and reads nothing from the environment itself.
"""

from __future__ import annotations

import asyncio
import gc
import signal
from typing import Any

import anyio
import structlog
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from opentelemetry.sdk.trace import TracerProvider
from sse_starlette import EventSourceResponse

from config.policy import Policy
from config.settings import Settings
from proxy.downstream.asgi import (
    BodyTimeout,
    BodyTooLarge,
    ClientGone,
    Receive,
    Scope,
    Send,
    header_list,
    read_body,
    respond,
)
from proxy.downstream.server_limits import set_limits
from proxy.drive.services import Services, build_services
from proxy.edge.access import ADMIN_ROUTES, Access, check_listen
from proxy.edge.exchange import Exchange, model_authorized
from proxy.edge.reload import Reloader
from proxy.ops.feed import DecisionFeed, sse_events
from proxy.ops.metrics import CONTENT_TYPE
from proxy.ops.metrics_listener import MetricsListener
from proxy.state import StoreUnavailable

log = structlog.get_logger("guardproxy")

_OPS = frozenset({"/healthz", "/readyz", "/metrics", "/events"})
_PREFLIGHT = frozenset({"/", "/api/hello"})
_BARE = "guardproxy.bare"
"""Scope key: the request may see only ``/readyz``'s bare status (it holds no admin token)."""


def _ops_app(services: Services, reloader: Reloader, feed: DecisionFeed) -> FastAPI:
    app = FastAPI(title="guardproxy", docs_url=None, redoc_url=None, openapi_url=None)

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/readyz")
    async def readyz(request: Request) -> JSONResponse:
        ok = services.ready
        if request.scope.get(_BARE):
            return JSONResponse({"status": "ready" if ok else "starting"}, status_code=200 if ok else 503)
        book = services.book
        body = {"status": "ready" if ok else "starting", "policy_loaded": True,
                "policy_version": book.default.label,
                "policies": {name: g.version for name, g in book.guards.items()},
                "policy_generation": book.generation, "last_reload_error": reloader.last_error,
                "last_reload": {"outcome": reloader.last_outcome, "at": reloader.last_reload_at},
                "guardrails_enabled": services.guarding,
                "stream_guardrails": [g.id for g in services.stream_guardrails],
                "message_guardrails": [g.id for g in services.message_guardrails],
                "tool_rules": services.assessor is not None}
        return JSONResponse(body, status_code=200 if ok else 503)

    @app.get("/metrics")
    async def metrics() -> Response:
        return Response(services.metrics.render(), media_type=CONTENT_TYPE)

    @app.get("/events", response_model=None)
    async def events() -> EventSourceResponse | JSONResponse:
        """The live decision feed (SSE): one event per audit record, from the moment of connecting."""
        if feed.full:
            return JSONResponse({"error": "too many /events subscribers (GUARDPROXY_FEED_MAX_SUBSCRIBERS)"},
                                status_code=503, headers={"retry-after": "5"})
        stop = anyio.Event()
        return EventSourceResponse(sse_events(feed, stop), ping=15, send_timeout=30, shutdown_event=stop,
                                   shutdown_grace_period=1.0)

    return app


class GuardProxy:
    def __init__(self, services: Services) -> None:
        self.services = services
        self.reloader = Reloader(services)
        self._metrics_listener: MetricsListener | None = None
        self.access = Access(services.settings)
        self.feed = DecisionFeed(services.metrics.feed_dropped, max_subscribers=services.settings.feed_max_subscribers,
                                 buffer_bytes=services.settings.feed_buffer_bytes)
        services.audit.listeners.append(self.feed.publish)
        self.ops = _ops_app(services, self.reloader, self.feed)
        self._active: set[asyncio.Task[Any]] = set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "http":
            path = scope["path"]
            if path in _OPS and scope["method"] == "GET":
                needs = ADMIN_ROUTES.get(path)
                if needs is not None and not self.access.may(needs, header_list(scope)):
                    if path != "/readyz":
                        await respond(send, 401, b'{"error":"this route needs the admin token '
                                      b'(GUARDPROXY_AUTH_TOKEN) in x-guardproxy-token"}', [], "application/json")
                        return
                    scope[_BARE] = True
                await self.ops(scope, receive, send)
            elif scope["method"] == "HEAD" and path in _PREFLIGHT:
                await send({"type": "http.response.start", "status": 200,
                            "headers": [(b"content-length", b"0")]})
                await send({"type": "http.response.body", "body": b""})
            else:
                await self._proxy(scope, receive, send)
        elif kind == "lifespan":
            await self._lifespan(receive, send)
        elif kind == "websocket":
            await send({"type": "websocket.close", "code": 1008,
                        "reason": "guardproxy does not proxy WebSockets; use HTTP streaming"})

    async def _proxy(self, scope: Scope, receive: Receive, send: Send) -> None:
        settings = self.services.settings
        slow = False
        body: bytes | None
        if not self._token_in_head(scope):
            body = b""  # answered 401 without reading (or holding) what an unauthenticated client sends
        else:
            try:
                body = await read_body(receive, settings.max_body_bytes, settings.body_idle_timeout_s,
                                       settings.body_timeout_s)
            except BodyTooLarge:
                body = None
            except BodyTimeout:
                body, slow = None, True
            except ClientGone:
                return
        ex = Exchange(self.services, scope, body, send, body_timed_out=slow)
        gone: list[bool] = []
        # The exchange runs in the server's own task (one task less per request); the watcher
        # cancels that task when the client leaves, which closes the upstream request with it.
        run = asyncio.current_task()
        assert run is not None
        self._active.add(run)
        watcher = asyncio.ensure_future(_watch(run, receive, gone))
        try:
            await ex.run()
        except asyncio.CancelledError:
            if not gone:
                raise
            run.uncancel()
            self.services.metrics.disconnects.inc()
            log.info("client_disconnected", request_id=ex.request_id)
        finally:
            watcher.cancel()
            self._active.discard(run)

    def _token_in_head(self, scope: Scope) -> bool:
        """The model routes' token check, on the head alone (the exchange checks it again, and
        answers a refusal in the client's API format)."""
        if not self.services.settings.auth_token and not self.services.settings.client_tokens:
            return True
        given = next((v.decode("latin-1") for k, v in scope["headers"] if k.lower() == b"x-guardproxy-token"), "")
        return model_authorized(self.services, given)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            msg = await receive()
            if msg["type"] == "lifespan.startup":
                try:
                    await self.services.upstream.start()
                    self.services.ready = True
                    self.services.metrics.started()
                    self.reloader.start()
                    await self._start_side_channels()
                    await self._open_store()
                    # Everything built at start (policies, compiled patterns, the SDK-sized imports) lives
                    # as long as the process: out of the collector's sight, a full collection under load
                    # walks only what requests allocate (a 10,000-tool-call answer paused the loop ~0.7 s
                    # in one collection before; bench/stalls.py).
                    gc.freeze()
                except Exception as exc:  # noqa: BLE001 - reported to the server, which exits
                    await send({"type": "lifespan.startup.failed", "message": type(exc).__name__})
                    return
                await send({"type": "lifespan.startup.complete"})
            elif msg["type"] == "lifespan.shutdown":
                self.services.ready = False
                self.feed.close()
                await self.reloader.stop()
                if self._metrics_listener is not None:
                    await self._metrics_listener.close()
                await self._drain()
                await self.services.upstream.close()
                await self.services.http.aclose()
                await self.services.held_prompts.store.close()
                self.services.audit.close()
                self.services.metrics.stopped()
                if self.services.tracing.provider is not None:
                    self.services.tracing.provider.shutdown()  # flushes the spans still batched
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _open_store(self) -> None:
        """Open the shared store now (a SQLite file, a Valkey connection): opened by the first request
        instead, a slow open on a busy machine ran past that lookup's time limit, a counted miss (a
        503 under ``unseen_prompt = "refuse"``). A store that cannot be reached yet is logged; requests
        then meet it as usual (bounded wait, the policy's choice)."""
        try:
            await self.services.held_prompts.store.get("", "open")
        except StoreUnavailable as exc:
            log.warning("state_store_unavailable_at_start", cause=str(exc)[:200])

    async def _start_side_channels(self) -> None:
        """The metrics listener (``METRICS_PORT``) and SIGUSR1, which reopens the audit log after a
        rotation (main thread only: a server run in a thread has no signal handlers)."""
        settings = self.services.settings
        if settings.metrics_port:
            self._metrics_listener = MetricsListener(self.services.metrics.render,
                                                     settings.metrics_host or settings.host, settings.metrics_port)
            await self._metrics_listener.start()
        try:
            asyncio.get_running_loop().add_signal_handler(signal.SIGUSR1, self.services.audit.reopen)
        except (RuntimeError, ValueError):
            log.debug("sigusr1_reopen_unavailable")

    async def _drain(self) -> None:
        """Graceful shutdown: let open exchanges finish within the grace period, then cancel them."""
        pending = {t for t in self._active if not t.done()}
        if not pending:
            return
        _, still = await asyncio.wait(pending, timeout=self.services.settings.shutdown_grace_s)
        for t in still:
            t.cancel()


async def _watch(run: asyncio.Task[Any], receive: Receive, gone: list[bool]) -> None:
    """Runs once the body was read; cancels ``run`` (closing the upstream) when the client leaves."""
    while not run.done():
        msg = await receive()
        if msg["type"] == "http.disconnect":
            if not run.done():
                gone.append(True)
                run.cancel()
            return


def create_app(settings: Settings | None = None, policy: Policy | None = None,
               tracer_provider: TracerProvider | None = None) -> GuardProxy:
    """``policy``: the default policy as an object, fixed for the app's life; None: read from
    ``settings.policy`` (or the shipped default) and reloaded on SIGHUP or when its file changes.
    ``tracer_provider``: where spans go (tests); None: OTLP if the ``OTEL_*`` variables ask for it."""
    settings = settings or Settings()
    check_listen(settings)
    set_limits(settings.max_head_bytes, settings.max_headers, settings.head_timeout_s)
    return GuardProxy(build_services(settings, policy, tracer_provider))


def app_from_env() -> GuardProxy:
    """The factory each worker of ``guardproxy serve --workers N`` calls (settings from the environment
    the parent prepared)."""
    from proxy.ops.logs import configure

    settings = Settings()
    configure(settings.log_level)
    return create_app(settings)
