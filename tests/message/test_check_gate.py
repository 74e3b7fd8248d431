"""Message checks under load (issue #17, class 5): waiting for a slot is not part of a check's own
timeout, a check that never gets a slot fails open as ``queue_timeout``, and the waits are observed."""

from __future__ import annotations

import asyncio

from guardrails.datamodel import AssistantMessage
from guardrails.decision import PASS, Decision
from guardrails.message import run_message_guardrails
from guardrails.message.gate import CheckGate
from guardrails.seams import MessageContext


class Slow:
    """A check that takes ``seconds`` and passes."""

    def __init__(self, id: str, seconds: float) -> None:
        self._id, self.seconds = id, seconds

    @property
    def id(self) -> str:
        return self._id

    async def check_message(self, ctx: MessageContext) -> Decision:
        await asyncio.sleep(self.seconds)
        return PASS


def ctx() -> MessageContext:
    return MessageContext(message=AssistantMessage(text="an answer"))


async def test_queueing_for_a_slot_does_not_eat_the_checks_timeout() -> None:
    waits: list[float] = []
    seen: list[tuple[int, int]] = []
    gate = CheckGate(2, queue_timeout_s=5.0, observe=waits.append, gauges=lambda a, b: seen.append((a, b)))
    # Ten messages, two slots, each check 0.3 s with a 1 s timeout (room for a busy machine): the
    # last waits at least 1.2 s for a slot, so without the gate's separation it would time out.
    runs = [run_message_guardrails([Slow(f"c{i}", 0.3)], ctx(), {f"c{i}": 1.0}, gate) for i in range(10)]
    verdicts = await asyncio.gather(*runs)
    assert [r.outcome for v in verdicts for r in v.results] == ["pass"] * 10
    assert len(waits) == 10 and max(waits) > 1.0
    assert max(a for a, _ in seen) == 2 and max(b for _, b in seen) >= 8
    assert (gate.in_flight, gate.queued) == (0, 0)


async def test_a_check_that_never_gets_a_slot_fails_open_as_queue_timeout() -> None:
    gate = CheckGate(1, queue_timeout_s=0.05)
    hog = asyncio.create_task(run_message_guardrails([Slow("hog", 0.5)], ctx(), {"hog": 2.0}, gate))
    await asyncio.sleep(0.01)
    verdict = await run_message_guardrails([Slow("late", 0.01)], ctx(), {"late": 1.0}, gate)
    assert [(r.outcome, r.detail) for r in verdict.results] == [("fail_open", "queue_timeout")]
    assert [r.outcome for r in (await hog).results] == ["pass"]
