"""The append-only audit log: one JSON object per line, one line per decision.

Contract (DESIGN.md): every line has ``ts`` (ISO-8601 UTC), ``request_id``, ``event`` (one of
``EVENTS``), ``guardrail_id`` or ``rule``, ``reason_code`` and ``decision``; tool-call lines add
``tool``, ``effect``, ``observations``, the tools ``policy`` snapshot and its ``policy_fingerprint``,
so ``guardproxy replay`` can re-make each decision without the policy file.

Blocked text and secrets never reach this file: ``record`` accepts only the structured fields in
``FIELDS`` (an unknown field is a programming error and raises ``TypeError``), and the only free
text it takes is ``rationale``, which the rules write without file contents or secrets.

Model-chosen strings still get in (a tool name, a path in ``observations``): every string except the
operator's ``policy`` snapshot is capped at ``max_field_chars`` (a system prompt the model used as a
path is not logged whole) and has lone surrogates replaced, so no tool name can make a write fail.
The file is opened when the log is made, so an unwritable path stops the proxy at start.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import IO, Final, Self

from config.policy import ToolsPolicy
from guardrails.message.content import safe_text
from guardrails.tools.verdict import Assessment, policy_fingerprint, policy_snapshot

TOOL_CALL_ASSESSED: Final = "tool_call.assessed"
EVENTS: Final = frozenset({"guardrail.tripped", "message.replaced", "retry", "fail_open", TOOL_CALL_ASSESSED,
                           "tool_call.blocked", "unseen_prompt",
                           "state_unavailable"})
FIELDS: Final = frozenset({
    "guardrail_id", "rule", "reason_code", "decision", "action", "attempt", "part", "mode", "wire",
    "model", "stage", "round", "source", "error_kind", "detail", "latency_ms", "elapsed_ms", "status",
    "tool", "call_id", "effect", "observations", "rationale", "policy", "policy_fingerprint", "policy_name",
})
"""Every field a line may carry besides ``ts``, ``request_id`` and ``event``. ``detail`` is a short
code (``timeout``, ``error:TimeoutError``), never an error message that could quote upstream text."""
_NULLED: Final = ("reason_code", "decision")
_VERBATIM: Final = frozenset({"policy", "policy_fingerprint"})
"""Fields written as given: the operator's own policy, which replay needs whole."""
DEFAULT_MAX_FIELD_CHARS: Final = 512


def bounded(value: object, limit: int) -> object:
    """``value`` with every string (keys too) made encodable and cut to ``limit`` characters, the cut
    marked with how much was left out."""
    if isinstance(value, str):
        text = safe_text(value)
        return text if len(text) <= limit else f"{text[:limit]}…[+{len(text) - limit} chars]"
    if isinstance(value, dict):
        return {bounded(k, limit): bounded(v, limit) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [bounded(v, limit) for v in value]
    return value


class AuditLog:
    """Appends JSON lines to ``path``; a no-op sink when ``path`` is None (validation still runs, so
    a bad call fails in tests whether or not a log is configured).

    The file is opened once in append mode; each line is a single ``write`` followed by ``flush``, so
    a crash loses at most the line being written and concurrent writers (O_APPEND) do not interleave
    lines shorter than the pipe buffer. A lock serialises writers from worker threads.
    """

    def __init__(self, path: str | Path | None, max_field_chars: int = DEFAULT_MAX_FIELD_CHARS) -> None:
        self.to_stdout = str(path) == "-"
        """``AUDIT_LOG=-``: JSON lines on standard output, for a cluster's log pipeline."""
        self.path = Path(path) if path and not self.to_stdout else None
        self.max_field_chars = max_field_chars
        self._file: IO[str] | None = None
        self._lock = threading.Lock()
        self.listeners: list[Callable[[dict[str, object]], None]] = []
        """Called with each record as written (the live decision feed, ``GET /events``)."""

    def open(self) -> None:
        """Open (and create) the file now. Raises ``OSError`` when it cannot be written."""
        if self.path is None:
            return
        with self._lock:
            if self._file is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._file = self.path.open("a", encoding="utf-8")

    def reopen(self) -> None:
        """Close the file and open ``path`` again (on SIGUSR1): after logrotate moved it away, lines
        go to a new file instead of the moved one. A path that cannot be opened now keeps the old file."""
        if self.path is None:
            return
        with self._lock:
            try:
                fresh = self.path.open("a", encoding="utf-8")
            except OSError:
                return
            old, self._file = self._file, fresh
            if old is not None:
                old.close()

    def record(self, event: str, *, request_id: str, **fields: object) -> dict[str, object]:
        """Write one line; returns the record as written (for tests and structlog)."""
        if event not in EVENTS:
            raise ValueError(f"unknown audit event {event!r}")
        unknown = set(fields) - FIELDS
        if unknown:
            raise TypeError(f"audit fields not allowed: {sorted(unknown)}")
        if "guardrail_id" not in fields and "rule" not in fields:
            raise TypeError("an audit record names its guardrail_id or rule")
        line: dict[str, object] = {"ts": _now(), "request_id": request_id, "event": event}
        line.update({k: None for k in _NULLED})
        line.update({k: v if k in _VERBATIM else bounded(v, self.max_field_chars) for k, v in fields.items()})
        text = json.dumps(line, ensure_ascii=False, separators=(",", ":"), allow_nan=False) + "\n"
        if self.path is not None:
            self.open()
            with self._lock:
                assert self._file is not None
                self._file.write(text)
                self._file.flush()
        elif self.to_stdout:
            with self._lock:
                sys.stdout.write(text)
                sys.stdout.flush()
        for listener in self.listeners:
            listener(line)
        return line

    def record_assessment(self, assessment: Assessment, request_id: str,
                          policy: ToolsPolicy | None = None, policy_name: str | None = None) -> dict[str, object]:
        fields = assessment_event(assessment, request_id, policy)
        del fields["event"], fields["request_id"]
        if policy_name is not None:
            fields["policy_name"] = policy_name
        return self.record(TOOL_CALL_ASSESSED, request_id=request_id, **fields)

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def assessment_event(assessment: Assessment, request_id: str,
                     policy: ToolsPolicy | None = None) -> dict[str, object]:
    """The keyword arguments of ``AuditLog.record`` for one assessed tool call. The policy snapshot
    comes from ``policy`` when given, else from the assessment (``ToolAssessor`` attaches it)."""
    fields: dict[str, object] = {
        "event": TOOL_CALL_ASSESSED, "request_id": request_id, "rule": assessment.rule,
        "reason_code": assessment.reason_code, "decision": assessment.decision,
        "tool": assessment.tool, "call_id": assessment.call_id, "effect": assessment.effect,
        "observations": assessment.observations, "rationale": assessment.rationale or None,
    }
    if policy is not None:
        fields["policy"] = policy_snapshot(policy)
        fields["policy_fingerprint"] = policy_fingerprint(policy)
    elif assessment.policy is not None:
        fields["policy"] = assessment.policy
        fields["policy_fingerprint"] = assessment.policy_fingerprint
    return fields
