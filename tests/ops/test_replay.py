"""Replay: recorded tool-call decisions are re-made from observations alone, under the recorded
policy or a new one, without touching the filesystem."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest

from config.policy import ToolsPolicy
from guardrails.datamodel import HistoryToolCall, ToolCall
from guardrails.tools import ToolAssessor, decide
from guardrails.tools.replay import main_replay, read_records, replay
from proxy.ops.audit import AuditLog

CALLS = [
    ("read_file", {"file_path": "src/app.py"}),
    ("read_file", {"file_path": "src/missing.py"}),
    ("Edit", {"file_path": "src/app.py", "old_string": "a", "new_string": "b"}),
    ("Write", {"file_path": "docs/new.md", "content": "x"}),
    ("read_file", {"file_path": "../outside.txt"}),
    ("WebFetch", {"url": "https://evil.com/"}),
    ("WebFetch", {"url": "https://api.github.com/"}),
    ("Bash", {"command": "bash -c 'make'"}),
    ("Bash", {"command": "pytest -q"}),
]


@pytest.fixture
def audit(tmp_path: Path) -> tuple[Path, ToolsPolicy]:
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "app.py").write_text("x\n")
    policy = ToolsPolicy(workspace_root=str(ws), egress_allow=["api.github.com"])
    history = [HistoryToolCall("h", "read_file", '{"file_path": "README.md"}', True)]
    path = tmp_path / "audit.jsonl"
    with AuditLog(path) as log:
        log.record("guardrail.tripped", request_id="r0", guardrail_id="no-secrets", reason_code="secret_leak")
        for i, (name, args) in enumerate(CALLS):
            a = ToolAssessor(policy).assess(ToolCall(f"c{i}", name, json.dumps(args)), history)
            log.record_assessment(a, request_id=f"r{i}")  # as the pipeline calls it: no policy
    return path, policy


def _records(path: Path) -> list[dict[str, object]]:
    return list(read_records(path.read_text().splitlines()))


def test_replay_reproduces_every_recorded_decision(audit: tuple[Path, ToolsPolicy]) -> None:
    path, _ = audit
    records = _records(path)
    assert {r.get("reason_code") for r in records} >= {"no_such_path", "write_without_read",
                                                      "path_outside_workspace", "egress_not_allowed",
                                                      "shell_interpreter", None}
    report = replay(records, None)
    assert report.replayed == len(CALLS) and report.reproduced


def test_replay_does_not_touch_the_filesystem(audit: tuple[Path, ToolsPolicy], tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    path, policy = audit
    records = _records(path)
    # Point every observation at paths that do not exist anywhere.
    for r in records:
        obs = r.get("observations")
        if isinstance(obs, dict):
            text = json.dumps(obs).replace(str(tmp_path), "/nonexistent/replay-root")
            r["observations"] = json.loads(text)
            r["policy"] = {**policy.model_dump(mode="json", exclude={"catalog"}),
                           "workspace_root": "/nonexistent/replay-root/ws"}

    def boom(*_: object, **__: object) -> object:
        raise AssertionError("replay touched the filesystem")

    manifest = ToolsPolicy(workspace_root="/nonexistent/replay-root/ws", write_manifest=["src/**"],
                           privileged=["~/.ssh"], agent_workspace_root="/agent", egress_allow=["api.github.com"])
    with monkeypatch.context() as patched:
        for name in ("realpath", "exists", "isdir", "lexists", "expanduser", "abspath"):
            patched.setattr(os.path, name, boom)
        patched.setattr(os, "stat", boom)
        patched.setattr(os, "getcwd", boom)
        report = replay(records, None)
        dry_run = replay(records, manifest)
    assert report.replayed == len(CALLS) and report.reproduced
    assert len(dry_run.differences) == 1


def test_a_changed_policy_shows_the_differences(audit: tuple[Path, ToolsPolicy]) -> None:
    path, policy = audit
    looser = policy.model_copy(update={"egress_allow": ["evil.com", "api.github.com"], "interpreters": [],
                                       "read_before_write": False})
    report = replay(_records(path), looser)
    changed = {(d.tool, d.recorded_reason, d.new_decision) for d in report.differences}
    assert changed == {("WebFetch", "egress_not_allowed", "allow"), ("Bash", "shell_interpreter", "allow"),
                       ("Edit", "write_without_read", "allow")}
    stricter = policy.model_copy(update={"write_manifest": ["src/**"]})
    (diff,) = replay(_records(path), stricter).differences
    assert diff.line() == "r3 Write c3: allow/- -> block/path_outside_manifest"


def test_recorded_grants_are_honoured_on_replay() -> None:
    policy = ToolsPolicy(egress_allow=[])
    a = ToolAssessor(policy).assess(ToolCall("c", "WebFetch", '{"url": "https://docs.python.org/"}'), [],
                                    frozenset({"docs.python.org"}))
    assert a.decision == "allow"
    record = {"event": "tool_call.assessed", "request_id": "r", "tool": a.tool, "effect": a.effect,
              "decision": a.decision, "reason_code": None, "observations": a.observations,
              "policy": policy.model_dump(mode="json")}
    assert replay([record], None).reproduced
    assert decide(a.tool, a.effect, a.observations, policy).decision == "block"


def test_main_replay_exits_0_when_everything_reproduces(audit: tuple[Path, ToolsPolicy]) -> None:
    out, err = io.StringIO(), io.StringIO()
    assert main_replay([str(audit[0])], out, err) == 0
    assert out.getvalue() == "" and f"replayed {len(CALLS)}" in err.getvalue()


def test_main_replay_with_a_policy_file_prints_one_line_per_difference(audit: tuple[Path, ToolsPolicy],
                                                                       tmp_path: Path) -> None:
    path, policy = audit
    policy_file = tmp_path / "policy.toml"
    policy_file.write_text(f'[tools]\nworkspace_root = "{policy.workspace_root}"\n'
                           f'egress_allow = ["api.github.com", "evil.com"]\n')
    out = io.StringIO()
    assert main_replay([str(path), "--policy", str(policy_file)], out, io.StringIO()) == 1
    assert out.getvalue().splitlines() == ["r5 WebFetch c5: block/egress_not_allowed -> allow/-"]


def test_main_replay_exits_2_on_unreadable_input(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"event": "tool_call.assessed"\n')
    assert main_replay([str(bad)], io.StringIO(), io.StringIO()) == 2
    assert main_replay([str(tmp_path / "missing.jsonl")], io.StringIO(), io.StringIO()) == 2
    no_policy = tmp_path / "nopolicy.jsonl"
    no_policy.write_text(json.dumps({"event": "tool_call.assessed", "request_id": "r", "tool": "Read",
                                     "effect": "file_read", "decision": "allow", "observations": {}}) + "\n")
    assert main_replay([str(no_policy)], io.StringIO(), io.StringIO()) == 2
    broken_policy = tmp_path / "p.toml"
    broken_policy.write_text("[tools]\nbogus = 1\n")
    assert main_replay([str(no_policy), "--policy", str(broken_policy)], io.StringIO(), io.StringIO()) == 2
