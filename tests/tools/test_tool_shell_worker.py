"""A model's command line can never kill the proxy: the parser's known crash is removed before the
parse (``shell.ctype_safe``), and every parse runs in a worker process whose crash or hang blocks
the one call (``unparseable_arguments``, ``shell_parse = "parser_failed"``) and costs one worker,
which is replaced. Crashes and hangs on purpose come from ``tests/fakes/shell_worker_faults.py``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from guardrails.tools import shell, shell_worker
from guardrails.tools.shell import ctype_safe
from guardrails.tools.shell_worker import WorkerPool
from tests.apis import sdk_call
from tests.fakes.proxy import ProxyServer
from tests.fakes.shell_worker_faults import CRASH, HANG
from tests.fakes.upstream import FakeUpstream, Reply

FAULTY = (sys.executable, str(Path(__file__).parent.parent / "fakes" / "shell_worker_faults.py"))
CRASHERS = [
    "echo {\U0010ffff",  # tree-sitter/tree-sitter-bash#337's class; 13 of 20 fresh processes died here
    "${\U0010ffff", "a {\U0010fffe", "x=${\U0010fffd}", "echo {\U000fffff", "echo {\U000effff",
    "echo {\U0009c700",
    "`{\U0007cc42m\u00c7={1..3}",  # found by bench/shell_fuzz.py against the raw parser (SIGSEGV)
    "&&${\n${\U000e4577^ 4\x93 ]]",
    "D\x88\\\tK|{\U000e340a\u00ac\x89\x8f`H\U0004816c\u00d3",
    "\U00070c48\U0009af70\n/\U0008f867{\U0008f867\u00b4?E\u00be\u00f3",
    "E\U000d96c5m{\U00064741>b\U001066fb$\u00f7\x85\u00f4\u00a8I\U000bd7fa9\U00016016\u00d6z\"",
]


@settings(max_examples=200, derandomize=True, deadline=None)
@given(st.text(max_size=80))
def test_ctype_safe_keeps_byte_offsets_and_leaves_no_wide_character(text: str) -> None:
    safe = ctype_safe(text)
    assert len(safe.encode("utf-8", "surrogatepass")) == len(text.encode("utf-8", "surrogatepass"))
    assert all(ord(c) <= 0xFF for c in safe)


def test_words_keep_their_original_characters() -> None:
    facts = shell.analyze("cd /データ && cat ./päß€😀 > 目录/ü.txt")
    assert facts.status == "ok"
    assert sorted(facts.paths) == [("read", "/データ/./päß€😀"), ("write", "/データ/目录/ü.txt")]


def test_known_crashers_parse_in_fresh_processes() -> None:
    """Without ``ctype_safe`` these read glibc's class table out of bounds, and whether that faults
    depends on the memory layout: 12 of 20 fresh processes died on this list here. Five must all live."""
    script = ("import json, sys\nfrom guardrails.tools.shell import analyze\n"
              "print(json.dumps([analyze(c).status for c in json.loads(sys.stdin.read())]))\n")
    procs = [subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(5)]
    for proc in procs:
        out, err = proc.communicate(json.dumps(CRASHERS))
        assert proc.returncode == 0, err[-500:]
        assert len(json.loads(out)) == len(CRASHERS)


@pytest.fixture
def faulty_pool() -> Iterator[WorkerPool]:
    pool = WorkerPool(size=1, argv=FAULTY)
    yield pool
    pool.close()


def test_a_crashed_worker_blocks_its_call_and_is_replaced(faulty_pool: WorkerPool) -> None:
    assert faulty_pool.analyze("echo fine").status == "ok"
    assert faulty_pool.analyze(CRASH).status == "parser_failed"
    assert faulty_pool.crashes == 1
    facts = faulty_pool.analyze("cat /etc/passwd")
    assert facts.status == "ok" and facts.paths == [("read", "/etc/passwd")]
    assert faulty_pool.analyze(CRASH).status == "parser_failed"  # the same line again: cached, no new crash
    assert faulty_pool.crashes == 1


def test_a_hung_worker_is_killed(faulty_pool: WorkerPool, monkeypatch: pytest.MonkeyPatch) -> None:
    assert faulty_pool.analyze("echo warm").status == "ok"  # started: the deadline covers start-up too
    with monkeypatch.context() as short:
        short.setattr(shell_worker, "REPLY_TIMEOUT_S", 0.5)
        assert faulty_pool.analyze(HANG).status == "parser_failed"
    assert faulty_pool.analyze("echo after").status == "ok"


def test_a_worker_killed_from_outside_is_not_the_next_commands_fault(faulty_pool: WorkerPool) -> None:
    faulty_pool.start()
    worker = faulty_pool._idle[0].proc
    os.kill(worker.pid, signal.SIGKILL)
    worker.wait()
    facts = faulty_pool.analyze("echo retried")
    assert facts.status == "ok" and faulty_pool.crashes == 0


def test_over_the_size_limit_never_reaches_a_worker(faulty_pool: WorkerPool) -> None:
    assert faulty_pool.analyze("echo " + "a" * shell.MAX_COMMAND_BYTES).status == "too_large"
    assert faulty_pool._running == 0


# -- through the real proxy ------------------------------------------------------------------
@pytest.fixture
def proxy(upstream_server: FakeUpstream, tmp_path: Path) -> Iterator[ProxyServer]:
    (tmp_path / "ws").mkdir()
    policy = f"""
[tools]
workspace_root = "{tmp_path / 'ws'}"
on_block = "feedback"
"""
    with ProxyServer(upstream_server.url, policy, audit_log=str(tmp_path / "audit.jsonl")) as p:
        yield p


def _blocks(p: ProxyServer) -> list[dict[str, Any]]:
    lines = Path(str(p.settings.audit_log)).read_text().splitlines()
    return [e for e in map(json.loads, lines) if e["event"] == "tool_call.assessed" and e["decision"] == "block"]


@pytest.mark.parametrize("api", ["anthropic", "chat"])
def test_the_proxy_survives_a_parser_crash(proxy: ProxyServer, upstream: FakeUpstream, faulty_pool: WorkerPool,
                                           monkeypatch: pytest.MonkeyPatch, api: str) -> None:
    monkeypatch.setattr(shell_worker, "_pool", faulty_pool)
    good = ("Bash", {"command": "ls"})
    upstream.queue(Reply(text="", tool_calls=[("Bash", {"command": CRASH})]), Reply(text="", tool_calls=[good]))
    seen = sdk_call(proxy.url, api, stream=True)
    assert seen.tool_calls == [good]
    [block] = _blocks(proxy)
    assert block["reason_code"] == "unparseable_arguments"
    assert block["observations"]["shell_parse"] == "parser_failed"
    assert "shell parser failed" in json.dumps(upstream.seen[-1].body)
    assert faulty_pool.crashes == 1
    assert httpx.get(f"{proxy.url}/healthz").status_code == 200


def test_a_forked_child_starts_its_own_workers(faulty_pool: WorkerPool) -> None:
    faulty_pool.start()
    parents = [w.proc.pid for w in faulty_pool._idle]
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child reports through the pipe and exits
        facts = faulty_pool.analyze("echo in-child")
        mine = [w.proc.pid for w in faulty_pool._idle]
        os.write(write, json.dumps([facts.status, mine]).encode())
        os._exit(0)
    os.close(write)
    status, mine = json.loads(os.read(read, 4096))
    os.waitpid(child, 0)
    assert status == "ok" and mine and not set(mine) & set(parents)
    assert faulty_pool.analyze("echo in-parent").status == "ok"


def test_an_answer_that_is_not_facts_is_a_failure() -> None:
    for answer in (b"", b"not json\n", b"[1, 2]\n", b'{"paths": [1]}\n'):
        assert shell_worker.decode(answer).status == "parser_failed"


def test_the_answer_cache_is_bounded_in_bytes(faulty_pool: WorkerPool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shell_worker, "CACHE_BYTES", 2000)
    for i in range(40):
        faulty_pool.analyze(f"echo {i:03d}")
    assert faulty_pool._cached_bytes <= 2000
    assert 0 < len(faulty_pool._cache) < 40
    assert ("echo 039", None) in faulty_pool._cache  # the newest are kept
