"""Policy mistakes are caught and explained: every problem at once, with its file, line and key and
the nearest known key; ``check-policy --json`` for CI; ``guardproxy schema`` for editors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import jsonschema
import pytest

from config.policy import PolicyError, parse_policy, policy_schema

REPO = Path(__file__).resolve().parents[2]

BAD = """[defaults]
mode = "interactive"
delivry = "live"

[[stream_guardrails]]
id = "a"
kind = "secrets"
action = "replace"

[[stream_guardrails]]
id = "b"
kind = "regex"
patterns = ["x"]
acton = "replace"
"""


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "proxy", *args], capture_output=True, text=True, timeout=60,
                          cwd=REPO, check=False)


def test_every_problem_is_listed_with_its_line_key_and_nearest_name() -> None:
    with pytest.raises(PolicyError) as caught:
        parse_policy(BAD, source="bad.toml")
    problems = caught.value.problems
    assert [(p["line"], p["key"]) for p in problems] == [(3, "defaults.delivry"), (14, "stream_guardrails.1.acton")]
    text = str(caught.value)
    assert "line 3: defaults.delivry: unknown key (did you mean 'delivery'?)" in text
    assert "line 14: stream_guardrails.1.acton: unknown key (did you mean 'action'?)" in text


def test_check_policy_json_reports_problems_for_ci(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(BAD)
    done = _cli("check-policy", "--json", str(bad))
    assert done.returncode == 1
    verdict = json.loads(done.stdout)
    assert verdict["ok"] is False and verdict["file"] == str(bad)
    assert {p["key"] for p in verdict["problems"]} == {"defaults.delivry", "stream_guardrails.1.acton"}
    good = _cli("check-policy", "--json")
    assert good.returncode == 0 and json.loads(good.stdout)["ok"] is True


def test_a_build_stage_error_names_the_file(tmp_path: Path) -> None:
    policy = tmp_path / "p.toml"
    policy.write_text('[[stream_guardrails]]\nid = "r"\nkind = "regex"\npatterns = ["(unclosed"]\n')
    done = _cli("check-policy", str(policy))
    assert done.returncode == 1
    assert str(policy) in done.stderr and "Traceback" not in done.stderr


def test_the_schema_accepts_every_shipped_policy_and_refuses_a_misspelled_key() -> None:
    done = _cli("schema")
    assert done.returncode == 0
    schema = json.loads(done.stdout)
    assert schema == json.loads(json.dumps(policy_schema()))
    shipped = [REPO / "config" / "default.toml", *sorted((REPO / "config" / "policies").glob("*.toml"))]
    for path in shipped:
        jsonschema.validate(tomllib.loads(path.read_text()), schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(tomllib.loads(BAD), schema)


def test_version() -> None:
    done = _cli("--version")
    assert done.returncode == 0 and done.stdout.startswith("guardproxy ") and "unknown" not in done.stdout


@pytest.mark.parametrize("kind", ["regex", "canary", "max_length"])
def test_an_action_the_kind_cannot_do_is_an_error(kind: str) -> None:
    extra = {"regex": 'patterns = ["x"]\n', "canary": "", "max_length": "max_chars = 10\n"}[kind]
    with pytest.raises(PolicyError, match=f"kind '{kind}' cannot redact"):
        parse_policy(f'[[stream_guardrails]]\nid = "g"\nkind = "{kind}"\n{extra}action = "redact"\n')
    parse_policy(f'[[stream_guardrails]]\nid = "g"\nkind = "{kind}"\n{extra}action = "replace"\n')
    parse_policy('[[stream_guardrails]]\nid = "p"\nkind = "pii"\naction = "redact"\n')


def test_an_empty_policy_file_is_an_error_unless_it_says_so(tmp_path: Path) -> None:
    """A truncate-then-write by an editor, or a config tool's half-done write, reads as a file that arms
    nothing: refused by check-policy and at start, unless it says it means it (``empty = true``)."""
    empty = tmp_path / "empty.toml"
    empty.write_text("")
    done = _cli("check-policy", str(empty))
    assert done.returncode == 1 and "empty = true" in done.stderr
    half = tmp_path / "half.toml"
    half.write_text("[defaults]\nholdback_chars = 16\n")
    assert _cli("check-policy", str(half)).returncode == 1
    meant = tmp_path / "meant.toml"
    meant.write_text("empty = true\n")
    assert _cli("check-policy", str(meant)).returncode == 0
    env = {k: v for k, v in os.environ.items() if not k.startswith("GUARDPROXY_")}
    served = subprocess.run([sys.executable, "-m", "proxy", "serve", "--policy", str(empty), "--port", "1"],
                            capture_output=True, text=True, timeout=60, cwd=REPO, env=env, check=False)
    assert served.returncode == 2 and "empty = true" in served.stderr and "Traceback" not in served.stderr
