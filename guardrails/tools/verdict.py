"""The verdict on one tool call, and the policy facts an audit record needs to reproduce it."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Literal

from config.policy import ToolsPolicy
from guardrails.decision import PASS, Block, Pass

# Rule ids, in the fixed order the rules run (the first block wins; see rules.RULES).
PATH_CONTAINMENT = "path_containment"
AUTORUN = "autorun"
WRITE_MANIFEST = "write_manifest"
NO_SUCH_PATH = "no_such_path"
READ_BEFORE_WRITE = "read_before_write"
SHELL_INTERPRETER = "shell_interpreter"
EGRESS = "egress_allowlist"
UNPARSEABLE = "unparseable_arguments"
COMPUTER_USE = "computer_use"
TAINTED_EGRESS = "tainted_egress"


@dataclass(frozen=True)
class Assessment:
    """One verdict per tool call. Every rule's observations are recorded, even after the first block."""

    tool: str
    effect: str
    """file_read | file_write | exec | network | computer | none | unknown"""
    decision: Literal["allow", "block"]
    rule: str | None
    """The id of the rule that blocked (``path_containment``, ...); None when allowed."""
    reason_code: str | None
    """A stable code from ``guardrails.decision``; None when allowed."""
    rationale: str
    """Told to the model as the tool result on feedback. Names paths and hosts the model itself
    wrote; never file contents, never secrets."""
    observations: dict[str, object] = field(default_factory=dict)
    """JSON-able facts the decision was made on (schema: ``guardrails.tools.observe``)."""
    call_id: str = ""
    policy: dict[str, object] | None = None
    """The tools policy snapshot the call was judged under (``policy_snapshot``), set by
    ``ToolAssessor`` so that the audit record can be replayed without the policy file."""
    policy_fingerprint: str = ""

    @property
    def blocked(self) -> bool:
        return self.decision == "block"

    def to_decision(self) -> Pass | Block:
        """The same verdict in the shape the other guardrails return."""
        if self.reason_code is None:
            return PASS
        return Block(self.reason_code, rationale=self.rationale)


def policy_snapshot(policy: ToolsPolicy) -> dict[str, object]:
    """The parts of the tools policy that the pure rules read, for an audit record. The catalog is
    left out: it was already applied when the call was observed, and replay never re-observes."""
    return policy.model_dump(mode="json", exclude={"catalog"})


def policy_fingerprint(policy: ToolsPolicy) -> str:
    """A short stable hash of the whole tools policy (catalog included), to spot policy changes."""
    canonical = json.dumps(policy.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]
