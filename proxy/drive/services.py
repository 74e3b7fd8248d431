"""Everything one running proxy shares across requests, built once from settings and policy."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import httpx
import structlog
from opentelemetry.sdk.trace import TracerProvider

from config.policy import Policy
from config.settings import Settings, SettingsError
from guardrails.findings import OnTrip
from guardrails.message.gate import CheckGate
from guardrails.seams import MessageGuardrail, StreamGuardrail, judges_tool_arguments
from guardrails.tools import ToolAssessor
from proxy.drive.held_prompts import HeldPrompts
from proxy.drive.policies import Guard, PolicyBook
from proxy.drive.shares import ClientShares
from proxy.ops.audit import AuditLog
from proxy.ops.metrics import Metrics
from proxy.ops.tracing import Tracing, otlp_provider, otlp_requested
from proxy.state import open_store, sealer_for
from proxy.state.base import Budgets
from proxy.state.memory import MemoryStore
from proxy.state.seal import Sealer
from proxy.upstream.forwarding import Upstream
from proxy.upstream.http1 import forward_proxies, tls_context
from proxy.wire.anthropic import AnthropicMessages
from proxy.wire.base import WireFormat
from proxy.wire.gemini import Gemini
from proxy.wire.openai_chat import OpenAIChat
from proxy.wire.openai_responses import OpenAIResponses

log = structlog.get_logger("guardproxy")


def _wires() -> dict[str, WireFormat]:
    formats: list[WireFormat] = [OpenAIChat(), OpenAIResponses(), AnthropicMessages(), Gemini()]
    return {w.name: w for w in formats}


def _memory_held_prompts() -> HeldPrompts:
    store = MemoryStore(Budgets(16 * 1024 * 1024, 64 * 1024 * 1024))
    return HeldPrompts(store, Sealer(None, seal=False))


@dataclass
class Services:
    """Shared infrastructure plus ``guard``, the policy a request runs under. The app's own instance
    holds the default policy; each request gets a shallow copy bound to the policy chosen for it
    (``bound``), so everything below reads ``s.policy``/``s.stream_guardrails`` and keeps the policy
    the request started with across reloads."""

    settings: Settings
    upstream: Upstream
    metrics: Metrics
    audit: AuditLog
    http: httpx.AsyncClient
    book: PolicyBook
    guard: Guard
    wires: dict[str, WireFormat] = field(default_factory=_wires)
    ready: bool = False
    tracing: Tracing = field(default_factory=lambda: Tracing(None))
    gate: CheckGate | None = None
    """Slots for message checks in flight (``GUARDPROXY_CHECK_CONCURRENCY``); queueing is measured."""
    tool_shares: ClientShares = field(default_factory=ClientShares)
    """Each client's share of the tool checks (``proxy.drive.shares``): one answer at a time."""
    held_prompts: HeldPrompts = field(default_factory=_memory_held_prompts)
    """System prompts the upstream holds for later requests, as they went up (``proxy.state``: in this
    process, or shared by workers and replicas; not per policy: a reload keeps them)."""

    def bound(self, guard: Guard) -> Services:
        copy = object.__new__(Services)  # a shallow copy (``dataclasses.replace`` costs ~10x more)
        copy.__dict__.update(self.__dict__)
        copy.guard = guard
        return copy

    @property
    def policy(self) -> Policy:
        return self.guard.policy

    @property
    def stream_guardrails(self) -> list[StreamGuardrail]:
        return self.guard.stream_guardrails

    @property
    def message_guardrails(self) -> list[MessageGuardrail]:
        return self.guard.message_guardrails

    @property
    def assessor(self) -> ToolAssessor | None:
        return self.guard.assessor

    @property
    def on_trip(self) -> dict[str, OnTrip]:
        """Guardrail id -> what its block does (action, replacement, attempts, mandate, final action)."""
        return self.guard.on_trip

    @property
    def specs(self) -> dict[str, Any]:
        """Guardrail id -> its policy entry (action, attempts, mandate...)."""
        return self.guard.specs

    @property
    def tool_arg_guardrails(self) -> list[StreamGuardrail]:
        """The stream guardrails that also judge tool-call arguments (``judges_tool_arguments``), each
        in its form for them (``tool_arguments_form``: the canary with its ``tool_min_chars``)."""
        return [getattr(g, "tool_arguments_form", g) for g in self.stream_guardrails if judges_tool_arguments(g)]

    @property
    def guarding(self) -> bool:
        return self.settings.guardrails_enabled

    @property
    def buffered(self) -> bool:
        delivery = self.policy.defaults.delivery
        if delivery is None:
            return bool(self.message_guardrails)
        return delivery == "buffered"


SIDE_CALLS_PER_SLOT = 8
"""Connections per check slot: the parts of one long answer are sent concurrently."""


def side_call_transport(settings: Settings, limits: httpx.Limits) -> httpx.AsyncBaseTransport:
    """httpx over aiohttp for the side calls (judge, webhook, moderation), with the forwarding path's
    outbound settings: ``HTTPS_PROXY`` / ``HTTP_PROXY`` / ``NO_PROXY`` from the environment (aiohttp's
    ``trust_env``) and the same TLS trust (``GUARDPROXY_UPSTREAM_CA_BUNDLE`` on top of the system's
    store or ``SSL_CERT_FILE``)."""
    import aiohttp
    from httpx_aiohttp import AiohttpTransport

    tls = tls_context(settings.upstream_ca_bundle)
    forward_proxies(os.environ)  # the forwarding path reads them at start: a wrong one stops it here

    def session() -> aiohttp.ClientSession:
        connector = aiohttp.TCPConnector(keepalive_timeout=limits.keepalive_expiry, ssl=tls,
                                         limit=limits.max_connections or 0)
        return aiohttp.ClientSession(connector=connector, trust_env=True)

    return AiohttpTransport(limits=limits, verify=tls, client=session)


def build_services(settings: Settings, policy: Policy | None = None,
                   tracer_provider: TracerProvider | None = None) -> Services:
    """Validate and build every named policy now, so a bad policy fails at start, not on a request.
    ``policy``: the default policy as an object (else read from ``settings.policy``).
    ``tracer_provider``: where spans go; None: OTLP when the ``OTEL_*`` variables ask for it, else off."""
    audit = AuditLog(settings.audit_log, settings.audit_max_field_chars)
    try:
        audit.open()  # an unwritable audit log stops the proxy here, not with a 500 on the first trip
    except OSError as exc:
        raise SettingsError(f"GUARDPROXY_AUDIT_LOG: cannot write {settings.audit_log!r}: "
                            f"{exc.strerror or type(exc).__name__}") from None
    # The side-call pool has a connection for every part a check may send at once (a long answer is
    # sent in parts, one request each, up to the default max_parts of 8) in every check slot: a check
    # holding a slot does not queue again for a connection (which would count against its timeout_s).
    limits = httpx.Limits(max_connections=settings.check_concurrency * SIDE_CALLS_PER_SLOT,
                          max_keepalive_connections=min(settings.check_concurrency, 100))
    http = httpx.AsyncClient(transport=side_call_transport(settings, limits), timeout=httpx.Timeout(30.0),
                             limits=limits)
    book = PolicyBook(settings, http, policy)
    if tracer_provider is None and otlp_requested(os.environ):
        tracer_provider = otlp_provider()
    tracing = Tracing(tracer_provider)
    if tracing.enabled:
        audit.listeners.append(tracing.on_audit)
    metrics = Metrics(settings.prometheus_multiproc_dir)

    def gauges(in_flight: int, queued: int) -> None:
        metrics.checks_in_flight.set(in_flight)
        metrics.checks_queued.set(queued)

    gate = CheckGate(settings.check_concurrency, settings.check_queue_timeout_s,
                     observe=metrics.check_queue_wait.observe, gauges=gauges)
    store = open_store(settings)
    held = HeldPrompts(store, sealer_for(settings, store), settings.state_timeout_s, settings.held_prompts_max_ttl_s)
    return Services(settings=settings, upstream=Upstream(settings, on_resend=metrics.upstream_resends.inc),
                    metrics=metrics, audit=audit, http=http, book=book, guard=book.default, tracing=tracing,
                    gate=gate, held_prompts=held)
