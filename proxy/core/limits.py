"""Bounds on what one upstream answer may cost: bytes, frame size, tool calls, JSON nesting.

Each bound is a setting (``config.settings``) with a default far above real traffic; past it the
answer fails closed with the API's own error (``UpstreamError`` with a ``reason`` that labels the
fail-closed metric), never with a traceback, a ``RecursionError`` or unbounded memory.

- ``ReadBudget``: the upstream answer in total (``max_response_bytes``) and the bytes read since the
  last complete frame (``max_frame_bytes``: one SSE frame or Gemini array element that never ends).
- ``message_violation``: a finished message with more tool calls than ``max_tool_calls``, or tool
  arguments nested deeper than ``max_json_depth``. Checked before the stream guardrails' whole-text
  checks (tool arguments) and before the message is vetted, so neither runs on what the bound
  rejects, and the cost of assessing it is bounded too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from config.errors import UpstreamError
from config.settings import Settings
from guardrails.datamodel import AssistantMessage

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKET = re.compile(r"[\[\]{}]")


@dataclass(frozen=True, slots=True)
class Limits:
    max_response_bytes: int = 64 * 1024 * 1024
    max_frame_bytes: int = 8 * 1024 * 1024
    max_tool_calls: int = 256
    max_json_depth: int = 64

    @classmethod
    def of(cls, settings: Settings) -> Limits:
        return cls(settings.max_response_bytes, settings.max_frame_bytes, settings.max_tool_calls,
                   settings.max_json_depth)


def json_too_deep(text: str, limit: int) -> bool:
    """True when ``text`` (JSON, maybe invalid) nests arrays/objects deeper than ``limit``.
    O(len(text)) in C-speed regex passes; no recursion, whatever the input."""
    if text.count("[") + text.count("{") <= limit:
        return False
    depth = 0
    for match in _BRACKET.finditer(_STRING.sub('""', text)):
        if match.group() in "[{":
            depth += 1
            if depth > limit:
                return True
        else:
            depth = max(0, depth - 1)
    return False


def tool_call_violation(count: int, limits: Limits) -> UpstreamError | None:
    """More tool calls than ``max_tool_calls`` (checked while a stream is read, and at its end)."""
    if count <= limits.max_tool_calls:
        return None
    return UpstreamError(f"the answer has more than GUARDPROXY_MAX_TOOL_CALLS ({limits.max_tool_calls}) "
                         "tool calls", timeout=False, reason="too_many_tool_calls")


def message_violation(message: AssistantMessage, limits: Limits) -> UpstreamError | None:
    """Why this finished message exceeds a bound (as the error that ends it), or None."""
    calls = message.tool_calls
    too_many = tool_call_violation(len(calls), limits)
    if too_many is not None:
        return too_many
    for call in calls:
        if json_too_deep(call.arguments, limits.max_json_depth):
            return UpstreamError("the arguments of a tool call nest deeper than "  # (no model text in our words)
                                 f"GUARDPROXY_MAX_JSON_DEPTH ({limits.max_json_depth})", timeout=False,
                                 reason="json_too_deep")
    return None


def messages_violation(messages: Iterable[AssistantMessage], limits: Limits) -> UpstreamError | None:
    """The first bound any of ``messages`` (every choice of an answer) exceeds, or None."""
    for message in messages:
        error = message_violation(message, limits)
        if error is not None:
            return error
    return None


class ReadBudget:
    """Counts one upstream answer's bytes as they are read."""

    __slots__ = ("_limits", "_since_frame", "_total")

    def __init__(self, limits: Limits) -> None:
        self._limits = limits
        self._total = 0
        self._since_frame = 0

    def add(self, size: int, framed: bool) -> UpstreamError | None:
        """``size`` more bytes read; ``framed``: the read completed at least one frame (so what is
        pending is at most this read's tail)."""
        self._total += size
        self._since_frame = 0 if framed else self._since_frame + size
        if self._total > self._limits.max_response_bytes:
            return too_large(self._limits)
        if self._since_frame > self._limits.max_frame_bytes:
            return UpstreamError(f"an upstream frame exceeds GUARDPROXY_MAX_FRAME_BYTES "
                                 f"({self._limits.max_frame_bytes} bytes)", timeout=False, reason="frame_too_large")
        return None


def too_large(limits: Limits) -> UpstreamError:
    return UpstreamError(f"the upstream answer exceeds GUARDPROXY_MAX_RESPONSE_BYTES "
                         f"({limits.max_response_bytes} bytes)", timeout=False, reason="response_too_large")
