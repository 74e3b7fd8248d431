"""The real Claude Code CLI behind the proxy: a blind edit is blocked, the rationale is fed back as the
tool's error, the agent reads the file and then edits it, and exits 0 (issue 12, "done when").

Claude Code runs headless (``claude -p ... --permission-mode acceptEdits --allowedTools Read,Edit``)
in a temporary workspace with ``ANTHROPIC_BASE_URL`` at a ProxyServer (shipped default policy plus
``[tools]``) whose upstream is a scripted Messages API (``scripted_api.ScriptedAPI``). It needs
no login with ``ANTHROPIC_API_KEY`` set, and ``CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1`` (plus the
telemetry, error-report and auto-update switches) keeps it on the base URL: the fake records any
other path as unexpected. ``--dangerously-skip-permissions`` is refused when run as root, hence the
allowed-tools list.

The CLI (a 400 MB native binary) is pinned in tests/e2e/package.json and installed by ``make
e2e-deps`` (``make test`` runs it); ``GUARDPROXY_E2E_CLAUDE`` names another binary. Without either
the test is skipped, with that reason.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.agent_scene import Scene, agent_rooms, diagnose, feedback_policy
from tests.e2e.scripted_api import ScriptedAPI, Turn
from tests.fakes.proxy import ProxyServer

PINNED = "2.1.332"
E2E = Path(__file__).parent
CANDIDATES = [E2E / "node_modules/@anthropic-ai/claude-code-linux-x64/claude", E2E / "node_modules/.bin/claude"]
ORIGINAL = "# Release notes\nstatus: draft\nowner: nobody\n"
OLD, NEW = "status: draft", "status: reviewed"
PROMPT = "In notes.txt, change the status line from draft to reviewed, then say done."

pytestmark = pytest.mark.skipif(os.environ.get("GUARDPROXY_SKIP_E2E") == "1", reason="GUARDPROXY_SKIP_E2E=1")


def find_claude() -> Path | None:
    explicit = os.environ.get("GUARDPROXY_E2E_CLAUDE")
    if explicit:
        return Path(explicit)
    return next((c for c in CANDIDATES if c.exists()), None)


def _env(home: Path, base_url: str) -> dict[str, str]:
    env = {k: os.environ[k] for k in ("PATH", "LANG", "LC_ALL", "TMPDIR") if k in os.environ}
    env.update({"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "CI": "1", "NO_COLOR": "1",
                "TERM": "dumb", "ANTHROPIC_BASE_URL": base_url, "ANTHROPIC_API_KEY": "sk-ant-e2e-fake",
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
                "DISABLE_TELEMETRY": "1", "DISABLE_ERROR_REPORTING": "1", "NO_PROXY": "127.0.0.1,localhost"})
    return env


def _tool_names(body: dict[str, Any]) -> dict[str, str]:
    return {b["id"]: b["name"] for m in body["messages"] if m["role"] == "assistant" and isinstance(m["content"], list)
            for b in m["content"] if b.get("type") == "tool_use"}


def last_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    last = body["messages"][-1]
    content = last["content"] if isinstance(last["content"], list) else []
    return [b for b in content if b.get("type") == "tool_result"]


@dataclass
class ReadThenEdit:
    """The scripted model: a blind Edit; once told why it was refused, Read, then Edit, then done.
    Each step follows from the tool results it is sent, so a lost request shows as a wrong stage."""

    target: Path
    stages: list[tuple[str, str]] = field(default_factory=list)
    """(stage, file text when the request came)."""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def edit(self) -> tuple[str, dict[str, Any]]:
        return "Edit", {"file_path": str(self.target), "old_string": OLD, "new_string": NEW}

    def __call__(self, body: dict[str, Any]) -> Turn:
        if not body.get("tools"):
            return "ok", []  # a utility request (none are expected with non-essential traffic off)
        results, names = last_results(body), _tool_names(body)
        with self.lock:
            if not results:
                stage, turn = "blind_edit", ("I'll update the status line.", [self.edit()])
            else:
                name = names.get(results[-1]["tool_use_id"])
                if name == "Edit" and results[-1].get("is_error") and "not read" in json.dumps(results[-1]):
                    stage, turn = "read", ("", [("Read", {"file_path": str(self.target)})])
                elif name == "Read":
                    stage, turn = "edit", ("", [self.edit()])
                elif name == "Edit":
                    stage, turn = "done", ("done", [])
                else:
                    raise AssertionError(f"unscripted tool result for {name}: {json.dumps(results)[:300]}")
            self.stages.append((stage, self.target.read_text()))
            return turn


@pytest.fixture(scope="module")
def scene() -> Iterator[Scene]:
    binary = find_claude()
    if binary is None:
        pytest.skip("Claude Code is not installed (`make e2e-deps` installs it): set "
                    f"GUARDPROXY_E2E_CLAUDE or `npm install --prefix tests/e2e @anthropic-ai/claude-code@{PINNED}`")
    with agent_rooms("gp-e2e-claude-", ORIGINAL) as rooms:
        model = ReadThenEdit(rooms.target)
        policy = feedback_policy(rooms.workspace)
        with ScriptedAPI(model) as fake, ProxyServer(fake.url, policy, audit_log=str(rooms.audit)) as proxy:
            run = subprocess.run([str(binary), "-p", PROMPT, "--output-format", "text", "--permission-mode",
                                  "acceptEdits", "--allowedTools", "Read,Edit"], cwd=rooms.workspace,
                                 env=_env(rooms.home, proxy.url), stdin=subprocess.DEVNULL, capture_output=True,
                                 text=True, timeout=180, check=False)
        yield Scene(rooms.target, model, fake, rooms.audit, run)


def test_version_is_the_pinned_one(scene: Scene) -> None:
    binary = find_claude()
    assert binary is not None
    out = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=60, check=False)
    assert out.stdout.startswith(PINNED) or os.environ.get("GUARDPROXY_E2E_CLAUDE"), out.stdout


def test_claude_code_reads_then_edits_after_the_blind_edit_is_blocked(scene: Scene) -> None:
    assert scene.run.returncode == 0, diagnose(scene)
    assert [s for s, _ in scene.model.stages] == ["blind_edit", "read", "edit", "done"], diagnose(scene)
    assert scene.model.stages[1][1] == ORIGINAL, diagnose(scene)  # the blind edit never reached the file
    assert scene.target.read_text() == ORIGINAL.replace(OLD, NEW), diagnose(scene)
    assert "done" in scene.run.stdout, diagnose(scene)
    assert scene.fake.errors == [] and scene.fake.unexpected == [], diagnose(scene)


def test_the_block_is_fed_back_as_the_edit_tools_error_and_audited(scene: Scene) -> None:
    events = [json.loads(line) for line in scene.audit.read_text().splitlines() if line.strip()]
    blocks = [e for e in events if e["event"] == "tool_call.assessed" and e["decision"] == "block"]
    assert [(b["tool"], b["reason_code"]) for b in blocks] == [("Edit", "write_without_read")], diagnose(scene)
    feedback = scene.fake.seen[1].body
    [result] = last_results(feedback)
    assert result["is_error"] is True
    assert blocks[0]["rationale"] in json.dumps(result["content"]) or blocks[0]["rationale"] in result["content"]
    # The agent never saw the blind edit: its own next request carries Read, not the blocked Edit.
    agent_calls = [b["name"] for m in scene.fake.seen[2].body["messages"] if m["role"] == "assistant"
                   for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_use"]
    assert agent_calls == ["Read"], diagnose(scene)
