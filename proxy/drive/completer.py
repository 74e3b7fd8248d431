"""Text completers for the LLM judge: one stateless, non-streaming call at temperature 0.

By default the judge goes to the request's own upstream, in the request's own wire format, with the
request's own credentials (no extra setup). A judge may instead name its own upstream and key.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING

from config.errors import UpstreamError
from guardrails.seams import CheckUnavailable, CompleterError, TextCompleter
from proxy.upstream.forwarding import Upstream
from proxy.wire.base import WireFormat, dumps
from proxy.wire.providers import by_wire

if TYPE_CHECKING:
    from proxy.drive.services import Services

_AUTH_HEADERS = ("authorization", "x-api-key", "x-goog-api-key", "api-key", "anthropic-version",
                 "openai-organization", "openai-project")


_ERROR_DETAIL_BYTES = 2000
"""How much of a judge's error body the judge may read to tell a refused parameter from an outage."""


class _Completer:
    def __init__(self, upstream: Upstream, wire: WireFormat, base_url: str, headers: list[tuple[str, str]],
                 query: str = "", path: str | None = None) -> None:
        self._upstream, self._wire, self._base, self._headers, self._query = (
            upstream, wire, base_url, headers, query)
        self._path = path

    async def complete(self, prompt: str, *, model: str, temperature: float | None = 0.0) -> str:
        path, body = self._wire.judge_request(model, prompt, temperature=temperature)
        path = self._path or path
        url = self._base + path + (f"?{self._query}" if self._query else "")
        try:
            resp = await self._upstream.request("POST", url, self._headers, dumps(body).encode())
            try:
                raw = await resp.read()
            finally:
                resp.close()
        except UpstreamError as exc:
            raise CheckUnavailable(str(exc)) from None
        if resp.status != 200:
            raise CompleterError(resp.status, raw[:_ERROR_DETAIL_BYTES].decode("utf-8", "replace"))
        try:
            return self._wire.decode_response(raw).text
        except (ValueError, KeyError, IndexError, TypeError):
            raise CheckUnavailable("the judge answered a body that is not a response") from None


def _key_query(query: str) -> str:
    return "&".join(p for p in query.split("&") if p.startswith("key="))


def request_completer(s: Services, wire: WireFormat, provider: str, client_headers: list[tuple[str, str]],
                      query: str, same_endpoint: str | None = None) -> TextCompleter:
    """The request's own upstream and credentials (only the auth headers are reused)."""
    headers = [(k, v) for k, v in client_headers if k in _AUTH_HEADERS]
    headers.append(("content-type", "application/json"))
    judge_wire = wire if wire.name != "openai_responses" else s.wires["openai_responses"]
    # The OpenAI shapes are served under many prefixes (Azure deployments, Gemini's /v1beta/openai):
    # the judge asks the very endpoint the client used (``same_endpoint``), with its query (api-version).
    return _Completer(s.upstream, judge_wire, s.upstream.bases[provider], headers,
                      query if same_endpoint else _key_query(query), same_endpoint)


def completer_factory(s: Services, client_headers: list[tuple[str, str]], client_provider: str,
                      ) -> Callable[[str, str | None, str | None], TextCompleter | None]:
    """For a judge that names its own upstream: ``(wire, base_url, api_key_env)``."""

    def make(wire_name: str, base_url: str | None, api_key_env: str | None) -> TextCompleter | None:
        wire = s.wires.get(wire_name)
        if wire is None:
            return None
        provider = by_wire(wire_name)
        key = os.environ.get(api_key_env, "") if api_key_env else ""
        base = (base_url or s.upstream.bases[provider.name]).rstrip("/")
        headers = [("content-type", "application/json")]
        if key:
            headers += provider.auth_headers(key)
        elif provider.name == client_provider and base == s.upstream.bases[provider.name]:
            # The client's own credentials go only where the client's request itself goes: the same
            # provider at the same base URL. A judge with its own host never receives them.
            headers += [(k, v) for k, v in client_headers if k in _AUTH_HEADERS]
        headers += [(k, v) for k, v in provider.fixed_headers if all(k != h for h, _ in headers)]
        return _Completer(s.upstream, wire, base, headers)

    return make
