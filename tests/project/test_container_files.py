"""The container files: the demo's fake upstream, compose.yaml's invariants, the Dockerfile's shape.

No Docker engine is needed. The fake upstream runs as a subprocess on a free loopback port. compose.yaml
is parsed with PyYAML when it is importable (it is not a project dependency, so without it those
tests skip and say why); the Dockerfile is checked structurally.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
FAKE = ROOT / "deploy" / "fake_upstream.py"
COMPOSE = ROOT / "compose.yaml"
DOCKERFILE = ROOT / "Dockerfile"
FIXED = "Hello from the guardproxy demo upstream. This reply is fixed."


# ---------------------------------------------------------------------------------- fake upstream
@pytest.fixture(scope="module")
def fake_upstream() -> Iterator[str]:
    proc = subprocess.Popen([sys.executable, str(FAKE), "--host", "127.0.0.1", "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # the server prints its address once bound
        m = re.search(r"http://127\.0\.0\.1:(\d+)", line)
        assert m, f"fake upstream did not report its address: {line!r}"
        yield f"http://127.0.0.1:{m.group(1)}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout:
            proc.stdout.close()


def _post(url: str, body: dict[str, Any]) -> tuple[int, str, bytes]:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json", "Authorization": "Bearer x"})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, resp.headers.get("Content-Type", ""), resp.read()
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, exc.headers.get("Content-Type", ""), exc.read()


def _sse_chunks(raw: bytes) -> list[Any]:
    frames = raw.decode().split("\n\n")
    assert frames[-1] == "", "the stream must end with a complete frame"
    out: list[Any] = []
    for frame in frames[:-1]:
        assert frame.startswith("data: ") and "\n" not in frame, frame
        data = frame[len("data: "):]
        out.append(data if data == "[DONE]" else json.loads(data))
    return out


def test_fake_upstream_healthz(fake_upstream: str) -> None:
    with urllib.request.urlopen(fake_upstream + "/healthz", timeout=5) as resp:
        assert resp.status == 200
        assert resp.read() == b"ok\n"


def test_fake_upstream_chat_non_streaming(fake_upstream: str) -> None:
    status, ctype, raw = _post(fake_upstream + "/v1/chat/completions",
                               {"model": "m1", "messages": [{"role": "user", "content": "hi"}]})
    assert status == 200 and ctype == "application/json"
    body = json.loads(raw)
    assert body["object"] == "chat.completion" and body["model"] == "m1"
    assert body["choices"][0]["message"] == {"role": "assistant", "content": FIXED, "refusal": None}
    assert body["choices"][0]["finish_reason"] == "stop"
    assert body["usage"]["total_tokens"] > 0


def test_fake_upstream_chat_streaming(fake_upstream: str) -> None:
    status, ctype, raw = _post(fake_upstream + "/v1/chat/completions",
                               {"model": "m1", "stream": True, "stream_options": {"include_usage": True},
                                "messages": [{"role": "user", "content": "hi"}]})
    assert status == 200 and ctype.startswith("text/event-stream")
    chunks = _sse_chunks(raw)
    assert chunks[-1] == "[DONE]"
    objs = chunks[:-1]
    assert {c["object"] for c in objs} == {"chat.completion.chunk"}
    assert len({c["id"] for c in objs}) == 1, "every chunk carries the same id"
    assert objs[0]["choices"][0]["delta"]["role"] == "assistant"
    text = "".join((ch["delta"].get("content") or "") for c in objs for ch in c["choices"])
    assert text == FIXED
    assert len(objs) > 4, "the reply is streamed in several deltas"
    assert [ch["finish_reason"] for c in objs for ch in c["choices"] if ch["finish_reason"]] == ["stop"]
    assert objs[-1]["choices"] == [] and objs[-1]["usage"]["total_tokens"] > 0


def test_fake_upstream_leak_reply_carries_a_token(fake_upstream: str) -> None:
    status, _, raw = _post(fake_upstream + "/v1/chat/completions",
                           {"model": "m", "messages": [{"role": "user", "content": "LEAK it"}]})
    assert status == 200
    assert re.search(r"ghp_[A-Za-z0-9]{36}", json.loads(raw)["choices"][0]["message"]["content"])


def test_fake_upstream_errors_are_openai_shaped(fake_upstream: str) -> None:
    status, _, raw = _post(fake_upstream + "/v1/nope", {})
    assert status == 404 and "message" in json.loads(raw)["error"]
    req = urllib.request.Request(fake_upstream + "/v1/chat/completions", data=b"{not json",
                                 method="POST", headers={"Content-Type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as exc:
        urllib.request.urlopen(req, timeout=5)
    with exc.value:
        assert exc.value.code == 400


# ---------------------------------------------------------------------------------- compose.yaml
@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    yaml = pytest.importorskip("yaml", reason="PyYAML is not installed (not a project dependency); "
                                              "compose.yaml invariants not checked")
    data = yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def _mounts(service: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Mounts by target, long or short syntax, as {source, read_only}."""
    out: dict[str, dict[str, Any]] = {}
    for v in service.get("volumes", []):
        if isinstance(v, str):
            parts = v.split(":")
            out[parts[1]] = {"source": parts[0], "read_only": len(parts) > 2 and "ro" in parts[2].split(",")}
        else:
            out[v["target"]] = {"source": v.get("source"), "read_only": bool(v.get("read_only", False))}
    return out


def _env(service: dict[str, Any]) -> dict[str, str]:
    env = service.get("environment", {})
    if isinstance(env, list):
        env = dict(e.split("=", 1) for e in env)
    return {k: str(v) for k, v in env.items()}


def test_compose_proxy_mounts_workspace_read_only_and_agent_read_write(compose: dict[str, Any]) -> None:
    proxy, agent = compose["services"]["guardproxy"], compose["services"]["agent"]
    pm, am = _mounts(proxy), _mounts(agent)
    assert pm["/workspace"]["read_only"] is True
    assert am["/workspace"]["read_only"] is False
    assert pm["/workspace"]["source"] == am["/workspace"]["source"], "one shared workspace volume"


def test_compose_policy_is_mounted_read_only_and_names_the_workspace(compose: dict[str, Any]) -> None:
    import tomllib

    proxy = compose["services"]["guardproxy"]
    policy_path = _env(proxy)["GUARDPROXY_POLICY"]
    mount = _mounts(proxy)[policy_path]
    assert mount["read_only"] is True
    policy = tomllib.loads((ROOT / mount["source"]).read_text(encoding="utf-8"))
    assert policy["tools"]["workspace_root"] == "/workspace"


def test_compose_policy_file_is_valid() -> None:
    from config.policy import load_policy

    policy = load_policy(str(ROOT / "deploy" / "policy.sidecar.toml"))
    assert policy.tools is not None and policy.tools.workspace_root == "/workspace"


def test_compose_audit_log_is_on_a_volume(compose: dict[str, Any]) -> None:
    proxy = compose["services"]["guardproxy"]
    log_dir = str(Path(_env(proxy)["GUARDPROXY_AUDIT_LOG"]).parent)
    mount = _mounts(proxy)[log_dir]
    assert mount["source"] in compose["volumes"] and mount["read_only"] is False


def test_compose_agent_points_at_the_proxy(compose: dict[str, Any]) -> None:
    env = _env(compose["services"]["agent"])
    assert env["OPENAI_BASE_URL"] == "http://guardproxy:8790/v1"
    assert env["ANTHROPIC_BASE_URL"] == "http://guardproxy:8790"
    assert env["GOOGLE_GEMINI_BASE_URL"] == "http://guardproxy:8790"


def test_compose_remote_listening_is_decided_explicitly(compose: dict[str, Any]) -> None:
    env = _env(compose["services"]["guardproxy"])
    assert env["GUARDPROXY_HOST"] == "0.0.0.0"
    waived = env.get("GUARDPROXY_ALLOW_UNAUTHENTICATED_REMOTE", "").lower() == "true"
    assert waived or env.get("GUARDPROXY_AUTH_TOKEN"), "a token or the explicit waiver"
    if waived:  # the waiver is only sound while nothing else can reach the proxy
        proxy, agent = compose["services"]["guardproxy"], compose["services"]["agent"]
        assert "ports" not in proxy, "no published port without a token"
        shared = set(agent["networks"]) & set(proxy["networks"])
        assert shared and all(compose["networks"][n].get("internal") is True for n in shared)
        others = {name for name, s in compose["services"].items()
                  if set(s.get("networks", ["default"])) & shared} - {"guardproxy", "agent", "demo-client"}
        assert not others, f"services that could reach the unauthenticated proxy: {others}"


def test_compose_demo_profile(compose: dict[str, Any]) -> None:
    services = compose["services"]
    demo = {name for name, s in services.items() if "demo" in s.get("profiles", [])}
    assert {"fake-upstream", "demo-client"} <= demo
    assert not services["guardproxy"].get("profiles") and not services["agent"].get("profiles")
    assert _mounts(services["fake-upstream"])["/opt/demo/fake_upstream.py"]["source"] == "./deploy/fake_upstream.py"
    assert _env(services["demo-client"])["OPENAI_BASE_URL"] == "http://guardproxy:8790/v1"
    demo_env = dict(line.split("=", 1) for line in (ROOT / "deploy" / "demo.env").read_text().splitlines()
                    if line and not line.startswith("#"))
    assert demo_env["COMPOSE_PROFILES"] == "demo"
    assert demo_env["GUARDPROXY_OPENAI_BASE_URL"] == "http://fake-upstream:9000"
    assert "--port" in services["fake-upstream"]["command"]
    assert "9000" in services["fake-upstream"]["command"]


# ---------------------------------------------------------------------------------- Dockerfile
def _instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with line continuations joined and comments dropped."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text(encoding="utf-8"))
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def _final_stage() -> list[tuple[str, str]]:
    ins = _instructions()
    last_from = max(i for i, (w, _) in enumerate(ins) if w == "FROM")
    return ins[last_from:]


def test_dockerfile_is_multi_stage_on_python_311_slim() -> None:
    ins = _instructions()
    froms = [a for w, a in ins if w == "FROM"]
    assert len(froms) >= 2
    args = dict(a.split("=", 1) for w, a in ins if w == "ARG" and "=" in a)
    assert args.get("PYTHON_IMAGE") == "python:3.11-slim"
    assert all(f.startswith("${PYTHON_IMAGE}") for f in froms)
    assert any(w == "COPY" and a.startswith("--from=builder") for w, a in _final_stage())


def test_dockerfile_final_stage_runs_as_non_root() -> None:
    users = [a for w, a in _final_stage() if w == "USER"]
    assert users, "the final stage sets USER"
    user = users[-1].split(":")[0]
    assert user not in ("root", "0")


def test_dockerfile_runtime_contract() -> None:
    final = _final_stage()
    joined = "\n".join(f"{w} {a}" for w, a in final)
    assert ("EXPOSE", "8790") in final
    assert "GUARDPROXY_HOST=0.0.0.0" in joined
    assert "GUARDPROXY_AUTH_TOKEN" not in joined and "ALLOW_UNAUTHENTICATED" not in joined, \
        "the image leaves the token-or-waiver choice to whoever runs it"
    health = [a for w, a in final if w == "HEALTHCHECK"]
    assert health and "/healthz" in health[0] and "urllib" in health[0] and "curl" not in health[0]
    assert ("ENTRYPOINT", '["guardproxy"]') in final
    assert ("CMD", '["serve"]') in final
    assert not any(w == "RUN" and ("apt-get" in a or "pip install" in a) for w, a in final), \
        "runtime stage installs nothing: the venv comes from the builder"


def test_healthcheck_command_runs_against_a_live_server(fake_upstream: str) -> None:
    """The HEALTHCHECK's python one-liner, run here against a server answering /healthz."""
    cmd = json.loads(next(a for w, a in _final_stage() if w == "HEALTHCHECK").split("CMD", 1)[1])
    port = fake_upstream.rsplit(":", 1)[1]
    ok = subprocess.run(cmd, check=False, env={"GUARDPROXY_PORT": port, "PATH": str(Path(sys.executable).parent)},
                        capture_output=True, timeout=10)
    assert ok.returncode == 0, ok.stderr
    down = subprocess.run(cmd, check=False, env={"GUARDPROXY_PORT": "1", "PATH": str(Path(sys.executable).parent)},
                          capture_output=True, timeout=10)
    assert down.returncode != 0


def test_dockerignore_is_an_allowlist() -> None:
    lines = [ln.strip() for ln in (ROOT / ".dockerignore").read_text().splitlines()
             if ln.strip() and not ln.startswith("#")]
    assert lines[0] == "*"
    allowed = {ln[1:].rstrip("/") for ln in lines if ln.startswith("!")}
    assert {"pyproject.toml", "proxy", "guardrails", "config"} <= allowed
    assert not allowed & {".venv", ".git", "tests"}


def test_compose_valkey_is_a_profile_on_a_network_only_the_proxy_shares(compose: dict[str, Any]) -> None:
    """The `valkey` profile: off unless asked for, in memory only, evicting nothing on its own, and
    reachable from the proxy alone (the agent cannot read the prompts it holds)."""
    services = compose["services"]
    valkey = services["valkey"]
    assert valkey["profiles"] == ["valkey"]
    assert compose["networks"]["state"]["internal"] is True
    assert [name for name, s in services.items() if "state" in s.get("networks", [])] == ["guardproxy", "valkey"]
    cmd = valkey["command"]
    assert cmd[cmd.index("--maxmemory-policy") + 1] == "noeviction" and cmd[cmd.index("--save") + 1] == ""
    env = _env(services["guardproxy"])
    assert env["GUARDPROXY_STATE_URL"] == "${GUARDPROXY_STATE_URL:-}"  # empty: the embedded store
