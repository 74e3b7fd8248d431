"""The distribution: ``python -m build`` makes an sdist and a wheel (built from the sdist), the wheel
installs alone in a fresh virtual environment with runtime dependencies only, adds one name to
site-packages (``guardproxy``; not ``proxy``, ``guardrails`` or ``config``), and serves a guarded
stream: the official SDK streams through it and never sees the credential the upstream planted."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import venv
from pathlib import Path

import httpx
import openai
import pytest

from tests.fakes.proxy import free_port

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    # --no-isolation: the build runs on the test environment's setuptools (pyproject's build-system
    # pins the same floor) instead of downloading a fresh one per run
    subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(REPO)],
                   check=True, capture_output=True, timeout=600)
    wheels = list(out.glob("guardproxy-*.whl"))
    assert len(wheels) == 1 and list(out.glob("guardproxy-*.tar.gz"))
    env_dir = tmp_path_factory.mktemp("venv")
    venv.create(env_dir, with_pip=True)
    subprocess.run([str(env_dir / "bin" / "pip"), "install", "-q", str(wheels[0])], check=True,
                   capture_output=True, timeout=900)
    return env_dir


def test_the_wheel_adds_one_name_and_no_test_dependency(installed: Path) -> None:
    site = next((installed / "lib").glob("python3*/site-packages"))
    names = {p.name for p in site.iterdir()}
    assert "guardproxy" in names
    assert not names & {"proxy", "guardrails", "config"}
    listed = subprocess.run([str(installed / "bin" / "pip"), "list", "--format=freeze"], capture_output=True,
                            text=True, check=True).stdout.lower()
    for test_only in ("pytest", "openai", "anthropic", "google-genai", "matplotlib", "mypy"):
        assert f"\n{test_only}==" not in "\n" + listed, test_only


def test_the_installed_wheel_serves_a_guarded_stream(installed: Path, tmp_path: Path) -> None:
    up_port, gp_port = free_port(), free_port()
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("GUARDPROXY_", "PYTHON"))}
    upstream = subprocess.Popen([sys.executable, str(REPO / "deploy" / "fake_upstream.py"), "--port", str(up_port)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    proxy = subprocess.Popen([str(installed / "bin" / "guardproxy"), "serve"], cwd=tmp_path,
                             env={**clean, "GUARDPROXY_PORT": str(gp_port),
                                  "GUARDPROXY_OPENAI_BASE_URL": f"http://127.0.0.1:{up_port}"},
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{gp_port}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert proxy.poll() is None, proxy.stderr.read() if proxy.stderr else ""
            assert time.monotonic() < deadline, "the installed proxy did not start"
            time.sleep(0.3)
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{gp_port}/v1", api_key="demo", max_retries=0)
        plain = client.chat.completions.create(model="demo", messages=[{"role": "user", "content": "hello"}])
        assert "Hello from the guardproxy demo upstream" in (plain.choices[0].message.content or "")
        shown = "".join(c.choices[0].delta.content or "" for c in client.chat.completions.create(
            model="demo", stream=True, messages=[{"role": "user", "content": "LEAK"}]) if c.choices)
        assert "withheld" in shown
        assert "ghp_" not in shown
    finally:
        for p in (proxy, upstream):
            p.terminate()
            p.wait(timeout=30)
