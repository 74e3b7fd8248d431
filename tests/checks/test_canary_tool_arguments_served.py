"""The canary reads tool-call arguments (docs say tool arguments get the same guardrails): a call
that writes a long run of the system prompt into a file, a command or a URL is withheld; the planted
token in an argument is a leak at any length; a short run (an agent's commit trailer, a memory
file's path: shorter than ``tool_min_chars``) passes, and the audit log records it as a canary hit
without the prompt's text. Real proxy, fake upstream, the official SDKs as clients."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.apis import APIS, sdk_call
from tests.fakes.proxy import ProxyServer
from tests.fakes.upstream import FakeUpstream, Reply

SYSTEM = (Path(__file__).parent.parent / "data" / "gemini_cli_system_prompt.txt").read_text(encoding="utf-8")
LONG_RUN = ("Rigorously adhere to existing project conventions when reading or modifying code. Analyze "
            "surrounding code, tests, and configuration first.")  # 131 characters
assert LONG_RUN in SYSTEM
SHORT_RUN = LONG_RUN[:60]


def _policy(ws: Path, tool_min_chars: int = 100) -> str:
    return f"""
[[stream_guardrails]]
id = "leak"
kind = "canary"
tool_min_chars = {tool_min_chars}
replacement = "[withheld: system prompt]"

[tools]
workspace_root = "{ws}"
"""


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ws = tmp_path_factory.mktemp("ws")
    (ws / "notes.md").write_text("notes\n")
    return ws


@pytest.fixture(scope="module")
def guard_proxy(upstream_server: FakeUpstream, workspace: Path,
                tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProxyServer]:
    audit = tmp_path_factory.mktemp("audit") / "audit.jsonl"
    with ProxyServer(upstream_server.url, _policy(workspace), audit_log=str(audit)) as p:
        yield p


def _audit(p: ProxyServer) -> str:
    path = Path(str(p.settings.audit_log))
    return path.read_text() if path.exists() else ""


def _shown(seen: Any) -> str:
    return seen.text + json.dumps(seen.tool_calls)


@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize("api", APIS)
def test_a_tool_call_writing_a_long_run_of_the_prompt_is_withheld(guard_proxy: ProxyServer, upstream: FakeUpstream,
                                                                  workspace: Path, api: str, stream: bool) -> None:
    args = {"command": f"echo '{LONG_RUN}' > {workspace}/leak.txt"}
    upstream.queue(Reply(tool_calls=[("run_shell_command", args)]))
    seen = sdk_call(guard_proxy.url, api, stream=stream, system=SYSTEM)
    assert "Rigorously adhere" not in _shown(seen)
    assert "[withheld: system prompt]" in seen.text


@pytest.mark.parametrize("api", ["chat", "anthropic", "gemini"])
def test_a_spelled_out_run_in_a_tool_argument_is_withheld(guard_proxy: ProxyServer, upstream: FakeUpstream,
                                                          workspace: Path, api: str) -> None:
    spaced = " ".join(LONG_RUN.replace(" ", ""))
    upstream.queue(Reply(tool_calls=[("write_file", {"file_path": f"{workspace}/x.md", "content": spaced})]))
    seen = sdk_call(guard_proxy.url, api, stream=True, system=SYSTEM)
    assert "R i g o r o u s l y" not in _shown(seen)


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_a_short_run_passes_and_the_audit_log_records_the_hit_without_the_prompt(
        guard_proxy: ProxyServer, upstream: FakeUpstream, workspace: Path, api: str) -> None:
    path = f"{workspace}/{SHORT_RUN.replace(' ', '_')}.md"
    upstream.queue(Reply(tool_calls=[("read_file", {"absolute_path": path})]))
    seen = sdk_call(guard_proxy.url, api, stream=False, system=SYSTEM)
    assert "[withheld" not in seen.text
    log = _audit(guard_proxy)
    assert not re.search("Rigorously.adhere", log), "the prompt's run reached the audit log"
    events = [json.loads(line) for line in log.splitlines()]
    hits = [e for e in events if e["event"] == "guardrail.tripped" and e.get("detail") == "tool_arguments"]
    assert hits and hits[-1]["reason_code"] == "system_prompt_leak" and hits[-1]["guardrail_id"] == "leak"
    assessed = [e for e in events if e["event"] == "tool_call.assessed"]
    assert "holding a run of the system prompt" in json.dumps(assessed[-1])
