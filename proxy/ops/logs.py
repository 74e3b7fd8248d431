"""structlog set up for JSON lines on stderr, with the request id bound per request (contextvars)."""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import MutableMapping
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


class UtcStamp:
    """Adds ``timestamp``: ISO 8601 in UTC with microseconds and ``Z``, as structlog's
    ``TimeStamper(fmt="iso", utc=True)`` writes it (always with six decimals, where ``isoformat`` drops
    a zero fraction). The date and time of day are formatted once per second: ``datetime.now()`` and
    ``isoformat()`` on every line cost about a fifth of a request's log line (19k of 87k instructions)."""

    __slots__ = ("_second",)

    def __init__(self) -> None:
        self._second: tuple[int, str] = (-1, "")
        """The second formatted last, with its text (one tuple: a thread that logs too reads both or neither)."""

    def __call__(self, logger: Any, method: str, event_dict: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
        second, micro = divmod(time.time_ns() // 1000, 1_000_000)
        cached = self._second
        if cached[0] != second:
            cached = self._second = (second, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second)))
        event_dict["timestamp"] = f"{cached[1]}.{micro:06d}Z"
        return event_dict


def configure(level: str = "info") -> None:
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            UtcStamp(),
            structlog.processors.JSONRenderer(serializer=_dumps),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelName(level.upper())),
        logger_factory=structlog.WriteLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=True,
    )
