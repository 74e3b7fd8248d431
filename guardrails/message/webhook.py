"""``webhook``: ask the user's own classifier service about the finished answer.

Request (POST JSON to ``spec.url`` with ``spec.headers``)::

    {"guardrail_id": str, "model": str, "system_prompt_present": bool,
     "user_query": str, "output": str, "tool_calls": [{"name": str, "arguments": str}]}

``arguments`` is the call's JSON text as the model emitted it (it may not be valid JSON). The system
prompt itself is not sent, only whether there was one: it is the operator's, not the user's.

Response: ``{"decision": "pass" | "block", "reason": str?, "replacement": str?}``.

Every string is sent with lone surrogates replaced (``content.safe_text``), so no text can make the
request unencodable.

Failure policy: a 413, or a 400/422 that is not about keys, means the service refused this content
(``ContentRefused``: the runner blocks unless ``on_content_error = "pass"``). Any other non-2xx
status, a body that is not a JSON object, or an unknown ``decision`` is ``Undecided`` (fail open).
Transport errors propagate to the runner, which logs them as ``error:<type>`` and fails open. Header
values may be secrets: nothing here logs them.
"""

from __future__ import annotations

import json
from typing import Any

import httpx

from config.policy import WebhookGuardrail
from guardrails.decision import PASS, WEBHOOK_BLOCK, Block, Decision
from guardrails.message.base import ConfiguredGuardrail, Undecided, clip, refused
from guardrails.message.content import safe_text
from guardrails.seams import MessageContext


def webhook_payload(guardrail_id: str, ctx: MessageContext) -> dict[str, Any]:
    """The JSON body sent to the classifier (documented in the module docstring)."""
    return {
        "guardrail_id": guardrail_id,
        "model": safe_text(ctx.model),
        "system_prompt_present": bool(ctx.system_prompt),
        "user_query": safe_text(ctx.user_query),
        "output": safe_text(ctx.visible_text),
        "tool_calls": [{"name": safe_text(c.name), "arguments": safe_text(c.arguments)}
                       for c in ctx.message.tool_calls],
    }


class Webhook(ConfiguredGuardrail[WebhookGuardrail]):
    """Posts the finished message to ``spec.url`` and follows its pass/block answer."""

    def __init__(self, spec: WebhookGuardrail, replacement: str, http: httpx.AsyncClient) -> None:
        super().__init__(spec, replacement)
        self._http = http

    async def check_message(self, ctx: MessageContext) -> Decision:
        # The per-request timeout mirrors the spec so a shared client's own default cannot cut the
        # call shorter (or let it run longer) than the policy says; the runner bounds it as well.
        response = await self._http.post(
            self.spec.url,
            json=webhook_payload(self.spec.id, ctx),
            headers=self.spec.headers,
            timeout=self.spec.timeout_s,
        )
        if not response.is_success:
            return refused(response)
        try:
            body = response.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            return Undecided("bad_json")
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
