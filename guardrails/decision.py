"""Decisions are returned, never raised. Stable ``reason_code`` strings are what clients and logs key on."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final


@dataclass(frozen=True, slots=True)
class Pass:
    """Nothing to do."""


@dataclass(frozen=True, slots=True)
class Block:
    """The guardrail tripped.

    ``replacement`` is what the client is shown instead (may be empty: the policy's action decides
    what text to use). ``rationale`` is told to the model on a retry or a tool feedback round; it
    never contains the blocked text itself.
    """

    reason_code: str
    replacement: str = ""
    rationale: str = ""
    rule: str = ""
    """What was found, never the value: the rule that matched (``github-token``), for the audit log."""


@dataclass(frozen=True, slots=True)
class Redact:
    """Rewrite the offending span in place (``pii``, ``secrets`` with ``action = "redact"``).

    ``start``/``end`` are offsets into the accumulated text; ``mask`` is what stands there instead.
    """

    reason_code: str
    start: int
    end: int
    mask: str
    rule: str = ""
    """What was found, never the value (``github-token``), for the audit log."""


Decision = Pass | Block | Redact
PASS: Final = Pass()

# Stable reason codes (DESIGN.md, "Contract details").
SECRET_LEAK: Final = "secret_leak"
SYSTEM_PROMPT_LEAK: Final = "system_prompt_leak"
PATTERN_MATCH: Final = "pattern_match"
PII: Final = "pii"
MAX_LENGTH: Final = "max_length"
HIDDEN_TEXT: Final = "hidden_text"
JUDGE_VIOLATION: Final = "judge_violation"
WEBHOOK_BLOCK: Final = "webhook_block"
MODERATION_FLAGGED: Final = "moderation_flagged"
JUDGE_UNREADABLE: Final = "judge_unreadable"
"""The judge's reply held no verdict a person could read, and the policy says to block on that."""
UNJUDGEABLE: Final = "unjudgeable"
"""The content itself made the check fail (refused as too long, an encoding error, a crash)."""
PATH_OUTSIDE_WORKSPACE: Final = "path_outside_workspace"
PRIVILEGED_PATH: Final = "privileged_path"
NO_SUCH_PATH: Final = "no_such_path"
WRITE_WITHOUT_READ: Final = "write_without_read"
PATH_OUTSIDE_MANIFEST: Final = "path_outside_manifest"
EGRESS_NOT_ALLOWED: Final = "egress_not_allowed"
SHELL_INTERPRETER: Final = "shell_interpreter"
UNPARSEABLE_ARGUMENTS: Final = "unparseable_arguments"
COMPUTER_USE_NOT_ALLOWED: Final = "computer_use_not_allowed"
TAINTED_EGRESS: Final = "tainted_egress"
"""Untrusted content is in the conversation and the call sends data out (``guardrails.tools.taint``)."""
AUTORUN_SETTING: Final = "autorun_setting"
"""A write into ``.git/`` or a setting that makes programs run code later (``guardrails.tools.autorun``)."""
