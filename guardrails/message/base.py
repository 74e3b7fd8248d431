"""What the built-in message guardrails share: their policy spec, and two ways to pass without judging.

A message guardrail must return a decision, never raise one. But "I could not decide" (no completer,
an unparseable verdict, a webhook that answered 500) is not the same as "the message is fine", and
the runner has to count it as ``fail_open``. ``Undecided`` carries that distinction *inside* a
``Pass``: any caller that only knows the ``MessageGuardrail`` seam sees a ``Pass`` and fails open by
construction, while the runner, which knows this type, records the reason. ``Skipped`` does the same
for "this check does not apply to this message" so a judge that never ran is not logged as a verdict.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

import httpx

from config.errors import CheckFailure
from config.policy import JudgeGuardrail, ModerationGuardrail, WebhookGuardrail
from guardrails.decision import PASS, Block, Decision, Pass

# Rationales and webhook reasons are fed back to the model as a corrective hint; cap them so a
# chatty classifier cannot flood the retry prompt.
MAX_RATIONALE_CHARS = 500


@dataclass(frozen=True, slots=True)
class Undecided(Pass):
    """The check could not reach a verdict; the message passes and the runner logs ``fail_open``."""

    reason: str
    """Machine-readable cause (``no_completer``, ``unparseable``, ``http_503``...). Never message text."""


@dataclass(frozen=True, slots=True)
class Skipped(Pass):
    """The check does not apply to this message (tool calls, empty text); logged as a pass."""

    reason: str


class ContentRefused(CheckFailure):
    """The checker refused *this content* (too long for its context, a request it cannot take): the
    content made the check fail, so the runner does not count it as a pass (``on_content_error``)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
        """Machine words (``http_413``, ``http_400``); never the checker's error text."""


Refusal = Literal["content", "parameter", "unavailable"]
_CONFIG_WORDS = ("api key", "api_key", "apikey", "authentic", "permission", "credential")


def classify_refusal(status: int, detail: str) -> Refusal:
    """Why a checker answered ``status``: the content (413; a 400/422 that is not about the setup),
    a parameter the model refuses (a 400 naming ``temperature``), or an outage/setup problem (401,
    403, 404, 408, 429, 5xx, a 400 about keys). ``detail`` is the start of the error body."""
    if status == 413:
        return "content"
    if status not in (400, 422):
        return "unavailable"
    text = detail.lower()
    if "temperature" in text:
        return "parameter"
    if any(word in text for word in _CONFIG_WORDS):
        return "unavailable"
    return "content"


def refused(response: httpx.Response) -> Undecided:
    """An error status: ``Undecided`` for an outage, ``ContentRefused`` (raised) for this content."""
    status = response.status_code
    if classify_refusal(status, response.text[:2000]) == "unavailable":
        return Undecided(f"http_{status}")
    raise ContentRefused(f"http_{status}")


def json_answer(response: httpx.Response) -> Any | Undecided:
    """The decoded body of a checker's answer, or the ``Undecided`` (or raised ``ContentRefused``,
    see ``refused``) for an error status or a body that is not JSON."""
    if not response.is_success:
        return refused(response)
    try:
        return response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        return Undecided("bad_json")


AnySpec = JudgeGuardrail | WebhookGuardrail | ModerationGuardrail
S = TypeVar("S", JudgeGuardrail, WebhookGuardrail, ModerationGuardrail)


class ConfiguredGuardrail(Generic[S]):
    """A message guardrail built from its policy entry.

    The spec stays on the object so the proxy can look up what to do on a block (``action``,
    ``max_attempts``, ``mandate``, ``final_action``) by the id the runner reports.
    """

    def __init__(self, spec: S, replacement: str) -> None:
        self.spec: S = spec
        self.replacement = replacement
        """The text the client sees on a block: the spec's own, else the policy default."""

    @property
    def id(self) -> str:
        return self.spec.id


def clip(text: str, limit: int = MAX_RATIONALE_CHARS) -> str:
    """Cut ``text`` to ``limit`` characters, marking the cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


async def every_part_passes(checks: Sequence[Awaitable[Decision]]) -> Decision:
    """Run the per-part checks concurrently: the first ``Block`` in part order (a block in any part
    wins over another part being undecided), else the first other non-pass (``Undecided``), else
    ``PASS``. An exception in one part (the checker refused it) ends the others: they are cancelled
    and awaited, so none outlives the check."""
    if len(checks) == 1:
        return await checks[0]
    tasks = [asyncio.ensure_future(c) for c in checks]
    try:
        decisions = await asyncio.gather(*tasks)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    blocks = [d for d in decisions if isinstance(d, Block)]
    return blocks[0] if blocks else next((d for d in decisions if d is not PASS), PASS)
