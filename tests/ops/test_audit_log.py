"""The audit log writer: JSON lines, required fields, structured fields only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from config.policy import ToolsPolicy
from guardrails.datamodel import ToolCall
from guardrails.tools import ToolAssessor
from proxy.ops.audit import AuditLog, assessment_event


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_records_are_appended_as_json_lines_with_the_required_fields(tmp_path: Path) -> None:
    path = tmp_path / "logs" / "audit.jsonl"
    with AuditLog(path) as log:
        log.record("guardrail.tripped", request_id="r1", guardrail_id="no-secrets",
                   reason_code="secret_leak", decision="replace")
        log.record("fail_open", request_id="r2", guardrail_id="judge", error_kind="timeout", decision="pass")
    with AuditLog(path) as log:  # a second process appends, never truncates
        log.record("retry", request_id="r3", guardrail_id="judge", attempt=2)
    lines = _lines(path)
    assert [line["request_id"] for line in lines] == ["r1", "r2", "r3"]
    for line in lines:
        assert {"ts", "request_id", "event", "reason_code", "decision"} <= set(line)
        assert str(line["ts"]).endswith("Z")
    assert lines[2]["reason_code"] is None


def test_free_text_fields_are_refused(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "a.jsonl")
    with pytest.raises(TypeError):
        log.record("message.replaced", request_id="r", guardrail_id="g", text="the blocked answer")
    with pytest.raises(TypeError):
        log.record("message.replaced", request_id="r", replacement="x")
    with pytest.raises(ValueError):
        log.record("something.else", request_id="r", guardrail_id="g")
    assert not (tmp_path / "a.jsonl").exists()


def test_a_log_without_a_path_is_a_validating_no_op(tmp_path: Path) -> None:
    log = AuditLog(None)
    line = log.record("retry", request_id="r", guardrail_id="g", decision="retry")
    assert line["event"] == "retry"
    with pytest.raises(TypeError):
        log.record("retry", request_id="r", guardrail_id="g", body="x")


def test_tool_call_events_carry_observations_and_the_policy_to_replay_them(tmp_path: Path) -> None:
    policy = ToolsPolicy(workspace_root=str(tmp_path), egress_allow=["api.github.com"])
    a = ToolAssessor(policy).assess(ToolCall("call-7", "WebFetch", '{"url": "https://evil.com/"}'), [])
    event = assessment_event(a, "r9", policy)
    assert event["event"] == "tool_call.assessed" and event["call_id"] == "call-7"
    path = tmp_path / "audit.jsonl"
    with AuditLog(path) as log:
        log.record_assessment(a, "r9", policy)
    (line,) = _lines(path)
    assert line["rule"] == "egress_allowlist" and line["reason_code"] == "egress_not_allowed"
    assert line["decision"] == "block" and line["tool"] == "WebFetch" and line["effect"] == "network"
    assert line["observations"]["urls"][0]["host"] == "evil.com"
    assert line["policy"]["egress_allow"] == ["api.github.com"]
    assert len(str(line["policy_fingerprint"])) == 16


def test_the_assessors_policy_rides_along_when_none_is_passed(tmp_path: Path) -> None:
    policy = ToolsPolicy(egress_allow=["x.org"])
    a = ToolAssessor(policy).assess(ToolCall("c", "Bash", '{"command": "ls"}'), [])
    line = AuditLog(None).record_assessment(a, request_id="r")
    assert line["policy"] == policy.model_dump(mode="json", exclude={"catalog"})
    assert line["decision"] == "allow" and line["rule"] is None


def test_the_pipelines_structured_fields_are_accepted() -> None:
    log = AuditLog(None)
    log.record("fail_open", request_id="r", guardrail_id="judge", reason_code=None, decision="pass",
               detail="timeout", latency_ms=3001.2)
    log.record("tool_call.blocked", request_id="r", guardrail_id="path_containment",
               reason_code="privileged_path", decision="feedback", source="tool", attempt=1)
