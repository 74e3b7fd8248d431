"""Tool-call assessment: catalog -> observations (through a ``WorldProbe``) -> pure rules.

``ToolAssessor.assess`` is what the proxy calls for every complete tool call; ``decide`` re-makes
a decision from recorded observations (replay, policy dry-runs) without touching the filesystem.
"""

from guardrails.tools.assessor import ToolAssessor
from guardrails.tools.probe import FileSystemProbe, WorldProbe
from guardrails.tools.rules import decide
from guardrails.tools.verdict import Assessment, policy_fingerprint, policy_snapshot

__all__ = [
    "Assessment",
    "FileSystemProbe",
    "ToolAssessor",
    "WorldProbe",
    "decide",
    "policy_fingerprint",
    "policy_snapshot",
]
