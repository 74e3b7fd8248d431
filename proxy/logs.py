"""structlog set up for JSON lines on stderr, with the request id bound per request (contextvars)."""

from __future__ import annotations

import json
import logging
import sys
from typing import Any

import msgspec
import structlog

_ENCODER = msgspec.json.Encoder(enc_hook=repr)


def _dumps(obj: Any, **kw: Any) -> str:
    """One log line's JSON: msgspec (a request line costs ~1 us against ~7 us through ``json.dumps``);
    the standard library whenever msgspec refuses (a lone surrogate, non-string keys)."""
    try:
        return _ENCODER.encode(obj).decode()
    except (TypeError, ValueError, OverflowError, UnicodeError):
        return json.dumps(obj, default=repr)


def configure(level: str = "info") -> None:
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.JSONRenderer(serializer=_dumps),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelName(level.upper())),
        logger_factory=structlog.WriteLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=True,
    )
