"""The real Codex CLI behind the proxy: a blind in-place edit (``sed -i``) is blocked, the rationale is fed
back as the call's output, the agent reads the file (``cat``) and then edits it, and exits 0 (issue 12).

``codex exec`` runs with a custom model provider (``wire_api = "responses"``: HTTP + SSE, not the
built-in provider's WebSocket) whose base URL is a ProxyServer (shipped default policy plus
``[tools]``); the proxy's upstream is a scripted Responses API (``scripted_api.ScriptedAPI``). It needs
no login (the provider's ``env_key`` holds a dummy key), and ``CODEX_HOME`` is a temporary folder.
Codex 0.171 offers ``exec_command`` and no apply_patch tool to a custom provider; an ``apply_patch``
heredoc sent through ``exec_command`` ends its turn without running (seen here, without the proxy), so
the scripted model edits with ``sed -i``, which the proxy reads as a write of ``notes.txt``.

The CLI (npm ``@openai/codex``, a native platform package) is pinned in tests/e2e/package.json and
installed by ``make e2e-deps`` (``make test`` runs it); ``GUARDPROXY_E2E_CODEX`` names another
binary. Without either the test is skipped, with that reason.
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

PINNED = "0.171.0"
E2E = Path(__file__).parent
ORIGINAL = "# Release notes\nstatus: draft\nowner: nobody\n"
OLD, NEW = "status: draft", "status: reviewed"
EDIT = f"sed -i 's/{OLD}/{NEW}/' notes.txt"
PROMPT = "In notes.txt, change the status line from draft to reviewed, then say done."

pytestmark = pytest.mark.skipif(os.environ.get("GUARDPROXY_SKIP_E2E") == "1", reason="GUARDPROXY_SKIP_E2E=1")


def find_codex() -> Path | None:
    explicit = os.environ.get("GUARDPROXY_E2E_CODEX")
    if explicit:
        return Path(explicit)
    local = E2E / "node_modules/.bin/codex"
    return local if local.exists() else None


def _outputs(body: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The function-call outputs that end the input, and each call's ``cmd`` by call_id."""
    items = [i for i in body.get("input", []) if isinstance(i, dict)]
    cmds = {i["call_id"]: json.loads(i.get("arguments") or "{}").get("cmd", "") for i in items
            if i.get("type") == "function_call"}
    tail: list[dict[str, Any]] = []
    for item in reversed(items):
        if item.get("type") != "function_call_output":
            break
        tail.insert(0, item)
    return tail, cmds


@dataclass
class ReadThenEdit:
    """The scripted model: a blind ``sed -i``; once told why it was refused, ``cat`` the file, then
    edit it, then say done. Each step follows from the outputs it is sent."""

    target: Path
    stages: list[tuple[str, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, body: dict[str, Any]) -> Turn:
        if not body.get("tools"):
            return "ok", []
        outputs, cmds = _outputs(body)
        with self.lock:
            if not outputs:
                stage, turn = "blind_edit", ("I'll update the status line.", [("exec_command", {"cmd": EDIT})])
            else:
                cmd, said = cmds.get(outputs[-1]["call_id"], ""), json.dumps(outputs[-1].get("output"))
                if cmd == EDIT and "not read" in said:
                    stage, turn = "read", ("", [("exec_command", {"cmd": "cat notes.txt"})])
                elif cmd == "cat notes.txt":
                    stage, turn = "edit", ("", [("exec_command", {"cmd": EDIT})])
                elif cmd == EDIT:
                    stage, turn = "done", ("done", [])
                else:
                    raise AssertionError(f"unscripted output for {cmd!r}: {said[:300]}")
            self.stages.append((stage, self.target.read_text()))
            return turn


@pytest.fixture(scope="module")
def scene() -> Iterator[Scene]:
    binary = find_codex()
    if binary is None:
        pytest.skip("Codex is not installed (`make e2e-deps` installs it): set GUARDPROXY_E2E_CODEX "
                    f"or `npm install --prefix tests/e2e @openai/codex@{PINNED}`")
    with agent_rooms("gp-e2e-codex-", ORIGINAL) as rooms:
        (rooms.home / ".codex").mkdir()
        model = ReadThenEdit(rooms.target)
        policy = feedback_policy(rooms.workspace)
        env = {k: os.environ[k] for k in ("PATH", "LANG", "LC_ALL", "TMPDIR") if k in os.environ}
        env.update({"HOME": str(rooms.home), "CODEX_HOME": str(rooms.home / ".codex"), "E2E_KEY": "sk-e2e-fake",
                    "NO_COLOR": "1", "NO_PROXY": "127.0.0.1,localhost"})
        with ScriptedAPI(model) as fake, ProxyServer(fake.url, policy, audit_log=str(rooms.audit)) as proxy:
            provider = (f'model_providers.e2e={{name="e2e", base_url="{proxy.url}/v1", wire_api="responses", '
                        'env_key="E2E_KEY"}')
            run = subprocess.run([str(binary), "exec", "--skip-git-repo-check",
                                  "--dangerously-bypass-approvals-and-sandbox", "-c", 'model_provider="e2e"',
                                  "-c", provider, "-m", "gpt-5", PROMPT], cwd=rooms.workspace, env=env,
                                 stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=180, check=False)
        yield Scene(rooms.target, model, fake, rooms.audit, run)


def test_codex_reads_then_edits_after_the_blind_edit_is_blocked(scene: Scene) -> None:
    assert scene.run.returncode == 0, diagnose(scene)
    assert [s for s, _ in scene.model.stages] == ["blind_edit", "read", "edit", "done"], diagnose(scene)
    assert scene.model.stages[1][1] == ORIGINAL, diagnose(scene)  # the blind edit never reached the file
    assert scene.target.read_text() == ORIGINAL.replace(OLD, NEW), diagnose(scene)
    assert scene.fake.errors == [] and scene.fake.unexpected == [], diagnose(scene)


def test_the_block_is_fed_back_as_the_calls_output_and_audited(scene: Scene) -> None:
    events = [json.loads(line) for line in scene.audit.read_text().splitlines() if line.strip()]
    blocks = [e for e in events if e["event"] == "tool_call.assessed" and e["decision"] == "block"]
    assert [(b["tool"], b["reason_code"]) for b in blocks] == [("exec_command", "write_without_read")], diagnose(scene)
    outputs, _ = _outputs(scene.fake.seen[1].body)
    assert blocks[0]["rationale"] in json.dumps(outputs[-1]["output"]) or \
        json.dumps(blocks[0]["rationale"])[1:-1] in json.dumps(outputs[-1]["output"]), diagnose(scene)
    # Codex never saw the blind edit: its own next request carries `cat`, not the blocked edit.
    _, cmds = _outputs(scene.fake.seen[2].body)
    assert list(cmds.values()) == ["cat notes.txt"], diagnose(scene)
