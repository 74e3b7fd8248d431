"""LiteLLM's proxy as a peer contender: installed into its own venv under ``bench/.peers/``.

Only ``bench.run --peers`` (``make bench-peers``) uses it. ``litellm[proxy]`` is tried first; when
that extra does not install whole, plain ``litellm`` plus the pieces its proxy imports is the fallback.
Every failure is returned as a sentence for the results, never raised.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / "bench" / ".peers" / "litellm-venv"
CONFIG = ROOT / "bench" / "peers" / "litellm.yaml"
FALLBACK = ["litellm", "fastapi", "uvicorn", "uvloop", "backoff", "orjson", "apscheduler", "pyyaml",
            "python-multipart", "cryptography", "gunicorn", "email-validator", "rq", "pynacl", "websockets"]


def _pip(*args: str) -> bool:
    cmd = [str(VENV / "bin" / "python"), "-m", "pip", "install", "-q", *args]
    print("bench: " + " ".join(cmd[3:]), file=sys.stderr, flush=True)
    return subprocess.run(cmd, cwd=ROOT, timeout=900, check=False).returncode == 0


def ensure_litellm() -> tuple[Path | None, str]:
    """Return (the ``litellm`` executable, its version) or (None, why it could not be installed)."""
    exe = VENV / "bin" / "litellm"
    if not exe.exists():
        VENV.parent.mkdir(parents=True, exist_ok=True)
        if subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=False).returncode != 0:
            return None, "could not create bench/.peers/litellm-venv"
        _pip("--upgrade", "pip")
        if not _pip("litellm[proxy]") and not _pip(*FALLBACK):
            return None, "pip could not install litellm[proxy] nor litellm with its proxy's pieces"
    if not exe.exists():
        return None, "litellm installed without its CLI"
    probe = subprocess.run([str(VENV / "bin" / "python"), "-c",
                            "import importlib.metadata as m; print(m.version('litellm'))"],
                           capture_output=True, text=True, check=False)
    return exe, probe.stdout.strip() or "unknown"


def litellm_argv(exe: Path) -> list[str]:
    # One worker: every other contender is one process on the same two cores.
    return [str(exe), "--config", str(CONFIG), "--host", "127.0.0.1", "--port", "{port}", "--num_workers", "1"]


def litellm_env(upstream: str) -> dict[str, str]:
    return {"BENCH_UPSTREAM_BASE": upstream + "/v1", "LITELLM_TELEMETRY": "False", "LITELLM_LOG": "ERROR",
            "LITELLM_MODE": "PRODUCTION", "DISABLE_ADMIN_UI": "True", "NO_DOCS": "True",
            "LITELLM_DONT_SHOW_FEEDBACK_BOX": "true"}
