"""The one call site for end-of-message guardrails: concurrent, time-bounded, fail-open.

Contract (DESIGN.md, "end-of-message checks"):

- Every guardrail runs in its own task, all at once, so the message waits for the slowest check,
  not the sum of them. Each is bounded by its own timeout: ``timeouts[id]`` when given, else its
  spec's ``timeout_s``.
- The checker being unavailable is ``fail_open``: a timeout, a transport error, an error status that
  is not about the content (``CheckUnavailable``, ``CompleterError``, ``httpx.TransportError``,
  ``OSError``), an ``Undecided`` verdict, or a decision this seam cannot act on. The message passes;
  an outage of a judge or classifier never wedges a turn.
- A timeout on an answer longer than one of the check's parts (its ``max_chars``) is the content's
  doing too (a long answer is a cause the content chose): ``fail_closed`` unless the spec says
  ``on_long_timeout = "pass"``.
- The content making the check fail is ``fail_closed``: ``ContentRefused`` (the checker refused this
  content) and any other exception (an encoding error, ``RecursionError``, a crash on odd input:
  whatever the content can provoke must not switch the check off). It acts as a ``Block`` with reason
  ``unjudgeable``, unless the guardrail's spec says ``on_content_error = "pass"``.
- The first ``block`` in *policy* order wins, never the first to finish: the verdict must not depend
  on network jitter. So a block only ends the wait early once every guardrail before it has
  decided; the checks still running after it are cancelled (their verdict could not change the
  outcome) and are absent from ``MessageVerdict.results``.
- No task outlives the call: pending checks are cancelled and awaited before returning, also when
  the caller itself is cancelled (client disconnect).
- One structlog line per guardrail (``message_guardrail.result``) with ``guardrail_id``,
  ``outcome``, ``reason_code``, ``latency_ms`` and ``detail``. Never the message, the prompt, or an
  exception's text (it may quote either): only the exception's type.

Limit: cancellation is cooperative. A check that blocks the event loop in synchronous code cannot
be interrupted by its timeout; the built-in checks only await I/O.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import httpx
import structlog

from guardrails.decision import PASS, UNJUDGEABLE, Block, Decision, Pass
from guardrails.message.base import AnySpec, ConfiguredGuardrail, ContentRefused, Skipped, Undecided
from guardrails.message.gate import CheckGate, QueueTimeout
from guardrails.seams import CheckUnavailable, CompleterError, MessageContext, MessageGuardrail

# For a guardrail neither in ``timeouts`` nor built from a spec; the policy's ``timeout_s`` default.
DEFAULT_TIMEOUT_S = 3.0

Outcome = Literal["pass", "block", "fail_open", "fail_closed"]

_UNAVAILABLE = (CheckUnavailable, CompleterError, httpx.TransportError, OSError)
"""Exceptions that say the checker is down, not that the content broke it."""
_UNJUDGEABLE_RATIONALE = ("An automated check could not process the previous answer. Write a shorter, "
                          "plain answer.")

_log = structlog.get_logger("guardproxy.message_guardrails")


@dataclass(frozen=True, slots=True)
class CheckResult:
    guardrail_id: str
    outcome: Outcome
    decision: Decision
    """The ``Block`` when ``outcome`` is ``block`` or ``fail_closed``; ``PASS`` otherwise."""
    latency_s: float
    detail: str
    """Why, in a few machine words: ``timeout``, ``error:<ExceptionType>``, ``unparseable``,
    ``no_completer``, ``http_500``, ``skipped:tool_calls``... Empty for a plain verdict. Never text
    from the message."""


@dataclass(frozen=True, slots=True)
class MessageVerdict:
    results: list[CheckResult]
    """In policy order; guardrails cancelled after a decisive block are left out."""

    @property
    def blocking(self) -> CheckResult | None:
        """The first block (or fail-closed check) in policy order, or None when the message passes."""
        return next((r for r in self.results if r.outcome in ("block", "fail_closed")), None)

    @property
    def failed_open(self) -> list[CheckResult]:
        return [r for r in self.results if r.outcome == "fail_open"]


def _classify(decision: Decision) -> tuple[Outcome, Decision, str]:
    """Map what a guardrail returned to (outcome, decision acted on, detail)."""
    if isinstance(decision, Undecided):
        return "fail_open", PASS, decision.reason
    if isinstance(decision, Skipped):
        return "pass", PASS, f"skipped:{decision.reason}"
    if isinstance(decision, Pass):
        return "pass", PASS, ""
    if isinstance(decision, Block):
        return "block", decision, ""
    # Redact is a stream-time rewrite with offsets; on a finished message it has no meaning here.
    return "fail_open", PASS, f"unsupported:{type(decision).__name__}"


async def _run_one(guardrail: MessageGuardrail, ctx: MessageContext, timeout_s: float,
                   gate: CheckGate | None = None) -> CheckResult:
    """Run one check under its deadline (started once it holds a ``gate`` slot). Never raises, except
    ``CancelledError`` from our caller."""
    start = time.perf_counter()
    if gate is None:
        return await _deadline(guardrail, ctx, timeout_s, start)
    try:
        async with gate.slot():
            return await _deadline(guardrail, ctx, timeout_s, time.perf_counter())
    except QueueTimeout:
        return CheckResult(guardrail.id, "fail_open", PASS, time.perf_counter() - start, "queue_timeout")


async def _deadline(guardrail: MessageGuardrail, ctx: MessageContext, timeout_s: float,
                    start: float) -> CheckResult:
    try:
        async with asyncio.timeout(timeout_s) as deadline:
            decision = await guardrail.check_message(ctx)
    except TimeoutError:
        # A TimeoutError raised by the check itself (not our deadline) is an error like any other.
        if deadline.expired() and _longer_than_a_part(guardrail, ctx):
            return _long_timed_out(guardrail, time.perf_counter() - start)
        detail = "timeout" if deadline.expired() else "error:TimeoutError"
        return CheckResult(guardrail.id, "fail_open", PASS, time.perf_counter() - start, detail)
    except asyncio.CancelledError:
        # Ours (the run was decided, or our caller went away): propagate. A CancelledError the check
        # raised on its own (a shared future cancelled elsewhere) must not pose as the caller's
        # cancellation, so it fails open like any other error.
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise
        return CheckResult(
            guardrail.id, "fail_open", PASS, time.perf_counter() - start, "error:CancelledError"
        )
    except _UNAVAILABLE as exc:
        detail = f"error:{type(exc).__name__}"
        return CheckResult(guardrail.id, "fail_open", PASS, time.perf_counter() - start, detail)
    except ContentRefused as exc:
        return _content_failed(guardrail, f"content:{exc.reason}", time.perf_counter() - start)
    except Exception as exc:  # noqa: BLE001 - the content may have provoked it; only the type is logged
        return _content_failed(guardrail, f"content:error:{type(exc).__name__}", time.perf_counter() - start)
    outcome, acted, detail = _classify(decision)
    return CheckResult(guardrail.id, outcome, acted, time.perf_counter() - start, detail)


def _content_failed(guardrail: MessageGuardrail, detail: str, latency_s: float) -> CheckResult:
    """The content made the check fail: a block (``unjudgeable``) unless the spec lets it pass."""
    if isinstance(guardrail, ConfiguredGuardrail):
        spec: AnySpec = guardrail.spec
        if spec.on_content_error == "pass":
            return CheckResult(guardrail.id, "fail_open", PASS, latency_s, detail)
        block = Block(UNJUDGEABLE, guardrail.replacement, _UNJUDGEABLE_RATIONALE)
    else:
        block = Block(UNJUDGEABLE, "", _UNJUDGEABLE_RATIONALE)
    return CheckResult(guardrail.id, "fail_closed", block, latency_s, detail)


def _longer_than_a_part(guardrail: MessageGuardrail, ctx: MessageContext) -> bool:
    """Whether the answer is longer than one request of this check carries (``max_chars``)."""
    if not isinstance(guardrail, ConfiguredGuardrail):
        return False
    max_chars = getattr(guardrail.spec, "max_chars", None)
    return isinstance(max_chars, int) and len(ctx.visible_text) > max_chars


def _long_timed_out(guardrail: MessageGuardrail, latency_s: float) -> CheckResult:
    """A timeout on an answer longer than one part: the content chose the cause (``on_long_timeout``)."""
    if not isinstance(guardrail, ConfiguredGuardrail) or guardrail.spec.on_long_timeout == "pass":
        return CheckResult(guardrail.id, "fail_open", PASS, latency_s, "timeout:long")
    block = Block(UNJUDGEABLE, guardrail.replacement, _UNJUDGEABLE_RATIONALE)
    return CheckResult(guardrail.id, "fail_closed", block, latency_s, "content:timeout_long")


def _timeout_for(guardrail: MessageGuardrail, timeouts: Mapping[str, float]) -> float:
    """``timeouts`` wins; else the guardrail's own spec; else ``DEFAULT_TIMEOUT_S``."""
    if guardrail.id in timeouts:
        return timeouts[guardrail.id]
    if isinstance(guardrail, ConfiguredGuardrail):
        spec: AnySpec = guardrail.spec
        return spec.timeout_s
    return DEFAULT_TIMEOUT_S


def _decided(results: Sequence[CheckResult | None]) -> bool:
    """True once the verdict can no longer change: a block with every earlier check decided."""
    for result in results:
        if result is None:
            return False
        if result.outcome in ("block", "fail_closed"):
            return True
    return False


def _log_result(result: CheckResult) -> None:
    reason_code = result.decision.reason_code if isinstance(result.decision, Block) else None
    log = _log.warning if result.outcome in ("fail_open", "fail_closed") else _log.info
    log(
        "message_guardrail.result",
        guardrail_id=result.guardrail_id,
        outcome=result.outcome,
        reason_code=reason_code,
        latency_ms=round(result.latency_s * 1000, 1),
        detail=result.detail,
    )


async def run_message_guardrails(
    guardrails: Sequence[MessageGuardrail],
    ctx: MessageContext,
    timeouts: Mapping[str, float],
    gate: CheckGate | None = None,
) -> MessageVerdict:
    """Run every guardrail on the finished message concurrently; see the module docstring. With a
    ``gate``, each check first waits for a slot (outside its deadline; ``queue_timeout`` fails open)."""
    results: list[CheckResult | None] = [None] * len(guardrails)
    tasks = [
        asyncio.create_task(_run_one(g, ctx, _timeout_for(g, timeouts), gate), name=f"message-guardrail:{g.id}")
        for g in guardrails
    ]
    position = {task: i for i, task in enumerate(tasks)}
    try:
        pending: set[asyncio.Task[CheckResult]] = set(tasks)
        while pending and not _decided(results):
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                result = task.result()
                results[position[task]] = result
                _log_result(result)
    finally:
        for task in tasks:
            task.cancel()
        # Wait for the cancellations to land so nothing outlives this call.
        await asyncio.gather(*tasks, return_exceptions=True)
    for guardrail, maybe in zip(guardrails, results):
        if maybe is None:
            _log.info("message_guardrail.cancelled", guardrail_id=guardrail.id)
    return MessageVerdict([r for r in results if r is not None])
