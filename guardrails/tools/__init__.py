"""Tool-call assessment: catalog -> observations (through a ``WorldProbe``) -> pure rules.

``ToolAssessor.assess`` is what the proxy calls for every complete tool call; ``decide`` re-makes
a decision from recorded observations (replay, policy dry-runs) without touching the filesystem.

The names below are imported on first use: the shell parser's worker processes
(``guardrails.tools.shell_worker``) import only the shell analysis, not the policy models (about
40 MB and a second of start-up less per worker).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from guardrails.tools.assessor import ToolAssessor
    from guardrails.tools.probe import FileSystemProbe, WorldProbe
    from guardrails.tools.rules import decide
    from guardrails.tools.verdict import Assessment, policy_fingerprint, policy_snapshot

_HOMES = {"ToolAssessor": "assessor", "FileSystemProbe": "probe", "WorldProbe": "probe", "decide": "rules",
          "Assessment": "verdict", "policy_fingerprint": "verdict", "policy_snapshot": "verdict"}

__all__ = [
    "Assessment",
    "FileSystemProbe",
    "ToolAssessor",
    "WorldProbe",
    "decide",
    "policy_fingerprint",
    "policy_snapshot",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'guardrails.tools' has no attribute {name!r}")
    return getattr(importlib.import_module(f"guardrails.tools.{home}"), name)
