"""Windows agents (#29, class 8): when the workspace root, or the agent's name for it, is a Windows path
(``C:\\Users\\me\\proj``), the agent's paths are read as Windows reads them: drive letters, ``\\``,
``..\\..\\``, other drives, UNC shares and the ``\\\\?\\`` prefix, case-insensitive names, trailing dots
and spaces, 8.3 short names. Before, every path was read as POSIX: each blocked row below passed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from config.policy import ToolsPolicy
from guardrails.datamodel import ToolCall
from guardrails.tools import Assessment, ToolAssessor, decide
from guardrails.tools.paths import is_windows, windows_form

ROOT = "C:\\Users\\me\\proj"


def _assess(policy: dict[str, object], tool: str, args: dict[str, object]) -> Assessment:
    tools = ToolsPolicy.model_validate({"egress_allow": ["api.github.com"], **policy})
    return ToolAssessor(tools).assess(ToolCall("c", tool, json.dumps(args)), [])


@pytest.mark.parametrize(("raw", "form"), [
    ("src\\app.py", "/c:/users/me/proj/src/app.py"),
    ("C:/Users/Me/Proj/src", "/c:/users/me/proj/src"),
    ("..\\..\\x", "/c:/users/x"),
    ("D:\\x", "/d:/x"),
    ("D:x", "/d:/x"),
    ("C:x", "/c:/users/me/proj/x"),
    ("\\Windows", "/c:/windows"),
    ("\\\\?\\C:\\Windows\\System32", "/c:/windows/system32"),
    ("\\\\.\\C:\\x", "/c:/x"),
    ("\\\\server\\share\\x", "//server/share/x"),
    ("\\\\?\\UNC\\server\\share\\x", "//server/share/x"),
    (".git.\\hooks", "/c:/users/me/proj/.git/hooks"),
    (".git \\hooks", "/c:/users/me/proj/.git/hooks"),
    (".git::$INDEX_ALLOCATION\\hooks", "/c:/users/me/proj/.git/hooks"),
    ("sub\\.. \\..\\x", "/c:/users/me/x"),
    ("/c/Users/me/proj/a", "/c:/users/me/proj/a"),
    ("\\\\.\\PhysicalDrive0", "//./physicaldrive0"),
    ("\\\\?\\GLOBALROOT\\Device\\HarddiskVolume1\\x", "//?/globalroot/device/harddiskvolume1/x"),
])
def test_windows_form_reads_paths_as_windows_opens_them(raw: str, form: str) -> None:
    assert windows_form(raw, ROOT) == form


def test_only_windows_roots_switch_the_reading() -> None:
    assert is_windows(ROOT) and is_windows("D:/work") and is_windows("\\\\server\\share\\p")
    assert not is_windows("/workspace") and not is_windows("proj") and not is_windows("")


BLOCKED = [
    ("Read", {"file_path": "C:\\Windows\\System32\\drivers\\etc\\hosts"}, "path_outside_workspace"),
    ("Read", {"file_path": "..\\..\\secrets.txt"}, "path_outside_workspace"),
    ("Read", {"file_path": "D:\\backup\\db.sql"}, "path_outside_workspace"),
    ("Read", {"file_path": "\\\\?\\C:\\Users\\me\\proj\\..\\notes.txt"}, "path_outside_workspace"),
    ("Read", {"file_path": "\\\\fileserver\\share\\x"}, "path_outside_workspace"),
    ("Write", {"file_path": "\\\\.\\PhysicalDrive0", "content": "x"}, "path_outside_workspace"),
    ("Read", {"file_path": "C:\\Users\\me\\.ssh\\id_ed25519"}, "privileged_path"),
    ("Write", {"file_path": "..\\.ssh\\authorized_keys", "content": "ssh-ed25519 AAAA"}, "privileged_path"),
    ("Read", {"file_path": "~\\.aws\\credentials"}, "privileged_path"),
    ("Write", {"file_path": ".git\\hooks\\pre-commit", "content": "id"}, "autorun_setting"),
    ("Write", {"file_path": ".git.\\hooks\\pre-commit", "content": "id"}, "autorun_setting"),
    ("Write", {"file_path": ".GIT \\config", "content": "[core]\n"}, "autorun_setting"),
    ("Write", {"file_path": "GIT~1\\hooks\\post-checkout", "content": "id"}, "autorun_setting"),
    ("Write", {"file_path": "C:\\Users\\me\\proj\\.npmrc.", "content": "registry=https://evil.example/\n"},
     "egress_not_allowed"),
    ("Bash", {"command": "type C:\\\\Windows\\\\win.ini; cat 'C:\\Windows\\win.ini'"}, "path_outside_workspace"),
    ("Bash", {"command": "cd .. && cat '.ssh\\authorized_keys'"}, "privileged_path"),
    ("Bash", {"command": "echo id > '.git.\\hooks\\pre-commit'"}, "autorun_setting"),
]


@pytest.mark.parametrize(("tool", "args", "reason"), BLOCKED)
def test_a_windows_workspace_reads_windows_paths(tool: str, args: dict[str, object], reason: str) -> None:
    a = _assess({"workspace_root": ROOT}, tool, args)
    assert a.reason_code == reason, (args, a.observations)
    assert "/c:/" not in a.rationale  # the agent's own spelling of its workspace
    again = decide(a.tool, a.effect, json.loads(json.dumps(a.observations)),
                   ToolsPolicy.model_validate({"workspace_root": ROOT, "egress_allow": ["api.github.com"]}))
    assert (again.reason_code, again.rationale) == (a.reason_code, a.rationale)


@pytest.mark.parametrize(("tool", "args"), [
    ("Read", {"file_path": "src\\app.py"}), ("Read", {"file_path": "C:\\Users\\Me\\Proj\\src\\app.py"}),
    ("Read", {"file_path": "c:/users/me/proj/README.md"}), ("Write", {"file_path": "src\\new.py", "content": "x"}),
    ("Write", {"file_path": "docs\\config", "content": "[core]\nfoo = bar\n"}),
    ("Bash", {"command": "git status && npm test"}), ("Bash", {"command": "cat src/app.py > out.txt"}),
    ("Read", {"file_path": ".github\\workflows\\ci.yml"}), ("Read", {"file_path": "GITHUB~1\\x"}),
])
def test_ordinary_windows_paths_pass(tool: str, args: dict[str, object]) -> None:
    a = _assess({"workspace_root": ROOT}, tool, args)
    assert a.decision == "allow", (args, a.rationale)


def test_the_manifest_matches_windows_paths_without_case(tmp_path: Path) -> None:
    policy = {"workspace_root": ROOT, "write_manifest": ["Src/**"]}
    assert _assess(policy, "Write", {"file_path": "SRC\\a.py", "content": "x"}).decision == "allow"
    assert _assess(policy, "Write", {"file_path": "docs\\a.md", "content": "x"}).reason_code == "path_outside_manifest"


@pytest.fixture
def mounted(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "app.py").write_text("x\n")
    return ws


@pytest.mark.parametrize(("tool", "args", "reason"), [
    ("Read", {"file_path": "C:\\Windows\\System32\\config\\SAM"}, "path_outside_workspace"),
    ("Read", {"file_path": "..\\..\\x"}, "path_outside_workspace"),
    ("Read", {"file_path": "C:\\Users\\me\\.ssh\\id_rsa"}, "privileged_path"),
    ("Write", {"file_path": ".git.\\hooks\\pre-commit", "content": "id"}, "autorun_setting"),
    ("Read", {"file_path": "C:\\Users\\me\\proj\\src\\nope.py"}, "no_such_path"),
])
def test_a_sidecar_maps_the_windows_agents_paths_onto_the_mount(mounted: Path, tool: str, args: dict[str, object],
                                                                reason: str) -> None:
    a = _assess({"workspace_root": str(mounted), "agent_workspace_root": ROOT}, tool, args)
    assert a.reason_code == reason, (args, a.observations)


def test_a_sidecar_finds_the_windows_agents_files_on_the_mount(mounted: Path) -> None:
    policy = {"workspace_root": str(mounted), "agent_workspace_root": ROOT}
    for path in ("src\\app.py", "C:\\Users\\me\\proj\\src\\app.py", "c:/users/me/proj/src/app.py"):
        a = _assess(policy, "Read", {"file_path": path})
        assert a.decision == "allow", (path, a.rationale)
        assert a.observations["targets"][0]["resolved"] == str(mounted / "src" / "app.py")  # type: ignore[index]
