"""What the real-agent tests (Claude Code, Codex) share: the run they assert on, the policy that
guards the agent's workspace, and the diagnostics printed when an assertion fails."""

from __future__ import annotations

import json
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from config.policy import default_policy_text
from tests.e2e.scripted_api import ScriptedAPI


class Staged(Protocol):
    """A scripted model: the stage of each turn it answered, with the file's text at that time."""

    stages: list[tuple[str, str]]


@dataclass
class Scene:
    target: Path
    model: Staged
    fake: ScriptedAPI
    audit: Path
    run: subprocess.CompletedProcess[str]


@dataclass(frozen=True)
class Rooms:
    """Where one agent run happens: its workspace, its own home, the proxy's audit log, and the
    file the scripted model edits."""

    workspace: Path
    home: Path
    audit: Path
    target: Path


@contextmanager
def agent_rooms(prefix: str, original: str) -> Iterator[Rooms]:
    """Fresh rooms under /tmp (resolved: the tool rules compare real paths), the target holding
    ``original``; removed afterwards."""
    with tempfile.TemporaryDirectory(prefix=prefix, dir="/tmp") as tmp:
        root = Path(tmp).resolve()
        rooms = Rooms(root / "project", root / "home", root / "audit.jsonl", root / "project" / "notes.txt")
        rooms.workspace.mkdir()
        rooms.home.mkdir()
        rooms.target.write_text(original)
        yield rooms


def feedback_policy(workspace: Path) -> str:
    """The shipped default policy with tool rules on ``workspace``, blocks fed back to the model."""
    return default_policy_text() + f"""
[tools]
workspace_root = {json.dumps(str(workspace))}
on_block = "feedback"
max_feedback_rounds = 2
"""


def diagnose(s: Scene) -> str:
    audit = s.audit.read_text() if s.audit.exists() else "(no audit log)"
    return (f"rc={s.run.returncode}\nstages={s.model.stages}\nerrors={s.fake.errors}\n"
            f"unexpected={s.fake.unexpected}\nstdout:\n{s.run.stdout[-2000:]}\nstderr:\n{s.run.stderr[-3000:]}\n"
            f"audit:\n{audit[-3000:]}")
