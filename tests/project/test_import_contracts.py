"""The walls between packages and between proxy's wings (pyproject's ``[tool.importlinter]``) hold,
and a deliberate upward import breaks them: the check can fail."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINT = Path(sys.executable).with_name("lint-imports")


def _lint(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(LINT), str(root / "pyproject.toml"), "--no-cache"], cwd=root,
                          env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True, timeout=120, check=False)


def _copy(tmp_path: Path) -> None:
    """The three packages and the contracts, to break on purpose."""
    for name in ("proxy", "guardrails", "config"):
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")


def test_the_import_contracts_hold() -> None:
    done = _lint(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr


def test_an_upward_import_from_the_core_breaks_them(tmp_path: Path) -> None:
    _copy(tmp_path)
    turn = tmp_path / "proxy" / "core" / "turn.py"
    # a lazy import counts as much as one at the top
    turn.write_text(turn.read_text() + "\n\ndef _upward() -> None:\n    from proxy.edge import exchange  # noqa\n")
    done = _lint(tmp_path)
    assert done.returncode != 0
    assert "proxy.core is not allowed to import proxy.edge" in done.stdout


def test_a_wire_format_importing_a_sibling_breaks_them(tmp_path: Path) -> None:
    _copy(tmp_path)
    chat = tmp_path / "proxy" / "wire" / "openai_chat.py"
    chat.write_text(chat.read_text() + "\nfrom proxy.wire import anthropic  # noqa\n")
    done = _lint(tmp_path)
    assert done.returncode != 0
    assert "openai_chat" in done.stdout and "anthropic" in done.stdout
