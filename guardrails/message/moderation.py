"""``moderation``: an OpenAI-compatible moderation endpoint scores the finished answer.

Request: ``POST {spec.url}`` with ``{"model": spec.model, "input": text}`` and, when
``spec.api_key_env`` is set, ``Authorization: Bearer $<api_key_env>``. The variable is read at check
time, not at import or build time, so a key rotated in the environment is picked up and nothing is
read until a message is actually moderated.

Decision: with ``spec.thresholds`` the message is flagged when any listed category's score is at or
above its threshold (categories the endpoint does not score do not count); without thresholds the
endpoint's own ``results[0].flagged`` decides. The rationale names the categories, never the text.

Size: no request carries more than ``spec.max_chars`` characters (an endpoint that refuses a large
body must not be switched off by a long answer): longer text is sent in parts, one request each,
concurrently; past ``spec.max_parts`` the first ``max_parts - 1`` and the last are sent. The message
is flagged when any part is; the first part in order that is undecided decides otherwise. Lone
surrogates are replaced.

Failure policy: a missing key, an error status that is not about the content, or a body without one
result is ``Undecided`` (fail open); a 413 or a content 400/422 is ``ContentRefused`` (the
runner blocks unless ``on_content_error = "pass"``); transport errors propagate to the runner, which
fails open.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import httpx

from config.policy import ModerationGuardrail
from guardrails.decision import MODERATION_FLAGGED, PASS, Block, Decision
from guardrails.message.base import ConfiguredGuardrail, Skipped, Undecided, every_part_passes, json_answer
from guardrails.message.content import shown_text, split_parts
from guardrails.seams import MessageContext


def flagged_categories(result: Mapping[str, Any], thresholds: Mapping[str, float]) -> list[str] | None:
    """The categories that flag this result ([] when none), or None when the result is malformed."""
    scores = result.get("category_scores", {})
    if not isinstance(scores, dict):
        return None
    if thresholds:
        return [
            name
            for name, limit in thresholds.items()
            if isinstance(scores.get(name), int | float) and scores[name] >= limit
        ]
    flagged = result.get("flagged")
    if not isinstance(flagged, bool):
        return None
    if not flagged:
        return []
    categories = result.get("categories", {})
    named = [k for k, v in categories.items() if v is True] if isinstance(categories, dict) else []
    # Flagged without naming why still flags; "unspecified" keeps the rationale well-formed.
    return sorted(named) or ["unspecified"]


class Moderation(ConfiguredGuardrail[ModerationGuardrail]):
    """Sends the finished answer's visible text to a moderation endpoint."""

    def __init__(self, spec: ModerationGuardrail, replacement: str, http: httpx.AsyncClient) -> None:
        super().__init__(spec, replacement)
        self._http = http

    def _headers(self) -> dict[str, str] | None:
        """Auth headers, or None when a key is configured but absent from the environment."""
        if self.spec.api_key_env is None:
            return {}
        key = os.environ.get(self.spec.api_key_env, "")
        return {"Authorization": f"Bearer {key}"} if key else None

    async def check_message(self, ctx: MessageContext) -> Decision:
        text = shown_text(ctx.visible_text)
        if not text.strip():
            return Skipped("empty_text")
        headers = self._headers()
        if headers is None:
            return Undecided("no_api_key")
        parts = [p.text for p in split_parts(text, self.spec.max_chars, self.spec.max_parts)]
        return await every_part_passes([self._moderate(part, headers) for part in parts])

    async def _moderate(self, text: str, headers: dict[str, str]) -> Decision:
        response = await self._http.post(
            self.spec.url,
            json={"model": self.spec.model, "input": text},
            headers=headers,
            timeout=self.spec.timeout_s,
        )
        body = json_answer(response)
        if isinstance(body, Undecided):
            return body
        results = body.get("results") if isinstance(body, dict) else None
        if not isinstance(results, list) or not results or not isinstance(results[0], dict):
            return Undecided("bad_response")
        categories = flagged_categories(results[0], self.spec.thresholds)
        if categories is None:
            return Undecided("bad_response")
        if not categories:
            return PASS
        rationale = (
            "A moderation check flagged the previous answer for: "
            + ", ".join(sorted(categories))
            + ". Write a new answer without that content."
        )
        return Block(MODERATION_FLAGGED, self.replacement, rationale)
