"""``guardproxy scan PATH`` lists what the policy's stream guardrails would trip on in a folder (file,
line, column, guardrail, rule, action), never the value; exit 1 when something trips, 0 when not."""

from __future__ import annotations

import json
import random
import string
from pathlib import Path

import pytest

from proxy.commands.cli import main

_RNG = random.Random(9)
KEY = "ghp_" + "".join(_RNG.choice(string.ascii_letters + string.digits) for _ in range(36))


def test_scan_lists_each_trip_without_the_value(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "app.py").write_text(f'x = 1\napi_key = "Zx9Qw3Er7Ty1Ui5Op2As"\ntoken = "{KEY}"\n')
    (tmp_path / "docs.md").write_text("from fastapi.security import OAuth2PasswordBearer\n")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text(f"token {KEY}\n")
    assert main(["scan", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert out.splitlines() == [f"{tmp_path / 'app.py'}:2:1: no-secrets generic-assignment (replace)",
                                f"{tmp_path / 'app.py'}:3:10: no-secrets github-token (replace)"], out
    assert KEY not in out and "Zx9Qw3" not in out


def test_scan_under_a_policy_with_an_allowlist_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text('[[stream_guardrails]]\nid = "keys"\nkind = "secrets"\naction = "redact"\n'
                      'allow_rules = ["generic-assignment"]\n')
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.txt").write_text(f'api_key = "Zx9Qw3Er7Ty1Ui5Op2As"\nuse {KEY} here\n')
    assert main(["scan", str(src), "--policy", str(policy), "--json"]) == 1
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert lines == [{"path": str(src / "a.txt"), "line": 2, "column": 5, "guardrail": "keys",
                      "rule": "github-token", "action": "redact"}]


def test_scan_of_clean_files_exits_0(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("r = requests.get('https://httpbin.org/get?key1=value1&key2=value2')\n")
    assert main(["scan", str(tmp_path)]) == 0
