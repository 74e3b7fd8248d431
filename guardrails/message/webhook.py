"""``webhook``: ask the user's own classifier service about the finished answer.

Request (POST JSON to ``spec.url`` with ``spec.headers``)::

    {"guardrail_id": str, "model": str, "system_prompt_present": bool,
     "user_query": str, "output": str, "tool_calls": [{"name": str, "arguments": str}],
     "part": {"index": int, "total": int, "elided_before": int}, "tool_calls_omitted": int}

``arguments`` is the call's JSON text as the model emitted it (it may not be valid JSON). The system
prompt itself is not sent, only whether there was one: it is the operator's, not the user's.

Response: ``{"decision": "pass" | "block", "reason": str?, "replacement": str?}``.

Size: no request carries more than ``spec.max_chars`` characters of text, because a classifier that
refuses a large body would otherwise be switched off by a long answer. The query gets at most an
eighth of it and the tool calls a quarter (each cut to head and tail with a marked elision; calls
past that budget are counted in ``tool_calls_omitted``, never silently dropped); the answer gets the
rest and, when longer, is sent in parts of that size, one request per part, concurrently (``part``
says which; past ``spec.max_parts`` the middle is left out and ``elided_before`` counts it). Every
part must pass; a block in any part wins, else the first undecided part decides. JSON escaping may
add to the byte size (a control character is six bytes), so set ``max_chars`` with some room.

Every string written by the model or the client is sent as a reader sees it (``content.shown_text``:
invisible characters dropped, so tag characters cannot spell text the reader never saw) and with lone
surrogates replaced, so no text can make the request unencodable.

Failure policy: a 413, or a 400/422 that is not about keys, means the service refused this content
(``ContentRefused``: the runner blocks unless ``on_content_error = "pass"``). Any other non-2xx
status, a body that is not a JSON object, or an unknown ``decision`` is ``Undecided`` (fail open).
Transport errors propagate to the runner, which logs them as ``error:<type>`` and fails open. Header
values may be secrets: nothing here logs them.
"""

from __future__ import annotations

from typing import Any

import httpx

from config.policy import WebhookGuardrail
from guardrails.decision import PASS, WEBHOOK_BLOCK, Block, Decision
from guardrails.message.base import ConfiguredGuardrail, Undecided, clip, every_part_passes, json_answer
from guardrails.message.content import Part, elide, safe_text, shown_text, split_parts
from guardrails.seams import MessageContext

MIN_CALL_CHARS = 200
"""Smallest share of the tool-call budget one call gets (name plus the head and tail of its
arguments); with more calls than the budget holds at this share, the rest are counted, not sent."""
MAX_NAME_CHARS = 100


def _tool_calls(ctx: MessageContext, budget: int) -> tuple[list[dict[str, str]], int]:
    """The calls that fit in ``budget`` characters, each cut to its share, and how many did not."""
    calls = ctx.message.tool_calls
    if not calls:
        return [], 0
    fit = min(len(calls), max(budget // MIN_CALL_CHARS, 1))
    share = budget // fit
    sent = []
    for call in calls[:fit]:
        name = elide(shown_text(call.name), MAX_NAME_CHARS)
        sent.append({"name": name, "arguments": elide(shown_text(call.arguments), max(share - len(name), 2))})
    return sent, len(calls) - fit


def webhook_payloads(guardrail_id: str, ctx: MessageContext, max_chars: int = 32_000,
                     max_parts: int = 4) -> list[dict[str, Any]]:
    """One JSON body per part of the answer (documented in the module docstring)."""
    query = elide(shown_text(ctx.user_query), max_chars // 8)
    calls, omitted = _tool_calls(ctx, max_chars // 4)
    used = len(query) + sum(len(c["name"]) + len(c["arguments"]) for c in calls)
    parts = split_parts(shown_text(ctx.visible_text), max(max_chars - used, 1), max_parts)
    return [_payload(guardrail_id, ctx, query, calls, omitted, part) for part in parts]


def _payload(guardrail_id: str, ctx: MessageContext, query: str, calls: list[dict[str, str]],
             omitted: int, part: Part) -> dict[str, Any]:
    return {
        "guardrail_id": guardrail_id,
        "model": elide(safe_text(ctx.model), MAX_NAME_CHARS),
        "system_prompt_present": bool(ctx.system_prompt),
        "user_query": query,
        "output": part.text,
        "tool_calls": calls,
        "part": {"index": part.index, "total": part.total, "elided_before": part.elided_before},
        "tool_calls_omitted": omitted,
    }


class Webhook(ConfiguredGuardrail[WebhookGuardrail]):
    """Posts the finished message to ``spec.url`` and follows its pass/block answer."""

    def __init__(self, spec: WebhookGuardrail, replacement: str, http: httpx.AsyncClient) -> None:
        super().__init__(spec, replacement)
        self._http = http

    async def check_message(self, ctx: MessageContext) -> Decision:
        payloads = webhook_payloads(self.spec.id, ctx, self.spec.max_chars, self.spec.max_parts)
        return await every_part_passes([self._post(p) for p in payloads])

    async def _post(self, payload: dict[str, Any]) -> Decision:
        # The per-request timeout mirrors the spec so a shared client's own default cannot cut the
        # call shorter (or let it run longer) than the policy says; the runner bounds it as well.
        response = await self._http.post(self.spec.url, json=payload, headers=self.spec.headers,
                                         timeout=self.spec.timeout_s)
        body = json_answer(response)
        if isinstance(body, Undecided):
            return body
        if not isinstance(body, dict):
            return Undecided("bad_json")
        return self._decide(body)

    def _decide(self, body: dict[str, Any]) -> Decision:
        decision = body.get("decision")
        if not isinstance(decision, str):
            return Undecided("unknown_decision")
        decision = decision.strip().lower()
        if decision == "pass":
            return PASS
        if decision != "block":
            return Undecided("unknown_decision")
        reason = body.get("reason")
        replacement = body.get("replacement")
        rationale = (
            clip(reason.strip())
            if isinstance(reason, str) and reason.strip()
            else f"The '{self.spec.id}' classifier rejected the previous answer. Write a new one."
        )
        return Block(
            WEBHOOK_BLOCK,
            replacement if isinstance(replacement, str) and replacement else self.replacement,
            rationale,
        )
