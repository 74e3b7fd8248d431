"""Which provider and wire format a client path belongs to, and where upstream it goes.

The upstream host is always one of the configured base URLs: nothing in the request (``Host``,
``X-Forwarded-*``, an absolute URL in the path) can point the proxy at another host.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal
from urllib.parse import unquote

Provider = Literal["openai", "anthropic", "gemini"]
WireName = Literal["openai_chat", "openai_responses", "anthropic", "gemini"]

_GEMINI_METHOD = re.compile(r"^/(?:v1|v1beta|v1alpha)/models/[^/:]+:(\w+)$")
_PREFIXES: dict[str, Provider] = {"/openai": "openai", "/anthropic": "anthropic", "/gemini": "gemini"}


@dataclass(frozen=True, slots=True)
class Route:
    provider: Provider
    path: str
    """The path sent upstream (prefix removed), query excluded."""
    wire: WireName | None
    """None: passed through untouched (no guardrails)."""
    stream: bool | None = None
    """Known from the URL (Gemini); None: the body's ``stream`` field decides."""
    sse: bool = True
    """Gemini's ``streamGenerateContent`` without ``alt=sse`` streams a JSON array instead."""


class BadPath(Exception):
    pass


def check_path(raw_path: str) -> None:
    """Refuse traversal and encoded separators rather than guess what the client meant."""
    lowered = raw_path.lower()
    if "%2f" in lowered or "%5c" in lowered or "\\" in raw_path or "%2e" in lowered:
        raise BadPath("encoded path separators are not accepted")
    if any(seg in (".", "..") for seg in unquote(raw_path).split("/")):
        raise BadPath("'.' and '..' path segments are not accepted")
    if not raw_path.startswith("/") or raw_path.startswith("//"):
        raise BadPath("the path must be absolute and name no host")


_OPENAI_PATHS = frozenset({"/v1/chat/completions", "/chat/completions", "/v1/responses", "/responses"})


def _guess_provider(path: str, headers: Mapping[str, str], query: str) -> Provider:
    """A path that names its API decides; headers and the query only settle ambiguous paths. (Letting
    an ``x-api-key`` header or a ``?key=`` query re-route ``/v1/chat/completions`` would turn a
    guarded route into an unguarded passthrough.)"""
    if path in _OPENAI_PATHS:
        return "openai"
    if path.startswith("/v1/messages"):
        return "anthropic"
    if path.startswith(("/v1beta/", "/v1alpha/")) or _GEMINI_METHOD.match(path):
        return "gemini"
    if "anthropic-version" in headers or "x-api-key" in headers:
        return "anthropic"
    if (path.startswith(("/v1beta/", "/v1alpha/")) or "x-goog-api-key" in headers
            or _GEMINI_METHOD.match(path) or query.startswith("key=") or "&key=" in query):
        return "gemini"
    return "openai"


def resolve(path: str, method: str, headers: Mapping[str, str], query: str) -> Route:
    """``headers`` keys are lower-case."""
    check_path(path)
    provider: Provider | None = None
    for prefix, name in _PREFIXES.items():
        if path == prefix or path.startswith(prefix + "/"):
            provider, path = name, path[len(prefix):] or "/"
            break
    if provider is None:
        provider = _guess_provider(path, headers, query)
    if method != "POST":
        return Route(provider, path, None)
    if provider == "openai":
        if path in ("/v1/chat/completions", "/chat/completions"):
            return Route(provider, path, "openai_chat")
        if path in ("/v1/responses", "/responses"):
            return Route(provider, path, "openai_responses")
    elif provider == "anthropic":
        if path == "/v1/messages":
            return Route(provider, path, "anthropic")
    else:
        m = _GEMINI_METHOD.match(path)
        if m and m.group(1) in ("generateContent", "streamGenerateContent"):
            stream = m.group(1) == "streamGenerateContent"
            sse = "alt=sse" in query.split("&")
            return Route(provider, path, "gemini", stream=stream, sse=sse)
    return Route(provider, path, None)
