"""Configuration and audit (issue #17, class 10): every setting is checked at start with a message naming
it (no traceback), a judge with its own host never receives the client's credentials, the audit log
takes any tool name and caps free text, and ``guardproxy replay`` tells bad input from a difference."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from config.settings import Settings
from proxy.commands.workers import uvicorn_options
from proxy.ops.audit import AuditLog
from tests.apis import raw_call
from tests.fakes.proxy import ProxyServer, free_port
from tests.fakes.upstream import FakeUpstream, Reply

REPO = Path(__file__).resolve().parents[2]


def serve(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """``guardproxy serve`` in a subprocess; every case here must exit before it listens."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("GUARDPROXY_")}
    clean.update(PYTHONPATH=str(REPO), GUARDPROXY_PORT=str(free_port()))
    return subprocess.run([sys.executable, "-m", "proxy", "serve", *args], capture_output=True,
                          text=True, env={**clean, **env}, timeout=60, check=False)


@pytest.mark.parametrize(("env", "named"), [
    ({"GUARDPROXY_PORT": "eighty"}, "GUARDPROXY_PORT"),
    ({"GUARDPROXY_OPENAI_BASE_URL": "api.openai.com"}, "GUARDPROXY_OPENAI_BASE_URL"),
    ({"GUARDPROXY_GEMINI_BASE_URL": "generativelanguage.googleapis.com/v1beta"}, "GUARDPROXY_GEMINI_BASE_URL"),
    ({"GUARDPROXY_LOG_LEVEL": "loud"}, "GUARDPROXY_LOG_LEVEL"),
    ({"GUARDPROXY_MAX_TOOL_CALLS": "0"}, "GUARDPROXY_MAX_TOOL_CALLS"),
    ({"GUARDPROXY_SHUTDOWN_GRACE_S": "-1"}, "GUARDPROXY_SHUTDOWN_GRACE_S"),
    ({"GUARDPROXY_CLIENT_TOKENS": "{not json"}, "GUARDPROXY_CLIENT_TOKENS"),
])
def test_a_bad_setting_stops_the_proxy_with_a_message_naming_it(env: dict[str, str], named: str) -> None:
    done = serve(env)
    assert done.returncode == 2
    assert named in done.stderr and "Traceback" not in done.stderr


def test_an_unwritable_audit_log_stops_the_proxy_at_start(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    done = serve({"GUARDPROXY_AUDIT_LOG": str(blocker / "audit.jsonl")})
    assert done.returncode == 2
    assert "GUARDPROXY_AUDIT_LOG" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize(("policy", "named"), [
    ('[[message_guardrails]]\nid = "w"\nkind = "webhook"\nurl = "classifier.internal:9000/check"\n', "url"),
    (('[[message_guardrails]]\nid = "j"\nkind = "llm_judge"\nprompt = "{agent_output}"\n'
     'upstream = "openai_chat"\nbase_url = "judge.internal/v1"\n'), "base_url"),
    (('[[message_guardrails]]\nid = "j"\nkind = "llm_judge"\nprompt = "{agent_output}"\nupstream = "openai_chat"\n'
     'base_url = "http://judge.internal"\napi_key_env = "GUARDPROXY_TEST_NO_SUCH_KEY"\n'), "api_key_env"),
    ('[[message_guardrails]]\nid = "m"\nkind = "moderation"\napi_key_env = "GUARDPROXY_TEST_NO_SUCH_KEY"\n',
     "GUARDPROXY_TEST_NO_SUCH_KEY"),
    ('[[stream_guardrails]]\nid = "r"\nkind = "regex"\npatterns = ["(unclosed"]\n', "stream_guardrails"),
])
def test_a_policy_that_would_fail_open_on_every_message_is_refused_at_start(tmp_path: Path, policy: str,
                                                                             named: str) -> None:
    path = tmp_path / "policy.toml"
    path.write_text(policy)
    done = serve({}, "--policy", str(path))
    assert done.returncode == 2
    assert named in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize(("grace", "expected"), [(0.0, 1), (0.3, 1), (1.0, 1), (2.5, 3), (10.0, 10)])
def test_a_shutdown_grace_below_one_second_is_a_limit_not_forever(grace: float, expected: int) -> None:
    assert uvicorn_options(Settings(shutdown_grace_s=grace))["timeout_graceful_shutdown"] == expected


# ----------------------------------------------------------------------------- judge credentials
OWN_HOST_JUDGE = """
[[message_guardrails]]
id = "judge"
kind = "llm_judge"
prompt = "Reply: {{agent_output}}\\nRespond with exactly PASS or VIOLATION."
upstream = "openai_chat"
base_url = "{base}"
{key}
"""


def _judge_headers(upstream: FakeUpstream) -> list[dict[str, str]]:
    return [s.headers for s in upstream.seen if isinstance(s.body, dict) and "material to judge" in json.dumps(s.body)]


@pytest.mark.parametrize("api", ["chat", "anthropic", "gemini"])
def test_a_judge_with_its_own_host_never_receives_the_clients_credentials(upstream_server: FakeUpstream,
                                                                         api: str) -> None:
    upstream_server.reset()
    own_host = upstream_server.url.replace("127.0.0.1", "localhost")
    with ProxyServer(upstream_server.url, OWN_HOST_JUDGE.format(base=own_host, key="")) as p:
        upstream_server.queue(Reply(text="an answer"))
        raw_call(p.url, api, stream=False, headers={"authorization": "Bearer sk-client-secret",
                                                    "x-api-key": "sk-client-secret",
                                                    "x-goog-api-key": "sk-client-secret"})
    (headers,) = _judge_headers(upstream_server)
    assert "sk-client-secret" not in json.dumps(headers)


def test_a_judge_with_its_own_key_sends_only_that_key(upstream_server: FakeUpstream,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    upstream_server.reset()
    monkeypatch.setenv("GUARDPROXY_TEST_JUDGE_KEY", "sk-judge-own")
    policy = OWN_HOST_JUDGE.format(base=upstream_server.url, key='api_key_env = "GUARDPROXY_TEST_JUDGE_KEY"')
    with ProxyServer(upstream_server.url, policy) as p:
        upstream_server.queue(Reply(text="an answer"))
        raw_call(p.url, "chat", stream=False, headers={"authorization": "Bearer sk-client-secret"})
    (headers,) = _judge_headers(upstream_server)
    assert headers.get("Authorization") == "Bearer sk-judge-own"
    assert "sk-client-secret" not in json.dumps(headers)


# ----------------------------------------------------------------------------- audit log
def test_a_tool_name_with_a_lone_surrogate_does_not_break_the_audit_write(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    with AuditLog(path) as log:
        log.record("tool_call.blocked", request_id="r", rule="paths", tool="Read\ud800", decision="block",
                   observations={"path\udfff": "/etc/\ud800passwd"})
    (line,) = path.read_text(encoding="utf-8").splitlines()
    record = json.loads(line)
    assert record["tool"] == "Read\ufffd" and record["observations"] == {"path\ufffd": "/etc/\ufffdpasswd"}


def test_free_text_in_the_audit_log_is_capped(tmp_path: Path) -> None:
    leaked = "You are a secret internal assistant. " * 200
    path = tmp_path / "audit.jsonl"
    with AuditLog(path, max_field_chars=100) as log:
        log.record("tool_call.assessed", request_id="r", rule="paths", tool="Read", decision="block",
                   rationale=leaked, observations={"paths": [{"given": leaked}]},
                   policy={"workspace_root": "/w" * 200})
    record = json.loads(path.read_text())
    assert len(record["rationale"]) < 130 and record["rationale"].endswith(f"[+{len(leaked) - 100} chars]")
    assert len(record["observations"]["paths"][0]["given"]) < 130
    assert record["policy"] == {"workspace_root": "/w" * 200}  # the operator's snapshot is kept whole
    assert len(path.read_text()) < 1200


TOOLS = """
[tools]
workspace_root = "{ws}"
"""


def test_over_the_proxy_a_surrogate_tool_name_is_assessed_and_logged(upstream_server: FakeUpstream,
                                                                     tmp_path: Path) -> None:
    upstream_server.reset()
    audit = tmp_path / "audit.jsonl"
    with ProxyServer(upstream_server.url, TOOLS.format(ws=tmp_path), audit_log=str(audit)) as p:
        upstream_server.queue(Reply(text="", tool_calls=[("Read\ud800", {"file_path": "/etc/passwd"})]))
        res = raw_call(p.url, "chat", stream=True)
    assert res.status == 200
    assert any(json.loads(line).get("tool") == "Read\ufffd" for line in audit.read_text().splitlines())


# ----------------------------------------------------------------------------- replay
def _replay(log: Path) -> tuple[int, str]:
    from guardrails.tools.replay import main_replay

    err = io.StringIO()
    return main_replay([str(log)], out=io.StringIO(), err=err), err.getvalue()


@pytest.mark.parametrize("line", [
    {"event": "tool_call.assessed", "request_id": "r", "rule": "paths", "decision": "block", "tool": "Read",
     "effect": "exec", "observations": {"commands": [{"argv": 5}]}, "policy": {"workspace_root": "/w"}},
    {"event": "tool_call.assessed", "request_id": "r", "rule": "shell", "decision": "block", "tool": "Bash",
     "effect": "exec", "observations": {"commands": [{}]}, "policy": {"workspace_root": "/w"}},
    "[" * 100_000 + "]" * 100_000,
])
def test_replay_gives_bad_input_its_own_exit_code(tmp_path: Path, line: object) -> None:
    log = tmp_path / "audit.jsonl"
    log.write_text((line if isinstance(line, str) else json.dumps(line)) + "\n")
    code, err = _replay(log)
    assert code == 2, err
    assert "Traceback" not in err


def test_healthz_still_answers_after_the_startup_checks(default_proxy: ProxyServer) -> None:
    assert httpx.get(default_proxy.url + "/healthz").status_code == 200


@pytest.mark.parametrize(("env", "named", "near"), [
    ({"GUARDPROXY_GUARDRAIL_ENABLED": "false"}, "GUARDPROXY_GUARDRAIL_ENABLED", "GUARDPROXY_GUARDRAILS_ENABLED"),
    ({"GUARDPROXY_AUDITLOG": "/tmp/x.jsonl"}, "GUARDPROXY_AUDITLOG", "GUARDPROXY_AUDIT_LOG"),
    ({"GUARDPROXY_WHATEVER_THIS_IS": "1"}, "GUARDPROXY_WHATEVER_THIS_IS", None),
])
def test_a_misspelled_setting_stops_the_proxy_naming_the_nearest(env: dict[str, str], named: str,
                                                                 near: str | None) -> None:
    done = serve(env)
    assert done.returncode == 2, done.stderr
    assert named in done.stderr and "Traceback" not in done.stderr
    if near:
        assert f"did you mean {near}?" in done.stderr


def test_every_unknown_setting_is_listed_at_once() -> None:
    done = serve({"GUARDPROXY_AUDITLOG": "x", "GUARDPROXY_GUARDRAIL_ENABLED": "false"})
    assert done.returncode == 2
    assert "GUARDPROXY_AUDITLOG" in done.stderr and "GUARDPROXY_GUARDRAIL_ENABLED" in done.stderr


def test_a_variable_the_policy_names_as_a_key_is_not_unknown(tmp_path: Path) -> None:
    """An ``api_key_env`` may be called anything, ``GUARDPROXY_JUDGE_KEY`` included."""
    from config.settings import unknown_variables

    env = {"GUARDPROXY_JUDGE_KEY": "k", "GUARDPROXY_PORT": "1", "OTHER": "x", "GUARDPROXY_SKIP_E2E": "1"}
    assert unknown_variables(env, {"GUARDPROXY_JUDGE_KEY"}) == []
    assert unknown_variables(env) == ["GUARDPROXY_JUDGE_KEY: no such setting"]


def test_every_variable_the_docs_and_deployments_name_is_a_setting() -> None:
    """What the README, docs/, compose, the Dockerfile and the manifests tell operators to set exists."""
    import re

    from config.settings import unknown_variables

    places = [REPO / "README.md", REPO / "compose.yaml", REPO / "Dockerfile",
              *(REPO / "docs").rglob("*.md"), *(REPO / "deploy").rglob("*.yaml"), *(REPO / "deploy").rglob("*.env")]
    lines = [line for p in places if p.exists() for line in p.read_text().splitlines()
             if "did you mean" not in line and "misspel" not in line]  # the docs' own examples of a typo
    names = {n for line in lines for n in re.findall(r"GUARDPROXY_[A-Z0-9_]*[A-Z0-9]", line)}
    assert len(names) > 10
    assert unknown_variables(dict.fromkeys(names, "")) == []
