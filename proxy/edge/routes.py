"""Which provider and wire format a client path belongs to, and where upstream it goes.

Routing by spelling is a bypass: an upstream decodes ``/v1/chat/completion%73`` back to its chat
endpoint, so a proxy that routes on the raw spelling relays it unguarded. The path is therefore
reduced to ONE canonical form first (``canonical_path``: escapes of characters a path may hold
literally decoded, ``//`` and a trailing ``/`` collapsed), classified case-insensitively, and that
same canonical form (with the endpoint's standard spelling) is what goes upstream.

Every path the upstream would serve as a model endpoint is either guarded (one of the four wire
formats) or refused on a guarded proxy (``Route.refused``): legacy completions, stored-output
retrieval, batches, assistants threads, realtime, interactions, media generation, and the Gemini
methods that are not ``generateContent``. Everything else is passed through untouched.

The upstream host is always one of the configured base URLs: nothing in the request (``Host``,
``X-Forwarded-*``, an absolute URL in the path) can point the proxy at another host.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal
from urllib.parse import unquote

from config.errors import ClientError
from proxy.wire.providers import ProviderName, by_prefix, guess

Provider = ProviderName
WireName = Literal["openai_chat", "openai_responses", "anthropic", "gemini"]

_VERSIONS = frozenset({"v1", "v1beta", "v1alpha", "v1beta1", "v1beta2", "v1beta3"})
_LITERAL_IN_PATH = frozenset("-._~!$&'()*+,;=:@")
"""Characters a path segment may hold literally (RFC 3986 ``pchar``, besides letters and digits):
their escapes mean the same to the upstream, so they are decoded."""
_REFUSED_ESCAPES = frozenset({"2F", "5C", "25", "3F", "23"})
"""``/``, ``\\``, ``%``, ``?``, ``#``: an escape that changes the path's structure (or double-encodes)
is refused rather than guessed at."""
_ESCAPE = re.compile(r"%(..)?")

_GEMINI_GUARDED = {"generatecontent": "generateContent", "streamgeneratecontent": "streamGenerateContent"}
_GEMINI_REFUSED = frozenset({
    "generatetext", "generatemessage", "generateanswer", "batchgeneratecontent", "asyncbatchgeneratecontent",
    "bidigeneratecontent", "predict", "predictlongrunning", "rawpredict", "streamrawpredict",
    "serverstreamingpredict", "streamingpredict", "chatcompletions", "completions",
})
"""Gemini / Vertex methods that produce model output the proxy does not decode."""
_ALT_NAMES = frozenset({"alt", "$alt"})
_GUARDED_SUFFIXES: tuple[tuple[str, WireName], ...] = (
    ("/chat/completions", "openai_chat"), ("/responses", "openai_responses"), ("/v1/messages", "anthropic"))
"""A POST whose path ends so (under any prefix: Azure deployments, Gemini's ``/v1beta/openai``,
a gateway's own prefix) is that API; ``/messages`` alone is Anthropic's too."""


@dataclass(frozen=True, slots=True)
class Route:
    provider: Provider
    path: str
    """The canonical path sent upstream (prefix removed), query excluded."""
    wire: WireName | None
    """None: passed through untouched (no guardrails), or refused when ``refused`` says why."""
    stream: bool | None = None
    """Known from the URL (Gemini); None: the body's ``stream`` field decides."""
    sse: bool = True
    """Gemini's ``streamGenerateContent`` without ``alt=sse`` streams a JSON array instead."""
    refused: str | None = None
    """A model endpoint whose output the proxy cannot check: refused while guardrails are on."""
    query: str | None = None
    """The canonical query sent upstream; None: the client's own, untouched."""
    endpoint: str | None = None
    """For a guarded route, the standard spelling of the endpoint (``/v1/chat/completions``...)."""
    error_wire: WireName | None = None
    """The format of a refusal when it is not the provider's own (Gemini's OpenAI-compatible paths)."""
    keeps: WireName | None = None
    """A passthrough that puts a system prompt in upstream state for later requests to name
    (``gemini``: creating a ``cachedContents``; ``openai_responses``: creating a conversation): the
    edge remembers it (``proxy.drive.held_prompts``)."""


class BadPath(ClientError):
    pass


def _unescape(m: re.Match[str]) -> str:
    hex2 = m.group(1)
    if hex2 is None or not re.fullmatch(r"[0-9A-Fa-f]{2}", hex2):
        raise BadPath("a '%' in the path must start a percent-escape")
    hex2 = hex2.upper()
    if hex2 in _REFUSED_ESCAPES:
        raise BadPath("encoded path separators are not accepted")
    char = chr(int(hex2, 16))
    return char if char.isascii() and (char.isalnum() or char in _LITERAL_IN_PATH) else f"%{hex2}"


def canonical_path(raw_path: str) -> str:
    """The one spelling the proxy routes on and forwards. Raises ``BadPath`` for traversal, encoded
    separators and host-like paths (refuse rather than guess what the client meant)."""
    if "\\" in raw_path:
        raise BadPath("encoded path separators are not accepted")
    if ";" in raw_path:
        raise BadPath("';' path parameters are not accepted")
    if not raw_path.startswith("/") or raw_path.startswith("//"):
        raise BadPath("the path must be absolute and name no host")
    decoded = _ESCAPE.sub(_unescape, raw_path)
    segments = [s for s in decoded.split("/") if s]
    if any(unquote(s) in (".", "..") for s in segments):
        raise BadPath("'.' and '..' path segments are not accepted")
    return "/" + "/".join(segments)


def check_path(raw_path: str) -> None:
    """Raise ``BadPath`` for a path the proxy refuses to route."""
    canonical_path(raw_path)


_MODEL_METHODS = (*_GEMINI_GUARDED, *_GEMINI_REFUSED)


def _odd_method(path: str, verb: str) -> bool:
    """A model method named anywhere but as the whole of ``verb`` (``m:generateContent:x``,
    ``m:generateContent.x``, ``m:generateContent/x``): what the upstream makes of such a path is
    unknown, so it is refused rather than passed through unguarded."""
    tokens = [t.lower() for seg in path.split("/") for t in seg.split(":")[1:]]
    if tokens and tokens[-1] == verb.lower():
        tokens.pop()
    return any(t.startswith(_MODEL_METHODS) for t in tokens) or (
        verb.lower().startswith(_MODEL_METHODS) and verb.lower() not in _MODEL_METHODS)


def _gemini(path: str, method: str, query: str) -> Route | None:
    """``.../{model}:{method}`` (``models/``, ``tunedModels/``, Vertex publishers and endpoints)."""
    head, _, last = path.rpartition("/")
    name, sep, verb = last.rpartition(":")
    if ":" in path and _odd_method(path, verb if sep else ""):
        return Route("gemini", path, None, refused="an unusual spelling of a Gemini model method")
    if not sep or not name:
        return None
    low = verb.lower()
    if low in _GEMINI_REFUSED:
        return Route("gemini", path, None, refused=f"the Gemini method ':{verb}'")
    canonical = _GEMINI_GUARDED.get(low)
    if canonical is None:
        return None
    if method != "POST":
        return Route("gemini", path, None, refused=f"{method} on ':{verb}'")
    canon = f"{head}/{name}:{canonical}"
    stream = canonical == "streamGenerateContent"
    sse, canon_query = _gemini_alt(query, stream)
    return Route("gemini", canon, "gemini", stream=stream, sse=sse, query=canon_query,
                 endpoint=f":{canonical}")


def _gemini_alt(query: str, stream: bool) -> tuple[bool, str]:
    """Google reads ``alt`` (or ``$alt``) however it is escaped: decide on the decoded value and send
    one canonical ``alt``. ``alt=sse`` streams SSE, none or ``alt=json`` a JSON array; anything else
    (``alt=proto``, two different values) is refused. A unary call gets no ``alt`` at all."""
    kept: list[str] = []
    alts: set[str] = set()
    for pair in query.split("&") if query else []:
        name, _, value = pair.partition("=")
        if unquote(name.replace("+", " ")).strip().lower() in _ALT_NAMES:
            alts.add(unquote(value.replace("+", " ")).strip().lower())
        else:
            kept.append(pair)
    if len(alts) > 1 or not alts <= {"sse", "json"}:
        raise BadPath("the query parameter 'alt' must be 'sse' or 'json', given once")
    sse = stream and alts == {"sse"}
    if sse:
        kept.append("alt=sse")
    return sse, "&".join(kept)


def _refusal(low: str, method: str) -> str | None:
    """Model endpoints whose output the proxy does not decode; ``low`` is the lower-cased path."""
    segs = low.strip("/").split("/")
    last = segs[-1]
    if method == "DELETE":
        return None  # deleting returns no model output
    if last == "completions" and (len(segs) < 2 or segs[-2] != "chat"):
        return "legacy text completions (use /v1/chat/completions)"
    if low == "/v1/complete":
        return "legacy Anthropic text completions (use /v1/messages)"
    if "chat" in segs and "completions" in segs[:-1]:
        return "stored chat completions (their output is not checked again)"
    if low.endswith("/chat/completions") and method != "POST":
        return "stored chat completions (their output is not checked again)"
    if "responses" in segs[:-1] and last not in ("input_items", "input_tokens", "compact"):
        return "stored responses (their output is not checked again)"
    if "conversations" in segs and "items" in segs:
        return "stored conversation items (their output is not checked again)"
    for word, what in (("threads", "Assistants threads and runs"), ("batches", "batches"),
                       ("realtime", "realtime sessions"), ("interactions", "Gemini interactions"),
                       ("images", "image generation"), ("audio", "audio generation and transcription"),
                       ("videos", "video generation")):
        if word in segs:
            return what
    return None


def resolve(path: str, method: str, headers: Mapping[str, str], query: str) -> Route:
    """``path`` is the raw (still escaped) path; ``headers`` keys are lower-case."""
    path = canonical_path(path)
    provider: Provider | None = None
    first, _, rest = path[1:].partition("/")
    if (named := by_prefix(first)) is not None:
        provider, path = named.name, "/" + rest
        first, _, rest = rest.partition("/")
    if first.lower() in _VERSIONS:
        path = "/" + first.lower() + (f"/{rest}" if rest else "")
    low = path.lower()
    if provider is None:
        provider = guess(low, headers, query)
    gemini = _gemini(path, method, query)
    if gemini is not None:
        return gemini if provider == "gemini" or gemini.wire is None else _with_provider(gemini, provider)
    refused = _refusal(low, method)
    if refused is not None:
        openai_shaped = provider == "gemini" and "/openai/" in low
        return Route(provider, path, None, refused=refused, error_wire="openai_chat" if openai_shaped else None)
    for suffix, wire in _GUARDED_SUFFIXES:
        if low.endswith(suffix) or (low == "/messages" and wire == "anthropic"):
            path = path[:-len(suffix)] + suffix if low.endswith(suffix) else low
            if method in ("OPTIONS", "HEAD"):
                return Route(provider, path, None)  # no model output: CORS preflights, probes
            if method != "POST":
                return Route(provider, path, None, refused=f"{method} on a model endpoint")
            return Route(provider, path, wire, endpoint=suffix)
    if method == "POST":
        last = low.rsplit("/", 1)[-1]
        if last == "cachedcontents":
            return Route(provider, path, None, keeps="gemini")
        if last == "conversations":
            return Route(provider, path, None, keeps="openai_responses")
    return Route(provider, path, None)


def _with_provider(route: Route, provider: Provider) -> Route:
    """A Gemini method under an explicit ``/openai`` or ``/anthropic`` prefix goes to that base."""
    return dataclasses.replace(route, provider=provider)
