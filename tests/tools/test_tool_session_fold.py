"""The calls of one message are assessed together: the conversation's history is folded once for all
of them (``ToolAssessor.assess_all``), and each gets exactly the assessment it gets alone."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import overload

from config.policy import ToolsPolicy
from guardrails.datamodel import HistoryToolCall, ToolCall
from guardrails.tools import ToolAssessor


class CountedHistory(Sequence[HistoryToolCall]):
    """A history that counts how often it is walked from the start."""

    def __init__(self, calls: list[HistoryToolCall]) -> None:
        self.calls, self.walks = calls, 0

    @overload
    def __getitem__(self, index: int) -> HistoryToolCall: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[HistoryToolCall]: ...
    def __getitem__(self, index: int | slice) -> HistoryToolCall | Sequence[HistoryToolCall]:
        return self.calls[index]

    def __len__(self) -> int:
        return len(self.calls)

    def __iter__(self) -> Iterator[HistoryToolCall]:
        self.walks += 1
        return iter(self.calls)


def _workspace(tmp_path: Path) -> tuple[ToolAssessor, list[HistoryToolCall], list[ToolCall]]:
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    for name in ("a.py", "b.py", "c.py"):
        (ws / "src" / name).write_text("x = 1\n")
    history = [HistoryToolCall(f"h{i}", "read_file", json.dumps({"file_path": str(ws / "src" / n)}), ok)
               for i, (n, ok) in enumerate([("a.py", True), ("b.py", False), ("a.py", True)])]
    calls = [ToolCall("w1", "write_file", json.dumps({"file_path": str(ws / "src" / "a.py"), "content": "y"})),
             ToolCall("w2", "write_file", json.dumps({"file_path": str(ws / "src" / "b.py"), "content": "y"})),
             ToolCall("r1", "read_file", json.dumps({"file_path": str(ws / "src" / "c.py")})),
             ToolCall("x1", "web_fetch", json.dumps({"url": "https://example.org/"}))]
    return ToolAssessor(ToolsPolicy(workspace_root=str(ws))), history, calls


def test_calls_assessed_together_get_what_each_gets_alone(tmp_path: Path) -> None:
    assessor, history, calls = _workspace(tmp_path)
    together = assessor.assess_all(calls, history)
    alone = [assessor.assess(c, history) for c in calls]
    assert [(a.decision, a.rule, a.reason_code, a.observations) for a in together] == \
           [(a.decision, a.rule, a.reason_code, a.observations) for a in alone]
    assert [a.decision for a in together][:2] == ["allow", "block"]  # b.py's read failed: write_without_read


def test_the_history_is_folded_once_per_message(tmp_path: Path) -> None:
    assessor, history, calls = _workspace(tmp_path)
    counted = CountedHistory(history)
    assessor.assess_all(calls, counted)
    assert counted.walks == 1
