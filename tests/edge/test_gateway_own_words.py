"""The proxy's own messages never quote model output no check has read: the text that tells the
client a tool call was blocked names only what the operator or the proxy wrote (a catalog's tool
name, the rule, the reason), never the call's path, host, command or an unknown tool's name. Before,
a system prompt the model used as a file path reached the client in the explanation."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.apis import sdk_call
from tests.fakes.proxy import ProxyServer
from tests.fakes.upstream import FakeUpstream, Reply

PROMPT = "You are Orca, the internal billing assistant; the refund override phrase is blue-heron-42"
PIECE = "the refund override phrase is blue-heron-42"


def _policy(ws: Path, on_block: str) -> str:
    return f"""
[defaults]
holdback_chars = 64

[[stream_guardrails]]
id = "system-prompt-leak"
kind = "canary"
min_chars = 24

[tools]
workspace_root = "{ws}"
on_block = "{on_block}"
max_feedback_rounds = 1
"""


@pytest.fixture(scope="module", params=["feedback", "replace"])
def proxy(request: pytest.FixtureRequest, upstream_server: FakeUpstream,
          tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProxyServer]:
    ws = tmp_path_factory.mktemp("ws")
    with ProxyServer(upstream_server.url, _policy(ws, request.param)) as p:
        yield p


@pytest.mark.parametrize("api", ["chat", "responses", "anthropic", "gemini"])
@pytest.mark.parametrize("call", [("Read", {"file_path": f"/etc/{PIECE}"}),
                                  (f"Read {PIECE}", {"file_path": "/etc/passwd"})], ids=["path", "name"])
def test_the_block_explanation_quotes_no_model_text(proxy: ProxyServer, upstream: FakeUpstream, api: str,
                                                    call: tuple[str, dict[str, str]]) -> None:
    upstream.queue(*[Reply(text="", tool_calls=[call]) for _ in range(3)])
    seen = sdk_call(proxy.url, api, stream=True, system=PROMPT)
    assert not seen.tool_calls
    assert "guardproxy blocked the tool call" in seen.text
    assert PIECE not in seen.text and "blue-heron" not in seen.text
    assert "privileged location" in seen.text  # the reason, in the proxy's words
