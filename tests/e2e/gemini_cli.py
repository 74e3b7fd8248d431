"""Find and run the real Gemini CLI, headless, against a loopback base URL, with no internet.

The CLI is installed by ``make e2e-deps`` (``npm install --prefix tests/e2e``; the version is pinned
in tests/e2e/package.json and package-lock.json). How it is pointed at a proxy, and the traps, are
in shared/wire-formats.md §2: settings ``security.auth.selectedType = "gemini-api-key"`` plus
``GOOGLE_GEMINI_BASE_URL`` and ``GEMINI_API_KEY``, and ``-m <model>`` so no router call is made.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
PINNED_VERSION = json.loads((HERE / "package.json").read_text())["dependencies"]["@google/gemini-cli"]
LOCAL_BIN = HERE / "node_modules" / ".bin" / "gemini"
MODEL = "gemini-2.5-flash"
"""Any name works (the fake answers every model); passing one with -m skips the model router."""

# Every switch that would make the CLI talk to anything but the base URL, or wait on a person.
SETTINGS = {
    "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
    "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
    "ide": {"enabled": False},
    "model": {"skipNextSpeakerCheck": True, "disableLoopDetection": True},
    "tools": {"disableLLMCorrection": True, "sandbox": False},
    "skills": {"enabled": False},
    "ui": {"hideBanner": True, "hideTips": True},
}


def find_gemini() -> Path | None:
    """The pinned CLI from tests/e2e/node_modules, else GUARDPROXY_E2E_GEMINI (an explicit path)."""
    explicit = os.environ.get("GUARDPROXY_E2E_GEMINI")
    if explicit:
        return Path(explicit)
    return LOCAL_BIN if LOCAL_BIN.exists() else None


def node_major() -> int | None:
    node = shutil.which("node")
    if node is None:
        return None
    out = subprocess.run([node, "--version"], check=False, capture_output=True, text=True, timeout=30).stdout
    try:
        return int(out.strip().lstrip("v").split(".")[0])
    except ValueError:
        return None


def cli_version(binary: Path) -> str:
    with tempfile.TemporaryDirectory(prefix="gemini-home-") as home:
        out = subprocess.run([str(binary), "--version"], check=False, capture_output=True, text=True,
                             timeout=60, env=_base_env(Path(home)))
    return out.stdout.strip()


def _base_env(home: Path) -> dict[str, str]:
    keep = ("PATH", "LANG", "LC_ALL", "TMPDIR", "SYSTEMROOT")
    env = {k: os.environ[k] for k in keep if k in os.environ}
    env.update({
        "HOME": str(home),
        "USERPROFILE": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "GEMINI_CLI_NO_RELAUNCH": "true",   # no re-exec of node with a bigger heap
        "GEMINI_SANDBOX": "false",
        "GEMINI_TELEMETRY_ENABLED": "false",
        "NO_BROWSER": "true",
        "CI": "1",                          # non-interactive terminal behaviour
        "NO_COLOR": "1",
        "TERM": "dumb",
        # Loopback only: anything the CLI might try beyond the base URL fails fast instead.
        "NO_PROXY": "127.0.0.1,localhost",
        "no_proxy": "127.0.0.1,localhost",
    })
    return env


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str


def run_gemini(binary: Path, *, prompt: str, workspace: Path, home: Path, base_url: str,
               model: str = MODEL, timeout_s: float = 120.0, extra_args: tuple[str, ...] = ()) -> Run:
    """Run ``gemini -p PROMPT -m MODEL --yolo`` in ``workspace`` with HOME at ``home``."""
    gemini_dir = home / ".gemini"
    gemini_dir.mkdir(parents=True, exist_ok=True)
    (gemini_dir / "settings.json").write_text(json.dumps(SETTINGS, indent=2))
    env = _base_env(home)
    env.update({
        "GOOGLE_GEMINI_BASE_URL": base_url,
        "GEMINI_API_KEY": "e2e-fake-key",
    })
    args = [str(binary), "-p", prompt, "-m", model, "--yolo", "--sandbox", "false",
            "--output-format", "text", *extra_args]
    try:
        proc = subprocess.run(args, check=False, cwd=workspace, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                              text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired as exc:
        def s(v: str | bytes | None) -> str:
            return v.decode("utf-8", "replace") if isinstance(v, bytes) else (v or "")
        return Run(-9, s(exc.stdout), s(exc.stderr) + f"\n[e2e] killed after {timeout_s}s")
    return Run(proc.returncode, proc.stdout, proc.stderr)
