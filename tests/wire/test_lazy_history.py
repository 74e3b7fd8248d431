"""The request's tool-call history is folded only when something reads it (the tool rules), once."""

from __future__ import annotations

from guardrails.datamodel import HistoryToolCall, LazyHistory
from proxy.wire.openai_chat import OpenAIChat


def test_folds_once_and_only_when_read() -> None:
    calls = [HistoryToolCall("c1", "read_file", '{"file_path": "a"}', True)]
    folds: list[int] = []

    def fold() -> list[HistoryToolCall]:
        folds.append(1)
        return calls

    history = LazyHistory(fold)
    assert folds == []
    assert len(history) == 1 and history[0].name == "read_file" and list(history) == calls
    assert history == calls and folds == [1]


def test_parse_request_defers_the_fold_and_reads_the_same_history() -> None:
    body = {"model": "m", "messages": [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": '{"file_path":"a"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "x = 1"},
        {"role": "user", "content": "go on"}]}
    view = OpenAIChat().parse_request(body, stream=False)
    assert isinstance(view.history, LazyHistory)
    assert view.history == [HistoryToolCall("c1", "read_file", '{"file_path":"a"}', True)]
