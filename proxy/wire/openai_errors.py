"""The error object both OpenAI APIs (Chat Completions and Responses) send, by ``ErrorKind``."""

from __future__ import annotations

from typing import Any

from proxy.wire.base import ErrorKind

_ERROR_TYPES: dict[str, tuple[str, str | None]] = {
    "invalid_request": ("invalid_request_error", None),
    "authentication": ("authentication_error", "invalid_api_key"),
    "permission": ("permission_error", None),
    "not_found": ("invalid_request_error", "not_found"),
    "too_large": ("invalid_request_error", "request_too_large"),
    "rate_limit": ("requests", "rate_limit_exceeded"),
    "upstream": ("server_error", "upstream_error"),
    "timeout": ("server_error", "upstream_timeout"),
    "guardrail": ("invalid_request_error", "content_filter"),
    "overloaded": ("server_error", "overloaded"),
}

def error_object(message: str, kind: ErrorKind, extra: dict[str, str] | None = None) -> dict[str, Any]:
    etype, code = _ERROR_TYPES[kind]
    err: dict[str, Any] = {"message": message, "type": etype, "param": None, "code": code}
    if extra:
        err.update(extra)
    return {"error": err}
