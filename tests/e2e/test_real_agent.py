"""Issue 5, last "done when": a real coding agent pointed at the proxy, with the proxy as its guard,
completes a read-then-edit task and is stopped from editing a file it never read.

The agent is the real Gemini CLI (version pinned in tests/e2e/package.json, installed by
``make e2e-deps``), run headless (``gemini -p ... -m ... --yolo``) in a temporary workspace. Its base
URL is a ProxyServer with ``[tools] workspace_root = <workspace>`` and ``on_block = "feedback"``; the
proxy's upstream is a scripted Gemini API (tests/e2e/gemini_fake.py) whose "model" is ReadThenEdit
below. The CLI's own tools do the reading and editing, on the real filesystem.

Not installed is a failure, not a skip (CI must not pass silently when npm was unreachable); set
GUARDPROXY_SKIP_E2E=1 to skip locally.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from config.policy import default_policy_text
from tests.e2e.gemini_cli import PINNED_VERSION, Run, cli_version, find_gemini, node_major, run_gemini
from tests.e2e.gemini_fake import Parts, ScriptedGemini, function_call, text
from tests.fakes.proxy import ProxyServer

pytestmark = pytest.mark.skipif(os.environ.get("GUARDPROXY_SKIP_E2E") == "1",
                                reason="GUARDPROXY_SKIP_E2E=1")

ORIGINAL = "# Release notes\nstatus: draft\nowner: nobody\n"
OLD, NEW = "status: draft", "status: reviewed"
EDITED = ORIGINAL.replace(OLD, NEW)
PROMPT = "In notes.txt, change the status line from draft to reviewed, then say done."


@pytest.fixture(scope="module")
def gemini() -> Path:
    major = node_major()
    if major is None or major < 20:
        pytest.fail(f"Node.js >= 20 is needed for the e2e agent test (found: {major}); "
                    "install it, or set GUARDPROXY_SKIP_E2E=1 to skip")
    binary = find_gemini()
    if binary is None:
        pytest.fail("Gemini CLI is not installed: run `make e2e-deps` (npm install --prefix tests/e2e), "
                    "or set GUARDPROXY_SKIP_E2E=1 to skip")
    version = cli_version(binary)
    if not os.environ.get("GUARDPROXY_E2E_GEMINI"):
        assert version == PINNED_VERSION, f"tests/e2e has Gemini CLI {version}, pinned {PINNED_VERSION}: " \
                                          "run `make e2e-deps`"
    return binary


def _last_responses(body: dict[str, Any]) -> list[dict[str, Any]]:
    last = (body.get("contents") or [{}])[-1]
    return [p["functionResponse"] for p in last.get("parts") or [] if isinstance(p.get("functionResponse"), dict)]


def _response_text(fr: dict[str, Any]) -> str:
    return json.dumps(fr.get("response"))


@dataclass
class Step:
    stage: str
    file_at_request: str
    body: dict[str, Any]


@dataclass
class ReadThenEdit:
    """The scripted model. It first tries to edit the file blind; once told why that was refused,
    it reads the file, then edits it, then says done. Each step is chosen from the conversation
    it is sent (the last turn's function responses), so a lost or repeated request shows up as a
    wrong stage rather than as a silently shifted script."""

    target: Path
    steps: list[Step] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def edit_call(self) -> dict[str, Any]:
        return function_call("replace", {"file_path": str(self.target), "instruction": "Mark the notes reviewed.",
                                         "old_string": OLD, "new_string": NEW})

    def __call__(self, body: dict[str, Any]) -> Parts:
        responses = _last_responses(body)
        with self.lock:
            if not responses:
                stage, parts = "blind_edit", [text("I'll update the status line."), self.edit_call()]
            else:
                fr = responses[-1]
                name, said = fr.get("name"), _response_text(fr)
                if name == "replace" and "error" in (fr.get("response") or {}):
                    stage, parts = "read", [function_call("read_file", {"file_path": str(self.target)})]
                elif name == "read_file":
                    stage, parts = "edit", [self.edit_call()]
                elif name == "replace":
                    stage, parts = "done", [text("done")]
                else:
                    raise AssertionError(f"unscripted function response {name}: {said[:300]}")
            self.steps.append(Step(stage, self.target.read_text(), body))
            return parts

    def stages(self) -> list[str]:
        with self.lock:
            return [s.stage for s in self.steps]


def _policy(workspace: Path) -> str:
    """The shipped default policy (canary and secrets stream guardrails, live delivery with a
    hold-back window) plus the tool rules, guarding the test's workspace."""
    return default_policy_text() + f"""
[tools]
workspace_root = {json.dumps(str(workspace))}
on_block = "feedback"
max_feedback_rounds = 2
"""


@dataclass
class Scene:
    workspace: Path
    target: Path
    model: ReadThenEdit
    fake: ScriptedGemini
    proxy: ProxyServer
    audit: Path
    run: Run


def play(gemini: Path, workspace: Path, home: Path, audit: Path) -> Scene:
    """One headless agent run: the real CLI -> proxy (shipped policy + [tools]) -> scripted model."""
    workspace.mkdir(parents=True)
    target = workspace / "notes.txt"
    target.write_text(ORIGINAL)
    model = ReadThenEdit(target)
    with ScriptedGemini(model) as fake, \
            ProxyServer(fake.url, _policy(workspace), audit_log=str(audit)) as proxy:
        run = run_gemini(gemini, prompt=PROMPT, workspace=workspace, home=home, base_url=proxy.url,
                         timeout_s=120, extra_args=("--skip-trust",))
    return Scene(workspace, target, model, fake, proxy, audit, run)


@pytest.fixture(scope="module")
def scene(gemini: Path) -> Iterator[Scene]:
    # HOME and the workspace in unrelated folders with a short common prefix, as on a developer's
    # machine: /tmp, not a possibly long TMPDIR (see the regression test at the end for why).
    base = "/tmp" if os.path.isdir("/tmp") else None
    with tempfile.TemporaryDirectory(prefix="gp-e2e-ws-", dir=base) as ws, \
            tempfile.TemporaryDirectory(prefix="gp-e2e-home-", dir=base) as home:
        root = Path(ws).resolve()
        yield play(gemini, root / "project", Path(home).resolve(), root / "audit.jsonl")


def _diag(s: Scene) -> str:
    seen = "\n".join(f"  {x.method} {x.path}?{x.query} [{x.kind}]" for x in s.fake.seen)
    audit = s.audit.read_text() if s.audit.exists() else "(no audit log)"
    return (f"rc={s.run.returncode}\nstages={s.model.stages()}\nfake errors={s.fake.errors}\n"
            f"upstream saw:\n{seen}\nstdout:\n{s.run.stdout[-3000:]}\nstderr:\n{s.run.stderr[-3000:]}\n"
            f"audit:\n{audit[-4000:]}")


def _audit_events(s: Scene) -> list[dict[str, Any]]:
    return [json.loads(line) for line in s.audit.read_text().splitlines() if line.strip()]


def test_agent_completes_read_then_edit_and_exits_zero(scene: Scene) -> None:
    assert scene.run.returncode == 0, _diag(scene)
    assert scene.fake.errors == [], _diag(scene)
    assert scene.model.stages() == ["blind_edit", "read", "edit", "done"], _diag(scene)
    assert scene.target.read_text() == EDITED, _diag(scene)
    assert "done" in scene.run.stdout, _diag(scene)
    assert scene.fake.unexpected() == [], _diag(scene)


def test_blind_edit_is_blocked_and_fed_back_to_the_model(scene: Scene) -> None:
    steps = scene.model.steps
    assert [s.stage for s in steps[:2]] == ["blind_edit", "read"], _diag(scene)
    feedback = steps[1].body
    # The proxy, not the agent, answered the blind edit: the re-request carries the model's own
    # replace call and a function response with the rationale, and the file was still untouched.
    assert steps[1].file_at_request == ORIGINAL, _diag(scene)
    contents = feedback["contents"]
    assert contents[-2]["role"] == "model"
    calls = [p["functionCall"] for p in contents[-2]["parts"] if "functionCall" in p]
    assert [(c["name"], c["args"]["file_path"]) for c in calls] == [("replace", str(scene.target))]
    (fr,) = _last_responses(feedback)
    assert fr["name"] == "replace"
    # ... and the rationale is the one the audit log recorded for the block.
    block = next(e for e in _audit_events(scene) if e["event"] == "tool_call.assessed")
    assert fr["response"] == {"error": block["rationale"]}, fr
    assert "was not read" in block["rationale"]
    # The conversation the agent itself sends next never contains the blocked call: the client only
    # saw the corrected turn (read_file).
    after = steps[2].body
    agent_calls = [p["functionCall"]["name"] for c in after["contents"] if c.get("role") == "model"
                   for p in c.get("parts") or [] if "functionCall" in p]
    assert agent_calls == ["read_file"], _diag(scene)


def test_agent_really_read_then_really_edited(scene: Scene) -> None:
    steps = scene.model.steps
    assert len(steps) == 4, _diag(scene)
    (read_result,) = _last_responses(steps[2].body)
    assert read_result["name"] == "read_file"
    assert "status: draft" in _response_text(read_result), read_result  # the CLI's own read_file ran
    assert steps[2].file_at_request == ORIGINAL
    (edit_result,) = _last_responses(steps[3].body)
    assert edit_result["name"] == "replace"
    assert "error" not in edit_result["response"], edit_result
    assert steps[3].file_at_request == EDITED  # the CLI's own replace ran, once


def test_audit_log_records_the_block_and_the_allows(scene: Scene) -> None:
    events = [e for e in _audit_events(scene) if e["event"] == "tool_call.assessed"]
    summary = [(e["tool"], e["decision"], e.get("reason_code")) for e in events]
    assert summary == [("replace", "block", "write_without_read"),
                       ("read_file", "allow", None),
                       ("replace", "allow", None)], f"{summary}\n{_diag(scene)}"
    block = events[0]
    assert block["effect"] == "file_write"
    assert block["rule"] and block["rationale"]
    assert all(e["request_id"] for e in events)
    blocked = [e for e in _audit_events(scene) if e["event"] == "tool_call.blocked"]
    assert [(e["reason_code"], e["decision"]) for e in blocked] == [("write_without_read", "feedback")]


# Regression: Gemini CLI's system prompt names <HOME>/.gemini/tmp/<project>/memory/MEMORY.md; tool-call
# arguments that share a long run with it (HOME and the workspace under one long parent folder) were
# once taken for a system-prompt leak. The canary no longer judges tool-call arguments.
def test_shipped_canary_lets_paths_through_that_the_agent_prompt_names(
        gemini: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    root = tmp_path_factory.mktemp("a-parent-folder-with-a-rather-long-name").resolve()
    s = play(gemini, root / "project", root / "home", root / "audit.jsonl")
    assert s.run.returncode == 0, _diag(s)
    assert s.model.stages() == ["blind_edit", "read", "edit", "done"], _diag(s)
    assert s.target.read_text() == EDITED, _diag(s)
