"""Path rules on a real workspace: containment, privileged places, no-such-path, read-before-write,
write manifests. Real directories and real symlinks under tmp_path."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, cast

import pytest

from config.policy import ToolsPolicy
from guardrails.datamodel import HistoryToolCall, ToolCall
from guardrails.tools import Assessment, ToolAssessor


def _obs(a: Assessment, key: str) -> list[dict[str, Any]]:
    """A list-valued observation, typed for the assertions."""
    return cast(list[dict[str, Any]], a.observations[key])



@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("print('hi')\n")
    (root / "README.md").write_text("readme\n")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("s\n")
    return root


def _assess(root: Path | str, name: str, args: dict[str, object] | str,
            history: list[HistoryToolCall] | None = None, **policy: object) -> Assessment:
    tools = ToolsPolicy.model_validate({"workspace_root": str(root), **policy})
    text = args if isinstance(args, str) else json.dumps(args)
    return ToolAssessor(tools).assess(ToolCall("c1", name, text), history or [])


def _read(path: str, ok: bool | None = True, name: str = "read_file") -> HistoryToolCall:
    key = "file_path"
    return HistoryToolCall("h", name, json.dumps({key: path}), ok)


def test_read_inside_the_workspace_is_allowed(ws: Path) -> None:
    a = _assess(ws, "read_file", {"file_path": str(ws / "src/app.py")})
    assert a.decision == "allow" and a.effect == "file_read"
    target = _obs(a, "targets")[0]
    assert target["exists"] is True and target["in_workspace"] is True
    assert a.observations["resolution"] == "realpath"


def test_relative_paths_are_joined_to_the_workspace(ws: Path) -> None:
    a = _assess(ws, "Read", {"file_path": "src/app.py"})
    assert a.decision == "allow"
    assert _obs(a, "targets")[0]["resolved"] == os.path.realpath(ws / "src/app.py")


def test_dot_dot_escape_is_outside_the_workspace(ws: Path) -> None:
    a = _assess(ws, "read_file", {"file_path": "src/../../outside/secret.txt"})
    assert (a.decision, a.rule, a.reason_code) == ("block", "path_containment", "path_outside_workspace")
    assert "outside the workspace" in a.rationale


def test_absolute_path_outside_the_workspace_is_blocked(ws: Path, tmp_path: Path) -> None:
    a = _assess(ws, "Write", {"file_path": str(tmp_path / "outside/new.txt"), "content": "x"})
    assert a.reason_code == "path_outside_workspace"


def test_symlink_inside_the_workspace_pointing_outside_is_outside(ws: Path, tmp_path: Path) -> None:
    (ws / "link").symlink_to(tmp_path / "outside")
    a = _assess(ws, "read_file", {"file_path": "link/secret.txt"})
    assert a.reason_code == "path_outside_workspace"
    assert "symbolic link" in a.rationale


def test_spelling_variants_resolve_to_the_same_file(ws: Path) -> None:
    history = [_read("./src/../src/app.py")]
    a = _assess(ws, "replace", {"file_path": str(ws / "src" / "." / "app.py"), "old_string": "a",
                                "new_string": "b"}, history)
    assert a.decision == "allow"
    assert _obs(a, "targets")[0]["read_before"] is True


def test_agent_root_is_mapped_onto_the_workspace(ws: Path) -> None:
    a = _assess(ws, "read_file", {"file_path": "/home/agent/proj/src/app.py"},
                agent_workspace_root="/home/agent/proj")
    assert a.decision == "allow"
    assert _obs(a, "targets")[0]["resolved"] == os.path.realpath(ws / "src/app.py")


def test_agent_root_escape_is_still_caught(ws: Path) -> None:
    a = _assess(ws, "read_file", {"file_path": "/home/agent/proj/../other/x"},
                agent_workspace_root="/home/agent/proj")
    assert a.decision == "block" and a.rule == "path_containment"


def test_privileged_home_forms_are_blocked(ws: Path) -> None:
    for path in ("~/.ssh/id_rsa", "/root/.ssh/id_rsa", "/home/alice/.ssh/config", "/etc/passwd"):
        a = _assess(ws, "read_file", {"file_path": path})
        assert (a.reason_code, a.rule) == ("privileged_path", "path_containment"), path
        assert _obs(a, "targets")[0]["privileged"]


def test_privileged_entry_containing_the_workspace_does_not_block_the_workspace(ws: Path, tmp_path: Path) -> None:
    a = _assess(ws, "read_file", {"file_path": "src/app.py"}, privileged=[str(tmp_path)])
    assert a.decision == "allow"
    b = _assess(ws, "read_file", {"file_path": str(tmp_path / "outside/secret.txt")}, privileged=[str(tmp_path)])
    assert b.reason_code == "privileged_path"


def test_path_rules_are_off_without_a_workspace_root() -> None:
    a = ToolAssessor(ToolsPolicy()).assess(ToolCall("c", "read_file", '{"file_path": "/etc/passwd"}'), [])
    assert a.decision == "allow" and a.observations["resolution"] == "none"


def test_unmounted_workspace_falls_back_to_lexical_resolution(tmp_path: Path) -> None:
    root = tmp_path / "not-mounted"
    a = _assess(root, "read_file", {"file_path": "a/../../escape.txt"})
    assert a.reason_code == "path_outside_workspace"
    assert a.observations["resolution"] == "lexical"
    b = _assess(root, "Write", {"file_path": "new.txt", "content": "x"})
    assert b.decision == "allow"
    assert _obs(b, "targets")[0]["exists"] is None


def test_reading_a_missing_file_is_blocked_with_a_hint_to_list_the_directory(ws: Path) -> None:
    a = _assess(ws, "read_file", {"file_path": "src/ap.py"})
    assert (a.rule, a.reason_code) == ("no_such_path", "no_such_path")
    assert "List the directory (src)" in a.rationale


def test_listing_a_missing_directory_is_blocked(ws: Path) -> None:
    assert _assess(ws, "list_directory", {"dir_path": "nope"}).reason_code == "no_such_path"


def test_glob_patterns_are_not_existence_checked(ws: Path) -> None:
    assert _assess(ws, "read_many_files", {"paths": ["src/**/*.py"]}).decision == "allow"
    assert _assess(ws, "read_many_files", {"paths": ["../../**/*.pem"]}).reason_code == "path_outside_workspace"


def test_missing_file_outside_the_workspace_is_containments_concern(ws: Path) -> None:
    a = _assess(ws, "read_file", {"file_path": "../missing.txt"})
    assert a.reason_code == "path_outside_workspace"


def test_write_without_prior_read_is_blocked(ws: Path) -> None:
    a = _assess(ws, "Edit", {"file_path": "src/app.py", "old_string": "a", "new_string": "b"})
    assert (a.rule, a.reason_code) == ("read_before_write", "write_without_read")
    assert "Read it first" in a.rationale


def test_failed_reads_do_not_count(ws: Path) -> None:
    for ok in (False, None):
        a = _assess(ws, "Write", {"file_path": "src/app.py", "content": "x"}, [_read("src/app.py", ok, "Read")])
        assert a.reason_code == "write_without_read"


def test_read_then_write_session_passes(ws: Path) -> None:
    history = [
        HistoryToolCall("1", "list_directory", json.dumps({"dir_path": str(ws)}), True),
        HistoryToolCall("2", "read_file", json.dumps({"file_path": str(ws / "src/app.py")}), True),
    ]
    a = _assess(ws, "write_file", {"file_path": "src/app.py", "content": "print('bye')\n"}, history)
    assert a.decision == "allow"
    assert a.observations["session"] == {"reads": 2, "writes": 0}


def test_a_brand_new_file_may_be_written_without_a_read(ws: Path) -> None:
    assert _assess(ws, "Write", {"file_path": "src/new.py", "content": "x"}).decision == "allow"


def test_a_file_the_agent_wrote_earlier_may_be_edited(ws: Path) -> None:
    (ws / "src" / "made.py").write_text("x\n")  # the earlier Write succeeded
    history = [HistoryToolCall("1", "Write", json.dumps({"file_path": "src/made.py", "content": "x"}), True)]
    a = _assess(ws, "Edit", {"file_path": "src/made.py", "old_string": "x", "new_string": "y"}, history)
    assert a.decision == "allow"
    assert _obs(a, "targets")[0]["written_before"] is True


def test_read_before_write_can_be_switched_off(ws: Path) -> None:
    a = _assess(ws, "Edit", {"file_path": "src/app.py"}, read_before_write=False)
    assert a.decision == "allow"


def test_write_outside_the_manifest_is_blocked(ws: Path) -> None:
    history = [_read("README.md")]
    a = _assess(ws, "Write", {"file_path": "README.md", "content": "x"}, history, write_manifest=["src/**"])
    assert (a.rule, a.reason_code) == ("write_manifest", "path_outside_manifest")
    assert _assess(ws, "Write", {"file_path": "src/deep/new.py"}, write_manifest=["src/**"]).decision == "allow"
    assert _assess(ws, "Write", {"file_path": "src/new.py"}, write_manifest=["src"]).decision == "allow"
    assert _assess(ws, "Write", {"file_path": "src/a/new.py"}, write_manifest=["src/*.py"]).decision == "block"


def test_manifest_does_not_double_flag_targets_outside_the_workspace(ws: Path) -> None:
    a = _assess(ws, "Write", {"file_path": "../x.py"}, write_manifest=["src/**"])
    assert a.reason_code == "path_outside_workspace"
    assert _obs(a, "targets")[0]["in_manifest"] is None


def test_reads_are_not_subject_to_the_manifest(ws: Path) -> None:
    assert _assess(ws, "Read", {"file_path": "README.md"}, write_manifest=["src/**"]).decision == "allow"


def test_first_blocking_rule_wins_but_every_observation_is_kept(ws: Path) -> None:
    a = _assess(ws, "read_many_files", {"paths": ["missing.txt", "/etc/shadow"]})
    assert a.reason_code == "privileged_path"
    targets = _obs(a, "targets")
    assert [t["exists"] for t in targets] == [False, os.path.exists("/etc/shadow")]


def test_observations_are_json_and_carry_no_file_contents(ws: Path) -> None:
    (ws / "src" / "app.py").write_text("TOP-SECRET-CONTENT\n")
    a = _assess(ws, "Write", {"file_path": "src/app.py", "content": "NEW-CONTENT"})
    text = json.dumps(a.observations)
    assert "TOP-SECRET-CONTENT" not in text and "NEW-CONTENT" not in text
    assert "NEW-CONTENT" not in a.rationale


def test_a_disabled_tools_policy_allows_everything(ws: Path) -> None:
    assert _assess(ws, "read_file", {"file_path": "/etc/passwd"}, enabled=False).decision == "allow"


def test_privileged_places_are_also_matched_as_the_agent_names_them(ws: Path) -> None:
    # The agent's home is its workspace: its ~/.ssh lands inside the proxy's workspace.
    (ws / ".ssh").mkdir()
    (ws / ".ssh" / "id_rsa").write_text("k")
    a = _assess(ws, "read_file", {"file_path": "/root/.ssh/id_rsa"}, agent_workspace_root="/root")
    assert a.reason_code == "privileged_path"
    b = _assess(ws, "read_file", {"file_path": "/root/proj/src/app.py"}, agent_workspace_root="/root/proj",
                privileged=["/root"])
    assert b.decision == "allow"


def test_a_path_with_a_nul_character_is_blocked_and_never_reaches_the_filesystem(ws: Path) -> None:
    """No file name holds a NUL; os.path.realpath raises on one (the turn failed with an internal error)."""
    a = _assess(ws, "Read", {"file_path": "/etc/passwd\u0000.txt"})
    assert (a.rule, a.reason_code) == ("unparseable_arguments", "unparseable_arguments")
    assert "NUL" in a.rationale
    history = [HistoryToolCall("h", "Read", json.dumps({"file_path": "src/app.py\u0000"}), True)]
    assert _assess(ws, "Read", {"file_path": "src/app.py"}, history).decision == "allow"
