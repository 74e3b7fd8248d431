"""Everything one running proxy shares across requests, built once from settings and policy."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import structlog

from config.policy import Policy, PolicyError
from config.settings import Settings
from guardrails.message import build_message_guardrails
from guardrails.seams import MessageGuardrail, StreamGuardrail
from guardrails.stream import build_stream_guardrails
from guardrails.tools import ToolAssessor
from proxy.audit import AuditLog
from proxy.metrics import Metrics
from proxy.upstream import Upstream
from proxy.wire.anthropic import AnthropicMessages
from proxy.wire.base import WireFormat
from proxy.wire.gemini import Gemini
from proxy.wire.openai_chat import OpenAIChat
from proxy.wire.openai_responses import OpenAIResponses

log = structlog.get_logger("guardproxy")


def _wires() -> dict[str, WireFormat]:
    formats: list[WireFormat] = [OpenAIChat(), OpenAIResponses(), AnthropicMessages(), Gemini()]
    return {w.name: w for w in formats}


@dataclass
class Services:
    settings: Settings
    policy: Policy
    upstream: Upstream
    metrics: Metrics
    audit: AuditLog
    http: httpx.AsyncClient
    wires: dict[str, WireFormat] = field(default_factory=_wires)
    stream_guardrails: list[StreamGuardrail] = field(default_factory=list)
    message_guardrails: list[MessageGuardrail] = field(default_factory=list)
    assessor: ToolAssessor | None = None
    specs: dict[str, Any] = field(default_factory=dict)
    """Guardrail id -> its policy entry (action, attempts, mandate...)."""
    ready: bool = False

    @property
    def tool_arg_guardrails(self) -> list[StreamGuardrail]:
        """The stream guardrails that also judge tool-call arguments. Not the canary: agents' system
        prompts name the very paths and commands the model is told to use (Gemini CLI names its
        memory file), so a verbatim run of the prompt in an argument is expected, not a leak."""
        return [g for g in self.stream_guardrails if getattr(self.specs.get(g.id), "kind", "") != "canary"]

    @property
    def guarding(self) -> bool:
        return self.settings.guardrails_enabled

    @property
    def buffered(self) -> bool:
        delivery = self.policy.defaults.delivery
        if delivery is None:
            return bool(self.message_guardrails)
        return delivery == "buffered"


def build_services(settings: Settings, policy: Policy) -> Services:
    """Validate and build every guardrail now, so a bad policy fails at start, not on a request."""
    from httpx_aiohttp import AiohttpTransport

    http = httpx.AsyncClient(transport=AiohttpTransport(), timeout=httpx.Timeout(30.0))
    default_replacement = policy.defaults.replacement
    services = Services(
        settings=settings, policy=policy, upstream=Upstream(settings),
        metrics=Metrics(settings.prometheus_multiproc_dir),
        audit=AuditLog(settings.audit_log), http=http,
    )
    if settings.guardrails_enabled:
        try:
            services.stream_guardrails = build_stream_guardrails(policy.stream_guardrails, default_replacement)
        except ValueError as exc:
            raise PolicyError(f"stream_guardrails: {exc}") from exc
        services.message_guardrails = build_message_guardrails(
            policy.message_guardrails, default_replacement, Path(policy.base_dir), http)
        if policy.tools is not None and policy.tools.enabled:
            services.assessor = ToolAssessor(policy.tools, Path(policy.base_dir))
    services.specs = {s.id: s for s in [*policy.stream_guardrails, *policy.message_guardrails]}
    return services
