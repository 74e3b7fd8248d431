"""Tool-call assessment: catalog -> observations (through a ``WorldProbe``) -> pure rules.

``ToolAssessor.assess`` is what the proxy calls for every complete tool call; ``redecide`` re-makes
a decision from recorded observations (replay, policy dry-runs) without touching the filesystem.
"""

from guardrails.tools.assessment import Assessment, policy_fingerprint, policy_snapshot
from guardrails.tools.assessor import ToolAssessor
from guardrails.tools.probe import FileSystemProbe, WorldProbe
from guardrails.tools.rules import redecide

__all__ = [
    "Assessment",
    "FileSystemProbe",
    "ToolAssessor",
    "WorldProbe",
    "policy_fingerprint",
    "policy_snapshot",
    "redecide",
]
