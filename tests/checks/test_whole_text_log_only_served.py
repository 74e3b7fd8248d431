"""A log-only stream guardrail over text that arrives whole (an Anthropic citation, issue #17): the
trip is recorded and the answer goes through unchanged, as it does for streamed text; a guardrail
that blocks still blocks the same citation."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.apis import sdk_call
from tests.fakes.proxy import ProxyServer
from tests.fakes.upstream import FakeUpstream, Reply, sse

START = sse({"type": "message_start", "message": {
    "id": "msg_1", "type": "message", "role": "assistant", "model": "m", "content": [], "stop_reason": None,
    "stop_sequence": None, "usage": {"input_tokens": 5, "output_tokens": 1}}}, "message_start")


def delta(d: dict[str, Any]) -> bytes:
    return sse({"type": "content_block_delta", "index": 0, "delta": d}, "content_block_delta")


CITED = [
    START,
    sse({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        "content_block_start"),
    delta({"type": "text_delta", "text": "The release is next week."}),
    delta({"type": "citations_delta", "citation": {
        "type": "char_location", "cited_text": "Project nightingale ships next week.", "document_index": 0,
        "document_title": "Plans", "start_char_index": 0, "end_char_index": 36}}),
    sse({"type": "content_block_stop", "index": 0}, "content_block_stop"),
    sse({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
         "usage": {"output_tokens": 9}}, "message_delta"),
    sse({"type": "message_stop"}, "message_stop"),
]


def policy(action: str) -> str:
    return f'[[stream_guardrails]]\nid = "codename"\nkind = "regex"\npatterns = ["nightingale"]\naction = "{action}"\n'


@pytest.mark.parametrize("stream", [True, False])
def test_a_log_only_guardrail_records_a_whole_text_trip_and_passes_the_answer(
        upstream_server: FakeUpstream, tmp_path: Path, stream: bool) -> None:
    upstream_server.reset()
    audit = tmp_path / "audit.jsonl"
    with ProxyServer(upstream_server.url, policy("log"), audit_log=str(audit)) as p:
        upstream_server.queue(Reply(raw_frames=CITED) if stream else Reply(raw_body=_unary_body()))
        res = sdk_call(p.url, "anthropic", stream=stream)
    assert res.text == "The release is next week." and res.finish == "end_turn"
    events = [json.loads(line) for line in audit.read_text().splitlines()]
    assert [(e["guardrail_id"], e["decision"]) for e in events] == [("codename", "log")]


def test_a_blocking_guardrail_still_blocks_the_same_citation(upstream_server: FakeUpstream) -> None:
    upstream_server.reset()
    with ProxyServer(upstream_server.url, policy("replace")) as p:
        upstream_server.queue(Reply(raw_frames=CITED))
        res = sdk_call(p.url, "anthropic", stream=True)
    assert res.text.endswith("withheld by a guardrail]") and res.finish == "refusal"


def _unary_body() -> bytes:
    return json.dumps({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "m", "stop_reason": "end_turn",
        "stop_sequence": None, "usage": {"input_tokens": 5, "output_tokens": 9},
        "content": [{"type": "text", "text": "The release is next week.", "citations": [{
            "type": "char_location", "cited_text": "Project nightingale ships next week.", "document_index": 0,
            "document_title": "Plans", "start_char_index": 0, "end_char_index": 36}]}]}).encode()
