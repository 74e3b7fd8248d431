"""The edge's side of the input guardrails (``proxy.drive.input_guard``): the request's model and
the judge's completers, and the API's 400 when a guardrail refuses the request."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import structlog

from proxy.drive.completer import completer_factory, request_completer
from proxy.drive.input_guard import Completers, InputGuard, Screened
from proxy.wire.base import JsonBody

if TYPE_CHECKING:
    from proxy.edge.exchange import Exchange

log = structlog.get_logger("guardproxy")
_GEMINI_MODEL = re.compile(r"/models/([^/:]+):")


async def screen_request(x: Exchange, guard: InputGuard, request: JsonBody,
                         wire_name: str | None = None, reader: str | None = None) -> Screened | None:
    """``guard.screen`` for the exchange's request; None when the request was refused (answered here
    with the API's 400). Media no check could read are named in ``x-guardproxy-input-unchecked``.
    ``wire_name``: the API of a passthrough route (its errors' format); ``reader``: how its body is read
    (``proxy.wire.input_parts.READERS``) when that is not the API's request (a conversation's items)."""
    route, s = x.route, x.services
    assert route is not None
    wire_name = wire_name or route.wire
    assert wire_name is not None
    model = ""
    if wire_name == "gemini":
        m = _GEMINI_MODEL.search(route.path)
        model = m.group(1) if m else ""
        if not model and isinstance(request.data.get("model"), str):  # a cachedContents names its model
            model = request.data["model"].removeprefix("models/")
    elif isinstance(request.data.get("model"), str):
        model = request.data["model"]
    wire = s.wires[wire_name]
    judge_path = route.path if route.endpoint in ("/chat/completions", "/responses") else None

    def completers() -> Completers:
        return (request_completer(s, wire, route.provider, x.headers, x.query, judge_path),
                completer_factory(s, x.headers, route.provider))

    screened = await guard.screen(s, reader or wire_name, request, x.request_id, model, completers)
    if screened.unchecked:
        log.info("input_unchecked", kinds=sorted(set(screened.unchecked)))
    if screened.rejected is not None:
        r = screened.rejected
        s.metrics.fail_closed.labels(reason="input_guardrail").inc()
        await x.responder.fail(400, r.message, "guardrail", wire=wire,
                               extra={"guardrail_id": r.guardrail_id, "reason_code": r.reason_code})
        return None
    return screened
