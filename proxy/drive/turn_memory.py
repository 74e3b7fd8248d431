"""What a guarded turn leaves upstream, kept in the state store before the client gets the end of the
answer (``GuardedTurn.before_end``), and how a failing store is reported.

The edge decides what the turn should leave (``keeps``, ``unseen``) when it recalls the request's held
state; this object does the writing at the turn's end, in the drive, with the ids the turn's answer
named. A store that fails is counted, audited and logged (the cause, never a value): the answer goes on.
"""

from __future__ import annotations

import structlog

from guardrails.datamodel import RequestView
from proxy.drive.services import Services
from proxy.state import StoreUnavailable

log = structlog.get_logger("guardproxy")


def report_state_failure(services: Services, request_id: str, wire: str | None, op: str, action: str | None,
                         exc: StoreUnavailable) -> None:
    """The state store failed (``op``: get or put); ``action``: what the request gets
    (``unseen_prompt``), None after the answer."""
    engine = services.held_prompts.store.engine
    services.metrics.state_errors.labels(engine=engine, op=op, decision=action or "none").inc()
    services.audit.record("state_unavailable", request_id=request_id, rule="state_store",
                          reason_code="unseen_prompt", decision=action or "none", source=op, detail=engine,
                          wire=wire)
    log.warning("state_unavailable", engine=engine, op=op, decision=action or "none", cause=str(exc))


class TurnMemory:
    __slots__ = ("_keeps", "_recalled", "_request_id", "_scope", "_services", "_unseen", "_view", "_wire")

    def __init__(self, services: Services, request_id: str, wire: str | None, scope: str, view: RequestView,
                 recalled: tuple[str, ...], *, keeps: bool, unseen: bool) -> None:
        self._services, self._request_id, self._wire, self._scope = services, request_id, wire, scope
        self._view, self._recalled, self._keeps, self._unseen = view, recalled, keeps, unseen

    async def __call__(self, state_ids: tuple[str, ...]) -> None:
        """Remembered under the answer's ids (``state_ids``) and its conversation, or (a policy without
        a canary) the conversation forgotten, or made unseen (relayed with held state never seen)."""
        held = self._services.held_prompts
        try:
            if self._keeps:
                await held.remember_turn(self._scope, self._view, self._recalled, state_ids)
            elif self._unseen:
                await held.forget_unseen(self._scope, self._view)
            elif state_ids:
                await held.forget_unwatched(self._scope, self._view)
        except StoreUnavailable as exc:
            report_state_failure(self._services, self._request_id, self._wire, "put", None, exc)
