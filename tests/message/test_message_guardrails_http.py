"""Webhook and moderation checks against real HTTP servers on 127.0.0.1 (aiohttp, a free port)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from aiohttp import web

from config.policy import ModerationGuardrail, WebhookGuardrail
from guardrails.datamodel import AssistantMessage, ToolCall
from guardrails.decision import MODERATION_FLAGGED, PASS, WEBHOOK_BLOCK, Block
from guardrails.message import Moderation, Undecided, Webhook, run_message_guardrails
from guardrails.message.webhook import webhook_payloads
from guardrails.seams import MessageContext
from tests.fakes.served import serve_here


@dataclass
class Upstream:
    """A local server: ``POST /<name>`` answers the canned response ``name``; requests are recorded."""

    base: str = ""
    requests: list[tuple[str, dict[str, Any], dict[str, str]]] = field(default_factory=list)
    release: asyncio.Event = field(default_factory=asyncio.Event)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        name = request.match_info["name"]
        self.requests.append((name, await request.json(), dict(request.headers)))
        if name == "hang":
            await self.release.wait()
        return CANNED[name]()


MODERATION_SCORES = {"harassment": 0.30, "violence": 0.91, "self-harm": 0.01}
CANNED = {
    "pass": lambda: web.json_response({"decision": "pass"}),
    "block": lambda: web.json_response(
        {"decision": "BLOCK", "reason": "names a competitor", "replacement": "[from webhook]"}
    ),
    "block-bare": lambda: web.json_response({"decision": "block"}),
    "unknown": lambda: web.json_response({"decision": "maybe"}),
    "list": lambda: web.json_response(["pass"]),
    "garbage": lambda: web.Response(text="{not json", content_type="application/json"),
    "error": lambda: web.json_response({"decision": "pass"}, status=500),
    "hang": lambda: web.json_response({"decision": "pass"}),
    "flagged": lambda: web.json_response({"results": [{
        "flagged": True,
        "categories": {"harassment": False, "violence": True, "self-harm": False},
        "category_scores": MODERATION_SCORES,
    }]}),
    "clean": lambda: web.json_response({"results": [{
        "flagged": False, "categories": {"violence": False}, "category_scores": MODERATION_SCORES,
    }]}),
    "no-results": lambda: web.json_response({"results": []}),
}


@pytest.fixture
async def upstream() -> AsyncIterator[Upstream]:
    up = Upstream()
    async with serve_here(lambda app: app.router.add_post("/{name}", up.handle),
                          handler_cancellation=True, shutdown_timeout=1.0) as up.base:
        try:
            yield up
        finally:
            up.release.set()


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient() as client:
        yield client


def ctx(text: str = "Our rival's product is bad.") -> MessageContext:
    message = AssistantMessage(
        text=text, tool_calls=[ToolCall(call_id="c1", name="fetch", arguments='{"url": "x"}')]
    )
    return MessageContext(
        message=message, system_prompt="be nice", user_query="compare products", model="gpt-x"
    )


def webhook(up: Upstream, name: str, http: httpx.AsyncClient, **extra: Any) -> Webhook:
    spec = WebhookGuardrail(
        id="classifier", kind="webhook", url=f"{up.base}/{name}", headers={"x-token": "t0k"}, **extra
    )
    return Webhook(spec, "[default]", http)


def moderation(up: Upstream, name: str, http: httpx.AsyncClient, **extra: Any) -> Moderation:
    spec = ModerationGuardrail(id="mod", kind="moderation", url=f"{up.base}/{name}", **extra)
    return Moderation(spec, "[moderated]", http)


# --- webhook --------------------------------------------------------------------------------------


async def test_webhook_passes_and_sends_the_documented_payload(upstream: Upstream, http: httpx.AsyncClient) -> None:
    assert await webhook(upstream, "pass", http).check_message(ctx()) == PASS
    ((_, body, headers),) = upstream.requests
    assert body == {
        "guardrail_id": "classifier",
        "model": "gpt-x",
        "system_prompt_present": True,
        "user_query": "compare products",
        "output": "Our rival's product is bad.",
        "tool_calls": [{"name": "fetch", "arguments": '{"url": "x"}'}],
        "part": {"index": 1, "total": 1, "elided_before": 0},
        "tool_calls_omitted": 0,
    }
    assert headers["x-token"] == "t0k"


async def test_webhook_block_uses_its_reason_and_replacement(upstream: Upstream, http: httpx.AsyncClient) -> None:
    decision = await webhook(upstream, "block", http).check_message(ctx())
    assert decision == Block(WEBHOOK_BLOCK, "[from webhook]", "names a competitor")


async def test_webhook_block_without_details_falls_back_to_the_policy_replacement(
    upstream: Upstream, http: httpx.AsyncClient
) -> None:
    decision = await webhook(upstream, "block-bare", http).check_message(ctx())
    assert isinstance(decision, Block)
    assert decision.replacement == "[default]"
    assert "classifier" in decision.rationale


@pytest.mark.parametrize(
    ("name", "reason"),
    [("error", "http_500"), ("garbage", "bad_json"), ("list", "bad_json"), ("unknown", "unknown_decision")],
)
async def test_webhook_fails_open_on_a_bad_answer(
    upstream: Upstream, http: httpx.AsyncClient, name: str, reason: str
) -> None:
    assert await webhook(upstream, name, http).check_message(ctx()) == Undecided(reason)


async def test_webhook_that_hangs_past_its_timeout_fails_open(upstream: Upstream, http: httpx.AsyncClient) -> None:
    g = webhook(upstream, "hang", http)
    verdict = await run_message_guardrails([g], ctx(), {g.id: 0.05})
    assert [(r.outcome, r.detail) for r in verdict.results] == [("fail_open", "timeout")]


async def test_webhook_that_cannot_be_reached_fails_open_by_error_type(http: httpx.AsyncClient) -> None:
    spec = WebhookGuardrail(id="gone", kind="webhook", url="http://127.0.0.1:9/none")
    verdict = await run_message_guardrails([Webhook(spec, "[d]", http)], ctx(), {})
    assert [(r.outcome, r.detail) for r in verdict.results] == [("fail_open", "error:ConnectError")]


# --- moderation -----------------------------------------------------------------------------------


async def test_moderation_blocks_on_flagged_and_names_the_categories(
    upstream: Upstream, http: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MOD_KEY", "sk-test")
    decision = await moderation(upstream, "flagged", http, api_key_env="MOD_KEY").check_message(ctx())
    assert isinstance(decision, Block)
    assert (decision.reason_code, decision.replacement) == (MODERATION_FLAGGED, "[moderated]")
    assert "violence" in decision.rationale and "rival" not in decision.rationale
    ((_, body, headers),) = upstream.requests
    assert body == {"model": "omni-moderation-latest", "input": "Our rival's product is bad."}
    assert headers["Authorization"] == "Bearer sk-test"


async def test_moderation_passes_when_not_flagged(upstream: Upstream, http: httpx.AsyncClient) -> None:
    assert await moderation(upstream, "clean", http, api_key_env=None).check_message(ctx()) == PASS
    assert "Authorization" not in upstream.requests[0][2]


async def test_moderation_thresholds_override_the_endpoint_flag(upstream: Upstream, http: httpx.AsyncClient) -> None:
    strict = moderation(upstream, "clean", http, api_key_env=None, thresholds={"harassment": 0.3})
    decision = await strict.check_message(ctx())
    assert isinstance(decision, Block) and "harassment" in decision.rationale
    lenient = moderation(upstream, "flagged", http, api_key_env=None, thresholds={"violence": 0.95})
    assert await lenient.check_message(ctx()) == PASS


async def test_moderation_fails_open_without_its_api_key(
    upstream: Upstream, http: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MOD_KEY", raising=False)
    g = moderation(upstream, "flagged", http, api_key_env="MOD_KEY")
    assert await g.check_message(ctx()) == Undecided("no_api_key")
    assert upstream.requests == []


@pytest.mark.parametrize(
    ("name", "reason"), [("error", "http_500"), ("garbage", "bad_json"), ("no-results", "bad_response")]
)
async def test_moderation_fails_open_on_a_bad_answer(
    upstream: Upstream, http: httpx.AsyncClient, name: str, reason: str
) -> None:
    assert await moderation(upstream, name, http, api_key_env=None).check_message(ctx()) == Undecided(reason)


async def test_moderation_that_hangs_past_its_timeout_fails_open(upstream: Upstream, http: httpx.AsyncClient) -> None:
    g = moderation(upstream, "hang", http, api_key_env=None)
    verdict = await run_message_guardrails([g], ctx(), {g.id: 0.05})
    assert [(r.outcome, r.detail) for r in verdict.results] == [("fail_open", "timeout")]


async def test_moderation_skips_empty_text(upstream: Upstream, http: httpx.AsyncClient) -> None:
    g = moderation(upstream, "flagged", http, api_key_env=None)
    verdict = await run_message_guardrails([g], ctx("   "), {})
    assert [(r.outcome, r.detail) for r in verdict.results] == [("pass", "skipped:empty_text")]
    assert upstream.requests == []


def test_webhook_payloads_never_carry_more_text_than_max_chars() -> None:
    calls = [ToolCall(call_id=f"c{i}", name="Write" * 50, arguments='{"content": "' + "x" * 5000 + '"}')
             for i in range(300)]
    context = MessageContext(message=AssistantMessage(text="y" * 9000, tool_calls=calls), system_prompt=None,
                             user_query="q" * 9000, model="m" * 500)
    payloads = webhook_payloads("classifier", context, max_chars=4000, max_parts=3)
    total = payloads[0]["part"]["total"]
    assert total > 3 and [p["part"]["index"] for p in payloads] == [1, 2, total]
    assert payloads[-1]["part"]["elided_before"] > 0
    for p in payloads:
        text = [p["user_query"], p["output"], *(c["name"] + c["arguments"] for c in p["tool_calls"])]
        assert sum(map(len, text)) <= 4000
        assert "omitted" in p["user_query"] and p["tool_calls_omitted"] == 300 - len(p["tool_calls"]) > 0
        assert len(p["model"]) <= 200
