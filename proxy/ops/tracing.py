"""OpenTelemetry traces, opt-in through the standard ``OTEL_*`` variables, exported over OTLP.

On when ``OTEL_EXPORTER_OTLP_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` is set, or
``OTEL_TRACES_EXPORTER=otlp``, unless ``OTEL_SDK_DISABLED=true``. The SDK itself reads the rest
(``OTEL_SERVICE_NAME``, ``OTEL_RESOURCE_ATTRIBUTES``, headers, timeouts, sampler). The provider is
the app's own (``trace.set_tracer_provider`` is never called: no process globals), and when tracing
is off nothing here runs beyond one boolean test per hook.

Spans per guarded request (names and attributes follow the HTTP and GenAI semantic conventions where
they exist; ours are under ``guardproxy.``):
- ``POST /v1/chat/completions`` (SERVER): the whole exchange; ``gen_ai.operation.name``,
  ``gen_ai.provider.name``, ``gen_ai.request.model``, the policy, the status; events
  ``first_upstream_byte`` (upstream response head) and ``first_released_byte`` (first byte sent to the
  client), with the times also as attributes in milliseconds.
- ``chat {model}`` (CLIENT): each upstream call (retries and feedback rounds are new calls) until the
  response head.
- ``guardproxy.message_check {id}``: each message guardrail run (a judge call is one), with outcome
  and detail, timed by the runner.
- ``guardproxy.tool_assessment {tool}``: each tool call assessed (``gen_ai.tool.name``,
  ``gen_ai.tool.call.id``, rule, decision, reason code).
- ``guardproxy.trip {id}``, ``guardproxy.retry``, ``guardproxy.fail_open``...: every other audited
  decision, as the audit log records it (never blocked text).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from guardrails.message.runner import CheckResult

PROVIDER_NAMES = {"openai": "openai", "anthropic": "anthropic", "gemini": "gcp.gemini"}
"""``gen_ai.provider.name`` values from the GenAI semantic conventions."""
_AUDIT_SPANS = {"guardrail.tripped": "guardproxy.trip", "message.replaced": "guardproxy.replaced",
                "retry": "guardproxy.retry", "fail_open": "guardproxy.fail_open",
                "tool_call.blocked": "guardproxy.tool_blocked"}
_AUDIT_ATTRS = ("guardrail_id", "rule", "reason_code", "decision", "action", "attempt", "source", "detail")


def otlp_requested(env: dict[str, str] | os._Environ[str]) -> bool:
    if env.get("OTEL_SDK_DISABLED", "").lower() == "true":
        return False
    return bool(env.get("OTEL_EXPORTER_OTLP_ENDPOINT") or env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
                or env.get("OTEL_TRACES_EXPORTER", "").lower() == "otlp")


def otlp_provider() -> TracerProvider:
    """A provider exporting over OTLP/HTTP (protobuf), configured by the SDK from ``OTEL_*``."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    resource = Resource.create()  # OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
    if str(resource.attributes.get("service.name", "")).startswith("unknown_service"):
        resource = resource.merge(Resource({"service.name": "guardproxy"}))
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    return provider


_NO_SPAN = nullcontext()
"""What ``Tracing`` hands out with tracing off (stateless: shared)."""

class Tracing:
    """The hooks the request path calls. ``provider`` None: tracing off, every hook a no-op."""

    def __init__(self, provider: TracerProvider | None) -> None:
        self.provider = provider
        self.enabled = provider is not None
        self._tracer = provider.get_tracer("guardproxy") if provider is not None else trace.NoOpTracer()

    def request(self, method: str, path: str) -> AbstractContextManager[Span | None]:
        """The request's span (None with tracing off: one shared no-op, not a generator per request)."""
        return self._request(method, path) if self.enabled else _NO_SPAN

    def upstream_call(self, provider: str, model: str | None, url: str) -> AbstractContextManager[None]:
        return self._upstream_call(provider, model, url) if self.enabled else _NO_SPAN

    @contextmanager
    def _request(self, method: str, path: str) -> Iterator[Span | None]:
        with self._tracer.start_as_current_span(f"{method} {path}", kind=SpanKind.SERVER, attributes={
                "http.request.method": method, "url.path": path}) as span:
            yield span

    @contextmanager
    def _upstream_call(self, provider: str, model: str | None, url: str) -> Iterator[None]:
        attrs = genai_request(provider, model, False)
        del attrs["guardproxy.stream"]
        attrs["server.address"] = url.split("/")[2] if "://" in url else url
        with self._tracer.start_as_current_span(f"chat {model}" if model else "chat", kind=SpanKind.CLIENT,
                                                attributes=attrs):
            yield

    def on_audit(self, record: dict[str, object]) -> None:
        """An audit record becomes a span under the current request (listener of ``AuditLog``)."""
        if not self.enabled or not trace.get_current_span().is_recording():
            return
        event = str(record.get("event"))
        if event == "tool_call.assessed":
            name = f"guardproxy.tool_assessment {record.get('tool')}"
            attrs = {"gen_ai.tool.name": str(record.get("tool")), "gen_ai.tool.call.id": str(record.get("call_id")),
                     "guardproxy.rule": str(record.get("rule")), "guardproxy.decision": str(record.get("decision")),
                     "guardproxy.reason_code": str(record.get("reason_code"))}
        else:
            who = record.get("guardrail_id") or record.get("rule") or ""
            name = f"{_AUDIT_SPANS.get(event, 'guardproxy.' + event)} {who}".strip()
            attrs = {f"guardproxy.{k}": str(record[k]) for k in _AUDIT_ATTRS if record.get(k) is not None}
        span = self._tracer.start_span(name, attributes=attrs)
        if record.get("decision") == "block" or event == "guardrail.tripped":
            span.set_status(Status(StatusCode.OK))
        span.end()

    def message_checks(self, results: Sequence[CheckResult]) -> None:
        """One span per message guardrail run, timed by the runner (start = end - latency)."""
        if not self.enabled:
            return
        now = time.time_ns()
        for r in results:
            span = self._tracer.start_span(f"guardproxy.message_check {r.guardrail_id}",
                                           start_time=now - int(r.latency_s * 1e9), attributes={
                                               "guardproxy.guardrail_id": r.guardrail_id,
                                               "guardproxy.outcome": r.outcome,
                                               "guardproxy.detail": r.detail})
            if r.outcome in ("fail_open", "fail_closed"):
                span.set_status(Status(StatusCode.ERROR, r.detail or r.outcome))
            span.end(end_time=now)


def genai_request(provider: str, model: str | None, stream: bool) -> dict[str, Any]:
    attrs: dict[str, Any] = {"gen_ai.operation.name": "chat",
                             "gen_ai.provider.name": PROVIDER_NAMES.get(provider, provider),
                             "guardproxy.stream": stream}
    if model:
        attrs["gen_ai.request.model"] = model
    return attrs


def mark(span: Span | None, event: str, since: float) -> None:
    """A first-byte event on the request span, with its delay (ms since the request began)."""
    if span is None or not span.is_recording():
        return
    ms = round((time.perf_counter() - since) * 1000, 3)
    span.add_event(event, {"guardproxy.elapsed_ms": ms})
    span.set_attribute(f"guardproxy.time_to_{event}_ms", ms)
