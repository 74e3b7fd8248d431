"""The three seams, one per timing. Each contract is stated here; the runners enforce the timing.

- ``StreamGuardrail`` / ``DeltaCheck``: synchronous, on every text delta of the streaming hot path.
  ``check`` must cost O(len(delta)) (plus a constant tail window), never a rescan of the accumulated
  text. No I/O.
- ``MessageGuardrail``: async, once per finished message. May do I/O. The runner bounds it by its
  ``timeout_s`` and fails open (timeouts, transport errors and unparseable verdicts pass).
- Tool rules (``guardrails.tools``): pure judgement of one tool call over recorded observations.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from config.errors import CheckFailure
from guardrails.datamodel import AssistantMessage
from guardrails.decision import PASS, Decision


@dataclass(frozen=True, slots=True)
class StreamContext:
    """What a stream guardrail may look at when it arms for one message."""

    system_prompt: str
    model: str = ""
    wire: str = ""
    """The client's wire format: ``openai_chat``, ``openai_responses``, ``anthropic``, ``gemini``."""
    canary_token: str = ""
    """The token the proxy planted in this request's system prompt, when a canary plants one."""


class DeltaCheck:
    """Per-stream state of one armed guardrail.

    The pipeline releases text by each check's *horizon* (``horizon``): the earliest offset of the
    accumulated text that could still become part of a match this check would report. Text before
    the smallest horizon of the armed checks goes out at once; text from it on is held.

    ``window`` is the longest span the check may need to see before it can decide about it (an upper
    bound on how far behind the end its horizon can lie). The default ``horizon`` is the
    conservative ``len(accumulated) - window``, so a check that only sets ``window`` holds a fixed
    window, exactly as before horizons existed. A check that can match across deltas must set it to
    at least the longest span it needs to see before it can block.

    One is armed per open stream: the built-in checks declare ``__slots__`` (an instance dict is
    a few hundred bytes per object, per stream); a subclass without them still works.
    """

    __slots__ = ()
    window: int = 0
    sees_visible_text: bool = False
    """True: the check reads the text as a reader sees it, every invisible character dropped and every
    look-alike read as the ASCII character it imitates (``guardrails.text.invisible``). Once a
    stream carries one, ``ArmedSet`` hands such a check that text, with its own offsets, and maps its
    horizon and redaction spans back to the raw text. A check
    that counts raw characters (``max_length``) or normalises for itself (``canary``) leaves it False."""

    def check(self, accumulated: str, delta: str) -> Decision:
        """Called after ``delta`` was appended (``accumulated`` ends with it). O(len(delta))."""
        raise NotImplementedError

    def horizon(self, accumulated: str) -> int:
        """The earliest offset of ``accumulated`` that could still become part of a match.

        Called after ``check`` returned ``PASS`` for this same ``accumulated`` (and after any
        ``Redact`` was re-checked to ``PASS``). The contract:

        - **Safe.** No match this check reports later, whatever text follows, may contain a
          character at an offset below the returned value. Those characters may be sent to the
          client at once. (A match the check has already reported and passed, e.g. an allowed
          value or a redaction already applied, does not count.)
        - **Monotone.** Never smaller than a value returned earlier for the same stream.
        - **Bounded.** ``0 <= horizon <= len(accumulated)``; ``len(accumulated)`` means "nothing
          pending"; a check must never need more than ``window`` characters, so it is at least
          ``len(accumulated) - window``.
        - **Cheap.** O(1) amortised, or O(len(delta)) with ``check``: keep it up to date inside
          ``check`` and return a stored value; never rescan ``accumulated``.

        Typical answers: the start of the token that is a prefix of (or inside) a shape being
        matched; the start of the longest suffix that occurs in the watched text; ``len(accumulated)``
        when the tail cannot start or continue any match.
        """
        return max(0, len(accumulated) - self.window)

    def finish(self, accumulated: str) -> Decision:
        """Called once when the message text is complete (matches that end at the very end)."""
        return PASS

    def check_horizon(self, accumulated: str, delta: str) -> Decision | int:
        """``check``, then, when it passed, ``horizon``: the decision, or the horizon (an ``int``)
        for ``PASS``. The pipeline's per-delta call; a check may fuse the two steps (one call instead
        of two), as long as it returns exactly what they would. A subclass that overrides ``check``
        or ``horizon`` without overriding this gets this plain form back (``__init_subclass__``)."""
        decision = self.check(accumulated, delta)
        return self.horizon(accumulated) if decision is PASS else decision

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if ("check" in cls.__dict__ or "horizon" in cls.__dict__) and "check_horizon" not in cls.__dict__:
            cls.check_horizon = DeltaCheck.check_horizon  # type: ignore[method-assign]


class StreamGuardrail(Protocol):
    """A provider: one instance serves every stream. Per-stream state lives in its ``DeltaCheck``."""

    @property
    def id(self) -> str: ...

    def arm(self, ctx: StreamContext) -> DeltaCheck | None:
        """Build the per-stream check, or decline (None) when it does not apply to this stream."""
        ...


# Capabilities a stream guardrail may declare as class or instance attributes (the driver asks for
# them instead of testing a guardrail's kind):
# - ``plants_instruction``: it needs a token planted in the request's system prompt (the canary);
# - ``judges_tool_arguments``: its check also runs over complete tool-call arguments (default True),
#   in the form its ``tool_arguments_form`` gives when it has one (the canary's longer threshold);
# - ``sees_visible_text``: its checks read the text as a reader sees it (``DeltaCheck.sees_visible_text``),
#   so its whole-text form is handed that text too (default False);
# - ``passes_whole``: a cheap verdict over a complete text that needs no armed check (``PassesWhole``).
def plants_instruction(guardrail: StreamGuardrail) -> bool:
    return bool(getattr(guardrail, "plants_instruction", False))


def judges_tool_arguments(guardrail: StreamGuardrail) -> bool:
    return bool(getattr(guardrail, "judges_tool_arguments", True))


def sees_visible_text(guardrail: StreamGuardrail) -> bool:
    return bool(getattr(guardrail, "sees_visible_text", False))


PassesWhole = Callable[[StreamContext, Sequence[str]], bool]
"""A stream guardrail's optional whole-text form, ``passes_whole(ctx, pieces)``: True only when the
check it would arm for ``ctx``, fed ``pieces`` (a complete text, in order) one ``check`` per piece and
then ``finish``, would return ``PASS`` every time (an armed check that declines, None, passes). False
when it might not: the caller then runs the armed check itself. It must never be True where the
armed check would act; a False costs only time. A complete (non-streamed) answer that every
guardrail passes whole needs no armed checks at all (``proxy.core.whole_answer``)."""


def passes_whole_of(guardrail: StreamGuardrail) -> PassesWhole | None:
    """The guardrail's ``passes_whole``, or None when it has none (it is then armed and run)."""
    form = getattr(guardrail, "passes_whole", None)
    return form if callable(form) else None


class CompleterError(CheckFailure):
    """The judge's upstream answered with an error status. ``detail`` is the start of its error body
    (the judge reads it to tell a refused parameter or an over-long prompt from an outage); it is
    never logged."""

    def __init__(self, status: int, detail: str = "") -> None:
        super().__init__(f"judge upstream answered {status}")
        self.status = status
        self.detail = detail


class CheckUnavailable(CheckFailure):
    """The checker could not be reached or answered nothing usable: the check fails open."""


class TextCompleter(Protocol):
    """Sends one stateless prompt to a model and returns its text (used by the LLM judge).

    ``temperature=None`` leaves the parameter out (reasoning models refuse it). Raises
    ``CompleterError`` on an error status and ``CheckUnavailable`` when the upstream is unreachable."""

    async def complete(self, prompt: str, *, model: str, temperature: float | None = 0.0) -> str: ...


@dataclass(slots=True)
class MessageContext:
    """What a message guardrail sees: the finished message and the request it answers."""

    message: AssistantMessage
    system_prompt: str = ""
    user_query: str = ""
    model: str = ""
    completer: TextCompleter | None = None
    """Talks to the request's own upstream with the request's own credentials; None when unavailable."""
    completer_for: Callable[[str, str | None, str | None], TextCompleter | None] | None = None
    """For a judge that names its own upstream: ``(wire, base_url, api_key_env) -> completer``, where
    ``wire`` is ``openai_chat``, ``anthropic`` or ``gemini``. None when the proxy offers none."""
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def visible_text(self) -> str:
        """The text the client renders: the message plus its citations."""
        if not self.message.annotations:
            return self.message.text
        return "\n".join([self.message.text, *self.message.annotations])


class MessageGuardrail(Protocol):
    """Runs once on the finished message. May do I/O; the runner applies the timeout."""

    @property
    def id(self) -> str: ...

    async def check_message(self, ctx: MessageContext) -> Decision: ...
