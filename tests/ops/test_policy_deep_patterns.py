"""A deeply nested pattern in a policy is a policy error naming it, never a RecursionError traceback:
``check-policy`` and ``serve`` (real processes) both say which pattern and exit 1. Python's regex
parser recurses once per group; a thousand nested groups used to end ``check-policy`` in a traceback."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from config.policy import MAX_PATTERN_NESTING, PolicyError, parse_policy

REPO = Path(__file__).resolve().parents[2]
DEEP = "(" * 1200 + "a" + ")" * 1200
FLAT_ENOUGH = "(" * MAX_PATTERN_NESTING + "a" + ")" * MAX_PATTERN_NESTING


def _policy(kind_table: str, pattern: str) -> str:
    return f'[[{kind_table}]]\nid = "deep"\nkind = "regex"\npatterns = ["x", "{pattern}"]\n'


def _cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "proxy", *args], capture_output=True, text=True, timeout=timeout,
                          cwd=REPO, check=False)


@pytest.mark.parametrize("table", ["stream_guardrails", "input_guardrails"])
def test_check_policy_names_the_deep_pattern_without_a_traceback(tmp_path: Path, table: str) -> None:
    path = tmp_path / "deep.toml"
    path.write_text(_policy(table, DEEP))
    done = _cli("check-policy", str(path))
    assert done.returncode == 1
    assert "Traceback" not in done.stderr and "RecursionError" not in done.stderr
    assert f"{table}.0.patterns" in done.stderr and "pattern #2 nests its groups" in done.stderr


def test_serve_refuses_the_deep_pattern_and_exits(tmp_path: Path) -> None:
    path = tmp_path / "deep.toml"
    path.write_text(_policy("stream_guardrails", DEEP))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    done = _cli("serve", "--host", "127.0.0.1", "--port", str(port), "--policy", str(path))
    assert done.returncode != 0
    assert "Traceback" not in done.stderr and "RecursionError" not in done.stderr
    assert "pattern #2 nests its groups" in done.stderr


@pytest.mark.parametrize("table", ["stream_guardrails", "input_guardrails"])
def test_a_pattern_at_the_limit_loads_and_checks(tmp_path: Path, table: str) -> None:
    path = tmp_path / "ok.toml"
    path.write_text(_policy(table, FLAT_ENOUGH))
    done = _cli("check-policy", str(path))
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("pattern", [r"\(" * 2000, "[(]" * 2000, "[](]" * 500, r"[\]((((]" * 500])
def test_escaped_and_class_parentheses_do_not_count(pattern: str) -> None:
    parse_policy(_policy("stream_guardrails", pattern.replace("\\", "\\\\")), source="p.toml")


def test_the_error_is_a_policy_error() -> None:
    with pytest.raises(PolicyError):
        parse_policy(_policy("stream_guardrails", DEEP), source="p.toml")
