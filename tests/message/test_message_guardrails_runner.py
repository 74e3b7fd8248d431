"""The message-guardrail runner: concurrency, policy-order precedence, deadlines, no leaked tasks."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest
from structlog.testing import capture_logs

from guardrails.datamodel import AssistantMessage
from guardrails.decision import PASS, UNJUDGEABLE, Block, Decision, Redact
from guardrails.message import Skipped, Undecided, run_message_guardrails
from guardrails.message.base import ContentRefused, every_part_passes
from guardrails.seams import MessageContext

SECRET_TEXT = "the user's private answer text"


class Scripted:
    """A message guardrail whose behaviour is an async function; records start, end and cancellation."""

    def __init__(self, id: str, behaviour: Callable[[], Awaitable[Decision]]) -> None:
        self._id = id
        self._behaviour = behaviour
        self.started = asyncio.Event()
        self.finished = asyncio.Event()
        self.cancelled = False

    @property
    def id(self) -> str:
        return self._id

    async def check_message(self, ctx: MessageContext) -> Decision:
        self.started.set()
        try:
            return await self._behaviour()
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        finally:
            self.finished.set()


def returns(decision: Decision) -> Callable[[], Awaitable[Decision]]:
    async def behaviour() -> Decision:
        return decision

    return behaviour


def after(event: asyncio.Event, decision: Decision) -> Callable[[], Awaitable[Decision]]:
    async def behaviour() -> Decision:
        await event.wait()
        return decision

    return behaviour


async def hang() -> Decision:
    await asyncio.Event().wait()
    return PASS


def ctx() -> MessageContext:
    return MessageContext(message=AssistantMessage(text=SECRET_TEXT), user_query="a question")


async def test_an_earlier_block_wins_over_a_later_block_that_finished_first() -> None:
    later_done = asyncio.Event()
    first = Scripted("first", after(later_done, Block("judge_violation", "[1]")))

    async def later_behaviour() -> Decision:
        later_done.set()
        return Block("webhook_block", "[2]")

    later = Scripted("later", later_behaviour)
    verdict = await run_message_guardrails([first, later], ctx(), {})
    blocking = verdict.blocking
    assert blocking is not None
    assert blocking.guardrail_id == "first"
    assert blocking.decision == Block("judge_violation", "[1]")
    assert [r.guardrail_id for r in verdict.results] == ["first", "later"]


async def test_checks_run_concurrently() -> None:
    both: dict[str, Scripted] = {}

    def waits_for(other: str) -> Callable[[], Awaitable[Decision]]:
        async def behaviour() -> Decision:
            # Sequential execution would leave the other never started: this would time out.
            await both[other].started.wait()
            assert not both[other].finished.is_set()
            await asyncio.sleep(0.01)
            return PASS

        return behaviour

    both["a"] = Scripted("a", waits_for("b"))
    both["b"] = Scripted("b", waits_for("a"))
    verdict = await run_message_guardrails(list(both.values()), ctx(), {"a": 5, "b": 5})
    assert [(r.guardrail_id, r.outcome) for r in verdict.results] == [("a", "pass"), ("b", "pass")]


async def test_a_decided_block_cancels_the_later_checks_still_running() -> None:
    blocker = Scripted("blocker", returns(Block("moderation_flagged")))
    slow = Scripted("slow", hang)
    verdict = await run_message_guardrails([blocker, slow], ctx(), {"slow": 30})
    assert verdict.blocking is not None and verdict.blocking.guardrail_id == "blocker"
    assert [r.guardrail_id for r in verdict.results] == ["blocker"]
    assert slow.cancelled


async def test_a_block_waits_for_the_earlier_checks_to_decide() -> None:
    release = asyncio.Event()
    earlier = Scripted("earlier", after(release, PASS))
    blocker = Scripted("blocker", returns(Block("webhook_block")))
    task = asyncio.create_task(run_message_guardrails([earlier, blocker], ctx(), {}))
    await blocker.finished.wait()
    await asyncio.sleep(0)
    assert not task.done()
    release.set()
    verdict = await task
    assert [(r.guardrail_id, r.outcome) for r in verdict.results] == [("earlier", "pass"), ("blocker", "block")]


async def test_timeout_unavailability_and_undecided_all_fail_open() -> None:
    async def boom() -> Decision:
        raise ConnectionResetError(SECRET_TEXT)

    async def own_timeout() -> Decision:
        raise TimeoutError

    async def stray_cancel() -> Decision:
        raise asyncio.CancelledError

    guardrails = [
        Scripted("hangs", hang),
        Scripted("raises", boom),
        Scripted("own-timeout", own_timeout),
        Scripted("stray-cancel", stray_cancel),
        Scripted("undecided", returns(Undecided("http_503"))),
        Scripted("redacts", returns(Redact("pii", 0, 1, "*"))),
        Scripted("skips", returns(Skipped("tool_calls"))),
    ]
    verdict = await run_message_guardrails(guardrails, ctx(), {"hangs": 0.05})
    assert verdict.blocking is None
    assert [(r.guardrail_id, r.outcome, r.detail) for r in verdict.results] == [
        ("hangs", "fail_open", "timeout"),
        ("raises", "fail_open", "error:ConnectionResetError"),
        ("own-timeout", "fail_open", "error:TimeoutError"),
        ("stray-cancel", "fail_open", "error:CancelledError"),
        ("undecided", "fail_open", "http_503"),
        ("redacts", "fail_open", "unsupported:Redact"),
        ("skips", "pass", "skipped:tool_calls"),
    ]
    assert all(r.decision == PASS for r in verdict.results)
    assert [r.guardrail_id for r in verdict.failed_open] == [
        "hangs", "raises", "own-timeout", "stray-cancel", "undecided", "redacts"
    ]


@pytest.mark.parametrize("error", [UnicodeEncodeError("utf-8", "\ud800", 0, 1, "surrogates not allowed"),
                                   RecursionError("maximum recursion depth exceeded"), ValueError(SECRET_TEXT),
                                   ContentRefused("http_413")])
async def test_an_error_the_content_can_cause_blocks_instead_of_passing(error: Exception) -> None:
    async def boom() -> Decision:
        raise error

    verdict = await run_message_guardrails([Scripted("crashes", boom)], ctx(), {})
    (result,) = verdict.results
    assert result.outcome == "fail_closed"
    assert result.detail.startswith("content:")
    assert verdict.blocking is result
    assert isinstance(result.decision, Block) and result.decision.reason_code == UNJUDGEABLE
    assert SECRET_TEXT not in result.detail


async def test_no_task_outlives_the_run() -> None:
    before = asyncio.all_tasks()
    guardrails = [
        Scripted("times-out", hang),
        Scripted("blocks", returns(Block("judge_violation"))),
        Scripted("cancelled", hang),
    ]
    await run_message_guardrails(guardrails, ctx(), {"times-out": 0.05, "cancelled": 30})
    assert asyncio.all_tasks() == before
    assert guardrails[2].cancelled


async def test_cancelling_the_caller_cancels_every_check() -> None:
    before = asyncio.all_tasks()
    checks = [Scripted("a", hang), Scripted("b", hang)]
    task = asyncio.create_task(run_message_guardrails(checks, ctx(), {"a": 30, "b": 30}))
    await asyncio.gather(*(c.started.wait() for c in checks))
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert all(c.cancelled for c in checks)
    assert asyncio.all_tasks() == before


async def test_no_guardrails_is_an_empty_passing_verdict() -> None:
    verdict = await run_message_guardrails([], ctx(), {})
    assert verdict.results == [] and verdict.blocking is None


async def test_each_result_is_logged_once_without_message_text() -> None:
    guardrails = [
        Scripted("passes", returns(PASS)),
        Scripted("undecided", returns(Undecided("unparseable"))),
        Scripted("blocks", returns(Block("judge_violation", "[r]", "rationale"))),
    ]
    with capture_logs() as logs:
        await run_message_guardrails(guardrails, ctx(), {})
    results = [e for e in logs if e["event"] == "message_guardrail.result"]
    assert sorted((e["guardrail_id"], e["outcome"], e["reason_code"]) for e in results) == [
        ("blocks", "block", "judge_violation"),
        ("passes", "pass", None),
        ("undecided", "fail_open", None),
    ]
    for entry in results:
        assert {"latency_ms", "detail"} <= entry.keys()
    assert SECRET_TEXT not in repr(logs) and "a question" not in repr(logs)


async def test_a_block_in_any_part_wins_over_an_earlier_undecided_part() -> None:
    async def returns(decision: Decision) -> Decision:
        return decision

    block = Block("x", "r", "why")
    assert await every_part_passes([returns(Undecided("http_500")), returns(PASS), returns(block)]) == block
    assert await every_part_passes([returns(PASS), returns(Undecided("u"))]) == Undecided("u")
    assert await every_part_passes([returns(PASS), returns(PASS)]) is PASS
