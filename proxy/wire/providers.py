"""The one table of what the proxy knows about each provider: the path prefix that names it, the
request headers that hint at it, how its key is sent, the wire format of its errors and of its text
completions (the judge). Routing, error formatting and the judge's completers all read it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

ProviderName = Literal["openai", "anthropic", "gemini"]


@dataclass(frozen=True, slots=True)
class Provider:
    name: ProviderName
    prefix: str
    """``/openai/...``, ``/anthropic/...``, ``/gemini/...``: a path that starts so goes to this provider."""
    wire: str
    """Its own wire format: errors of a request that was not routed, and the judge's completions."""
    key_header: str
    key_scheme: str
    """Prefix of the key in ``key_header`` (``Bearer `` for OpenAI)."""
    fixed_headers: tuple[tuple[str, str], ...] = ()
    """Sent on every call the proxy itself makes (the judge)."""
    hint_headers: tuple[str, ...] = ()
    """Request headers that name this provider when the path does not."""

    def auth_headers(self, key: str) -> list[tuple[str, str]]:
        return [(self.key_header, f"{self.key_scheme}{key}")]


PROVIDERS: dict[ProviderName, Provider] = {
    "openai": Provider("openai", "/openai", "openai_chat", "authorization", "Bearer "),
    "anthropic": Provider("anthropic", "/anthropic", "anthropic", "x-api-key", "",
                          (("anthropic-version", "2023-06-01"),), ("anthropic-version", "x-api-key")),
    "gemini": Provider("gemini", "/gemini", "gemini", "x-goog-api-key", "", (), ("x-goog-api-key",)),
}
_BY_WIRE = {"openai_chat": "openai", "openai_responses": "openai", "anthropic": "anthropic", "gemini": "gemini"}


def by_wire(wire: str) -> Provider:
    """The provider that serves a wire format (unknown names: OpenAI's, the most copied shape)."""
    return PROVIDERS[_BY_WIRE.get(wire, "openai")]  # type: ignore[index]


def by_prefix(first_segment: str) -> Provider | None:
    return next((p for p in PROVIDERS.values() if p.prefix[1:] == first_segment.lower()), None)


def guess(low: str, headers: Mapping[str, str], query: str) -> ProviderName:
    """The provider of a path without a provider prefix. A path that names its API decides; headers
    and the query only settle ambiguous paths. (Letting an ``x-api-key`` header or a ``?key=`` query
    re-route ``/v1/chat/completions`` would turn a guarded route into an unguarded passthrough.)
    ``low`` is the lower-cased canonical path."""
    last = low.rsplit("/", 1)[-1]
    if low.startswith(("/v1beta/", "/v1alpha/", "/v1beta1/")) or ":" in last:
        return "gemini"
    if low.endswith(("/chat/completions", "/responses", "/completions")):
        return "openai"
    if low.startswith(("/v1/messages", "/v1/complete")):
        return "anthropic"
    for p in PROVIDERS.values():
        if any(h in headers for h in p.hint_headers):
            return p.name
    if query.startswith("key=") or "&key=" in query:
        return "gemini"
    return "openai"


def guess_any(path: str, headers: Mapping[str, str], query: str) -> Provider:
    """For a request refused before it could be routed (bad token, bad path): its prefix, else
    ``guess`` on the path as it came."""
    first = path.lstrip("/").split("/", 1)[0]
    return by_prefix(first) or PROVIDERS[guess(path.lower(), headers, query)]
