"""Catalog mapping: built-in tools of the three agents, apply_patch, argv lists, policy overrides,
and the careful heuristic for undeclared tools."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

import pytest

from config.policy import ToolSpec, ToolsPolicy
from guardrails.datamodel import HistoryToolCall, ToolCall
from guardrails.tools import Assessment, ToolAssessor
from guardrails.tools.patch import parse_patch

PATCH = """*** Begin Patch
*** Add File: src/new.py
+print('new')
*** Update File: src/app.py
@@
-print('hi')
+print('bye')
*** Move to: src/renamed.py
*** Delete File: README.md
*** End Patch
"""

def _obs(a: Assessment, key: str) -> list[dict[str, Any]]:
    """A list-valued observation, typed for the assertions."""
    return cast(list[dict[str, Any]], a.observations[key])



@pytest.fixture
def ws(tmp_path: Path) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("print('hi')\n")
    (tmp_path / "README.md").write_text("readme\n")
    return tmp_path


def _assess(root: Path, name: str, args: object, history: list[HistoryToolCall] | None = None,
            **policy: object) -> Assessment:
    tools = ToolsPolicy.model_validate({"workspace_root": str(root), **policy})
    text = args if isinstance(args, str) else json.dumps(args)
    return ToolAssessor(tools).assess(ToolCall("c", name, text), history or [])


def _reads(*paths: str) -> list[HistoryToolCall]:
    return [HistoryToolCall(str(i), "read_file", json.dumps({"file_path": p}), True) for i, p in enumerate(paths)]


def test_apply_patch_headers_are_parsed() -> None:
    ops = [(t.op, t.path) for t in parse_patch(PATCH)]
    assert ops == [("add", "src/new.py"), ("update", "src/app.py"), ("move_to", "src/renamed.py"),
                   ("delete", "README.md")]


def test_apply_patch_updating_an_unread_file_is_blocked(ws: Path) -> None:
    a = _assess(ws, "apply_patch", {"input": PATCH})
    assert a.reason_code == "write_without_read" and a.effect == "file_write"
    assert "src/app.py" in a.rationale


def test_apply_patch_after_reading_every_existing_target_passes(ws: Path) -> None:
    a = _assess(ws, "apply_patch", {"input": PATCH}, _reads("src/app.py", "README.md"))
    assert a.decision == "allow"
    assert {t["patch_op"] for t in _obs(a, "targets")} == {"add", "update", "move_to", "delete"}


def test_freeform_apply_patch_takes_the_whole_input_as_the_patch(ws: Path) -> None:
    a = _assess(ws, "apply_patch", PATCH.replace("src/app.py", "../../etc/x"))
    assert a.observations["args"] == "raw_patch"
    assert a.reason_code == "path_outside_workspace"


def test_apply_patch_adding_over_an_existing_unread_file_needs_a_read(ws: Path) -> None:
    patch = "*** Begin Patch\n*** Add File: README.md\n+x\n*** End Patch\n"
    assert _assess(ws, "apply_patch", {"input": patch}).reason_code == "write_without_read"


def test_codex_shell_argv_calling_apply_patch_is_a_write(ws: Path) -> None:
    a = _assess(ws, "shell", {"command": ["apply_patch", PATCH]})
    assert a.effect == "file_write" and a.reason_code == "write_without_read"


def test_codex_heredoc_apply_patch_is_a_write(ws: Path) -> None:
    script = "apply_patch <<'EOF'\n" + PATCH + "EOF\n"
    a = _assess(ws, "shell", {"command": ["bash", "-lc", script]}, _reads("src/app.py", "README.md"))
    assert a.effect == "file_write" and a.decision == "allow"


def test_codex_bash_lc_wrapper_is_the_harness_not_an_interpreter(ws: Path) -> None:
    a = _assess(ws, "shell", {"command": ["bash", "-lc", "ls -la && git status"]})
    assert a.decision == "allow" and a.effect == "exec"
    assert [c["program"] for c in _obs(a, "commands")] == ["ls", "git"]


def test_codex_argv_whose_script_uses_an_interpreter_is_blocked(ws: Path) -> None:
    a = _assess(ws, "shell", {"command": ["bash", "-lc", "python3 -c 'import os'"]})
    assert a.reason_code == "shell_interpreter"
    b = _assess(ws, "shell", {"command": ["python3", "-c", "print(1)"]})
    assert b.reason_code == "shell_interpreter"


def test_codex_exec_command_takes_cmd(ws: Path) -> None:
    assert _assess(ws, "exec_command", {"cmd": "sh -c 'id'"}).reason_code == "shell_interpreter"


def test_gemini_old_parameter_names_are_still_mapped(ws: Path) -> None:
    assert _assess(ws, "read_file", {"absolute_path": "/etc/passwd"}).reason_code == "privileged_path"
    assert _assess(ws, "list_directory", {"path": "/etc"}).reason_code == "privileged_path"


def test_claude_notebook_and_multiedit_are_writes(ws: Path) -> None:
    (ws / "n.ipynb").write_text("{}")
    assert _assess(ws, "NotebookEdit", {"notebook_path": "n.ipynb"}).reason_code == "write_without_read"
    assert _assess(ws, "MultiEdit", {"file_path": "src/app.py", "edits": []}).reason_code == "write_without_read"


def test_policy_catalog_entries_override_builtins(ws: Path) -> None:
    catalog = {"read_file": ToolSpec(effect="none"), "fs_write": ToolSpec(effect="file_write", path="target")}
    assert _assess(ws, "read_file", {"file_path": "/etc/passwd"}, catalog=catalog).decision == "allow"
    assert _assess(ws, "fs_write", {"target": "src/app.py"}, catalog=catalog).reason_code == "write_without_read"


def test_undeclared_tools_are_checked_only_through_path_named_params(ws: Path) -> None:
    a = _assess(ws, "mcp__fs__open", {"path": "/etc/shadow"})
    assert a.effect == "unknown" and a.reason_code == "privileged_path"
    b = _assess(ws, "mcp__notes__save", {"content": "/etc/shadow ../../x", "text": "/root/.ssh/id_rsa"})
    assert b.decision == "allow" and b.observations["targets"] == []


def test_undeclared_tools_are_not_subject_to_read_rules(ws: Path) -> None:
    assert _assess(ws, "mcp__x__stat", {"path": "missing"}).decision == "allow"


def test_unparseable_arguments_are_blocked(ws: Path) -> None:
    a = _assess(ws, "read_file", "{not json")
    assert a.decision == "block" and a.observations["args"] == "invalid_json"
    assert a.reason_code == "unparseable_arguments" and "valid JSON" in a.rationale
    deep = _assess(ws, "Write", '{"file_path": ' + "[" * 5000)
    assert deep.reason_code == "unparseable_arguments"
    assert _assess(ws, "TodoWrite", "{not json").decision == "allow"  # no effect: nothing to judge


def test_truncated_or_trailing_json_is_judged_as_the_client_recovers_it(ws: Path) -> None:
    truncated = _assess(ws, "Write", '{"file_path": "/etc/cron.d/evil", "content": "* * * * * root id')
    assert truncated.observations["args"] == "recovered" and truncated.reason_code == "privileged_path"
    trailing = _assess(ws, "Write", '{"file_path": "/etc/cron.d/evil", "content": "x"} trailing')
    assert trailing.reason_code == "privileged_path"


def test_tools_without_effects_pass(ws: Path) -> None:
    assert _assess(ws, "TodoWrite", {"todos": [{"content": "/etc/passwd"}]}).decision == "allow"


def test_double_encoded_arguments_are_judged_as_the_object_inside(ws: Path) -> None:
    inner = json.dumps({"file_path": "/etc/cron.d/evil", "content": "x"})
    a = _assess(ws, "Write", json.dumps(inner))
    assert a.observations["args"] == "recovered" and a.reason_code == "privileged_path"
