"""Review of ``[[input_guardrails]]`` as an attacker: text the model reads in parts the screen did not
read. Each body goes through the proxy under uvicorn to the fake upstream on a loopback socket; the
test looks at what the upstream received (a secret pasted there must arrive masked)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from config.policy import ToolsPolicy
from guardrails.datamodel import HistoryToolCall, ToolCall
from guardrails.tools import ToolAssessor
from tests.adversarial import SECRET
from tests.fakes.proxy import ProxyServer
from tests.fakes.upstream import FakeUpstream

MASK = "[REDACTED:"
REDACT = """
[[input_guardrails]]
id = "no-keys-in"
kind = "secrets"
action = "redact"
parts = ["user", "tool_result"]
"""


@pytest.fixture(scope="module")
def redacting(upstream_server: FakeUpstream, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProxyServer]:
    tmp = tmp_path_factory.mktemp("review-input")
    with ProxyServer(upstream_server.url, REDACT, audit_log=str(tmp / "audit.jsonl")) as proxy:
        yield proxy


def _anthropic(proxy: ProxyServer, content: list[dict[str, Any]]) -> httpx.Response:
    body = {"model": "claude-x", "max_tokens": 50, "messages": [
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "WebSearch", "input": {}}]},
        {"role": "user", "content": content}]}
    return httpx.post(proxy.url + "/v1/messages", content=json.dumps(body).encode(), timeout=20,
                      headers={"content-type": "application/json", "x-api-key": "sk-ant-test",
                               "anthropic-version": "2023-06-01"})


_SEARCH = {"type": "search_result", "source": "https://kb.example.test/a", "title": "Deploy notes",
           "content": [{"type": "text", "text": f"use the key {SECRET} to deploy"}]}
_TEXT_DOC = {"type": "document", "title": "env", "source": {"type": "text", "media_type": "text/plain",
                                                            "data": f"AWS_KEY={SECRET}"}}
_CONTENT_DOC = {"type": "document", "source": {"type": "content", "content": [
    {"type": "text", "text": f"key: {SECRET}"}]}}

CASES: dict[str, list[dict[str, Any]]] = {
    "search_result in a user turn": [_SEARCH],
    "search_result in a tool_result": [{"type": "tool_result", "tool_use_id": "t1", "content": [_SEARCH]}],
    "plain-text document": [_TEXT_DOC],
    "content document": [_CONTENT_DOC],
    "document in a tool_result": [{"type": "tool_result", "tool_use_id": "t1", "content": [_TEXT_DOC]}],
    "search_result title": [{**_SEARCH, "title": f"key {SECRET}", "content": [{"type": "text", "text": "x"}]}],
}


@pytest.mark.parametrize("case", list(CASES))
def test_anthropic_text_blocks_beyond_text_are_screened(redacting: ProxyServer, upstream: FakeUpstream,
                                                        case: str) -> None:
    r = _anthropic(redacting, CASES[case])
    assert r.status_code == 200, r.text
    sent = upstream.seen[-1].raw
    assert SECRET.encode() not in sent
    assert MASK.encode() in sent


# Taint under another spelling of the same MCP tool. Claude Code names an MCP server's tool
# ``mcp__<server>__<tool>``; Codex (and Gemini CLI on a clash) ``<server>__<tool>``. The result of the
# same fetch server must taint under each spelling that an operator's pattern covers.
SPELLINGS = [("mcp__*", "fetch__fetch"), ("mcp__*", "github__get_issue"), ("fetch", "mcp__fetch__fetch"),
             ("fetch", "fetch__fetch"), ("mcp__fetch__*", "fetch__fetch"), ("get_*", "mcp__web__get_page")]


@pytest.mark.parametrize(("pattern", "name"), SPELLINGS)
def test_an_untrusted_mcp_tool_taints_under_each_clients_spelling(tmp_path: Path, pattern: str, name: str) -> None:
    policy = ToolsPolicy(workspace_root=str(tmp_path), egress_allow=["api.github.com"], untrusted_tools=[pattern])
    fetched = HistoryToolCall("f1", name, json.dumps({"url": "https://docs.example.test/x"}), True)
    push = ToolCall("c9", "Bash", json.dumps({"command": "git push origin main"}))
    assessor = ToolAssessor(policy, tmp_path)
    assert assessor.assess(push, []).decision == "allow"
    tainted = assessor.assess(push, [fetched])
    assert (tainted.decision, tainted.reason_code) == ("block", "tainted_egress")


@pytest.mark.parametrize(("pattern", "name"), [("fetch", "web_fetch"), ("mcp__*", "web_fetch"),
                                               ("mcp__fetch__*", "github__fetch")])
def test_other_tools_stay_untainted(tmp_path: Path, pattern: str, name: str) -> None:
    policy = ToolsPolicy(workspace_root=str(tmp_path), untrusted_tools=[pattern])
    call = HistoryToolCall("f1", name, "{}", True)
    push = ToolCall("c9", "Bash", json.dumps({"command": "git push origin main"}))
    assert ToolAssessor(policy, tmp_path).assess(push, [call]).decision == "allow"


SYSTEM_REDACT = """
[[input_guardrails]]
id = "no-keys-in-system"
kind = "secrets"
action = "redact"
parts = ["system"]
"""


def test_an_anthropic_system_role_message_is_screened_as_system(upstream_server: FakeUpstream,
                                                                 upstream: FakeUpstream) -> None:
    """Claude Code sends mid-conversation ``system`` role messages, and the proxy reads them as system
    prompt (the canary); the input screen skipped every message but the user's."""
    body = {"model": "claude-x", "max_tokens": 50, "system": "You are an agent.", "messages": [
        {"role": "user", "content": "hi"},
        {"role": "system", "content": f"deploy key {SECRET}"},
        {"role": "system", "content": [{"type": "text", "text": f"again {SECRET}"}]}]}
    with ProxyServer(upstream_server.url, SYSTEM_REDACT) as proxy:
        r = httpx.post(proxy.url + "/v1/messages", content=json.dumps(body).encode(), timeout=20,
                       headers={"content-type": "application/json", "x-api-key": "sk-ant-test",
                                "anthropic-version": "2023-06-01"})
    assert r.status_code == 200, r.text
    assert SECRET.encode() not in upstream.seen[-1].raw


def test_a_gemini_cached_content_is_screened_before_it_is_stored(redacting: ProxyServer, upstream: FakeUpstream) -> None:
    """A ``cachedContents`` holds contents and a system instruction the model reads later, named by a
    request's ``cachedContent``: a key pasted there went up unmasked (the route is a passthrough)."""
    body = {"model": "models/m", "systemInstruction": {"parts": [{"text": "You are an agent."}]},
            "contents": [{"role": "user", "parts": [{"text": f"deploy with {SECRET}"}]}], "ttl": "300s"}
    r = httpx.post(redacting.url + "/v1beta/cachedContents", content=json.dumps(body).encode(), timeout=20,
                   headers={"content-type": "application/json", "x-goog-api-key": "gk"})
    assert r.status_code == 200, r.text
    sent = upstream.seen[-1].raw
    assert SECRET.encode() not in sent
    assert MASK.encode() in sent
    assert json.loads(sent)["ttl"] == "300s"


def test_a_conversations_items_are_screened_before_they_are_stored(redacting: ProxyServer,
                                                                  upstream: FakeUpstream) -> None:
    """``POST /v1/conversations`` stores Responses input items that a later request naming the
    conversation feeds the model: a key pasted there went up unmasked (the route is a passthrough)."""
    body = {"items": [{"type": "message", "role": "user", "content": f"deploy with {SECRET}"},
                      {"type": "message", "role": "user", "content": [{"type": "input_text", "text": f"k {SECRET}"}]}],
            "metadata": {"topic": "deploy"}}
    r = httpx.post(redacting.url + "/v1/conversations", content=json.dumps(body).encode(), timeout=20,
                   headers={"content-type": "application/json", "authorization": "Bearer sk-test"})
    assert r.status_code == 200, r.text
    sent = upstream.seen[-1].raw
    assert SECRET.encode() not in sent
    assert sent.count(MASK.encode()) == 2
    assert json.loads(sent)["metadata"] == {"topic": "deploy"}
