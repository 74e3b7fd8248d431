"""What the driver acts on, and the one place where an action is chosen.

``OnTrip`` is what the policy says a guardrail's block does (built once when the policy loads). A
``Finding`` is a block from any seam (stream guardrail, message guardrail, tool rule) carrying the
policy that applies to it. ``choose`` turns it into what to do now, given the request's mode and the
attempts already spent: retries are for interactive clients; non-interactive ones are rejected.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from guardrails.datamodel import ToolCall

Source = Literal["stream", "message", "tool"]
Act = Literal["replace", "retry", "reject", "log", "feedback", "explain"]


@dataclass(frozen=True, slots=True)
class OnTrip:
    """One guardrail's policy for a block, resolved from its policy entry and the defaults."""

    action: str = "replace"
    """``replace`` | ``retry`` | ``reject`` | ``log`` | ``redact`` (stream guardrails)."""
    replacement: str = ""
    """The guardrail's own replacement, else the policy default."""
    max_attempts: int = 3
    mandate: str | None = None
    final_action: str = "replace"
    """What a ``retry`` does once its attempts are spent."""
    timeout_s: float = 3.0
    """Message guardrails: the runner's deadline."""


@dataclass(frozen=True, slots=True)
class Finding:
    source: Source
    guardrail_id: str
    """The guardrail id, or the tool rule for tool findings."""
    reason_code: str
    action: str
    replacement: str
    rationale: str = ""
    max_attempts: int = 3
    mandate: str | None = None
    final_action: str = "replace"
    blocked_calls: tuple[tuple[ToolCall, str], ...] = field(default=())
    """Tool findings: each blocked call with its rationale."""
    rule: str = ""
    """Stream findings: the rule that matched (a secrets rule id), never the value."""


def named(template: str, guardrail_id: str, rule: str) -> str:
    """A replacement text with what tripped filled in: ``{guardrail}``, and ``{rule}`` (and
    ``{category}``, which a block that lost its finder's detail names by the rule) when known."""
    if not rule:
        return template
    return template.replace("{guardrail}", guardrail_id).replace("{rule}", rule).replace("{category}", rule)


def finding_of(source: Source, guardrail_id: str, reason_code: str, rationale: str, replacement: str | None,
               on: OnTrip, rule: str = "") -> Finding:
    """A stream or message guardrail's block under its policy; the decision's own replacement wins."""
    return Finding(source, guardrail_id, reason_code, on.action, replacement or on.replacement, rationale,
                   on.max_attempts, on.mandate, on.final_action, rule=rule)


def choose(finding: Finding, *, interactive: bool, attempts_used: int, feedback_rounds_used: int,
           max_feedback_rounds: int) -> Act:
    if finding.source == "tool":
        if finding.action == "reject":
            return "reject"
        if finding.action == "feedback" and feedback_rounds_used < max_feedback_rounds:
            return "feedback"
        return "explain"
    action = finding.action
    if action == "redact":
        action = "replace"
    if action == "retry":
        if not interactive:
            return "reject"
        if attempts_used < finding.max_attempts:
            return "retry"
        action = finding.final_action
    if action in ("replace", "reject", "log"):
        return action  # type: ignore[return-value]
    return "replace"
