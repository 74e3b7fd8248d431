"""The built-in streaming guardrails and the runner the stream pipeline calls them through.

``build_stream_guardrails`` turns the policy's specs into providers once; ``ArmedSet.arm`` builds
one stream's checks; the pipeline calls ``ArmedSet.check`` after every text delta, then
``ArmedSet.horizon`` to learn how much text may be released, and ``ArmedSet.finish`` at the end of
the message, from exactly one call site each.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from config.policy import (
    CanaryGuardrail,
    HiddenTextGuardrail,
    MaxLengthGuardrail,
    PiiGuardrail,
    RegexGuardrail,
    SecretsGuardrail,
    StreamGuardrailSpec,
)
from guardrails.decision import PASS, Block, Decision, Redact
from guardrails.seams import (
    DeltaCheck,
    PassesWhole,
    StreamContext,
    StreamGuardrail,
    passes_whole_of,
    sees_visible_text,
)
from guardrails.stream.canary import CanaryProvider, canary_instruction, make_canary_token
from guardrails.stream.hidden_text import HiddenTextProvider
from guardrails.stream.max_length import MaxLengthProvider
from guardrails.stream.patterns import RegexProvider
from guardrails.stream.pii import PiiProvider
from guardrails.stream.secrets import SecretsProvider
from guardrails.text.invisible import VisibleText, as_read, disguises, reads_as_is

__all__ = ["ArmedSet", "Trip", "WholeForms", "build_stream_guardrails", "canary_instruction", "make_canary_token",
           "passes_complete", "passes_forms", "whole_forms"]


def build_stream_guardrails(specs: Sequence[StreamGuardrailSpec], default_replacement: str,
                            base_dir: Path = Path(".")) -> list[StreamGuardrail]:
    """Providers for the enabled specs, in policy order. Raises ValueError on a bad pattern or
    category (the policy is then unusable, and saying so at start beats failing per request).
    Relative paths in specs (``rules_file``) are resolved against ``base_dir``."""
    providers: list[StreamGuardrail] = []
    for spec in specs:
        if not spec.enabled:
            continue
        replacement = spec.replacement or default_replacement
        match spec:
            case CanaryGuardrail():
                providers.append(CanaryProvider(spec, replacement))
            case SecretsGuardrail():
                providers.append(SecretsProvider(spec, replacement, base_dir))
            case RegexGuardrail():
                providers.append(RegexProvider(spec, replacement))
            case PiiGuardrail():
                providers.append(PiiProvider(spec, replacement))
            case MaxLengthGuardrail():
                providers.append(MaxLengthProvider(spec, replacement))
            case HiddenTextGuardrail():
                providers.append(HiddenTextProvider(spec, replacement))
    if any(sees_visible_text(p) for p in providers):
        disguises()  # the look-alike table and its search, built with the policy, not on a stream
    return providers


_NOTHING_OWED: dict[int, str] = {}


@dataclass(frozen=True, slots=True)
class Trip:
    """Which armed guardrail acted, and how."""

    guardrail_id: str
    decision: Block | Redact


class ArmedSet:
    """One stream's armed checks, run in policy order; the first non-Pass decision wins.

    Invisible characters and look-alikes (``guardrails.text.invisible``): from the first delta that
    carries one, the set keeps the text as a reader reads it (``_view``) and hands it to the checks
    that read that text (``DeltaCheck.sees_visible_text``), each delta with its invisible characters
    dropped and its look-alikes read as ASCII; their horizons and redaction spans are mapped back to
    the raw text (a horizon holds the invisible characters just before it, a span covers every one
    inside the match and the raw look-alikes of it). The other checks keep the raw text. Until then
    (nearly every stream) the checks see the raw text, which is then the visible one, and the
    per-delta cost is one ``str.isascii`` more (one C search for a non-ASCII delta)."""

    # One per open stream: its ids and checks in two lists (no pair per check) and no dict of
    # owed text until a redaction owes some (``_NOTHING_OWED`` is shared and never written).
    __slots__ = ("_objects", "_owed", "_view", "ids", "window")

    _fused = True
    """``check_horizon`` runs both steps in one pass; False in a subclass that overrides ``check`` or
    ``horizon`` (a test's fixed-window guard): there it calls them."""

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        cls._fused = cls.check is ArmedSet.check and cls.horizon is ArmedSet.horizon

    def __init__(self, armed: list[tuple[str, DeltaCheck]]) -> None:
        self.ids = [guardrail_id for guardrail_id, _ in armed]
        self._objects = [check for _, check in armed]
        self.window = max((check.window for check in self._objects), default=0)
        """Hold back at least this many characters: no armed check can still need more."""
        self._owed = _NOTHING_OWED
        self._view: VisibleText | None = None
        """The text a reader sees, from the first delta that carried an invisible character on."""

    @classmethod
    def arm(cls, guardrails: Sequence[StreamGuardrail], ctx: StreamContext) -> ArmedSet:
        armed = [(g.id, check) for g in guardrails if (check := g.arm(ctx)) is not None]
        return cls(armed)

    def disarm(self, guardrail_id: str) -> None:
        """Stop running one guardrail on this stream (its block was only to be logged)."""
        kept = [(g, c) for g, c in zip(self.ids, self._objects, strict=True) if g != guardrail_id]
        self.ids = [g for g, _ in kept]
        self._objects = [c for _, c in kept]

    def check(self, accumulated: str, delta: str) -> Trip | None:
        """The first trip of the armed checks on ``delta``. After a ``Redact`` the caller calls again
        with an empty delta; the checks after the one that redacted have not seen ``delta`` yet, so
        they get it then (``_owed``): a check that reads only the delta (the canary) misses nothing."""
        view = self._view
        if view is None and not (delta.isascii() or reads_as_is(delta)):
            view = self._view = VisibleText()
            view.add(accumulated[:len(accumulated) - len(delta)])
        if view is not None:
            return self._check_seen(view, accumulated, delta)
        owed = self._owed
        # The checks' methods are called, not kept bound per stream (two lists of bound methods
        # were ~860 bytes of every open stream, all armed; a method call costs no more).
        checks = self._objects
        for index, check in enumerate(checks):
            seen = owed.pop(index, "") + delta if owed else delta
            decision = check.check(accumulated, seen)
            if decision is not PASS and (trip := _trip(self.ids[index], decision)) is not None:
                if isinstance(trip.decision, Redact):
                    self._owe(index, delta)
                return trip
        return None

    def _owe(self, index: int, delta: str) -> None:
        """After check ``index`` redacted: the checks after it have not seen ``delta`` yet."""
        owed = self._owed
        if owed is _NOTHING_OWED:
            owed = self._owed = {}
        for later in range(index + 1, len(self._objects)):
            owed[later] = owed.get(later, "") + delta

    def _check_seen(self, view: VisibleText, accumulated: str, delta: str) -> Trip | None:
        """``check`` on a stream that carried an invisible character or a look-alike: a check that
        reads the visible text gets it, and its redaction is mapped to the raw text; the others get
        the raw text."""
        shown = view.add(delta)
        owed = self._owed
        for index, check in enumerate(self._objects):
            raw = owed.pop(index, "") + delta if owed else delta
            if check.sees_visible_text:
                decision = check.check(view.text, shown if raw is delta else as_read(raw))
            else:
                decision = check.check(accumulated, raw)
            if decision is not PASS and (trip := _trip(self.ids[index], decision)) is not None:
                if isinstance(trip.decision, Redact):
                    self._owe(index, delta)
                    if check.sees_visible_text:
                        trip = _mapped(trip, trip.decision, view)
                return trip
        return None

    def check_horizon(self, accumulated: str, delta: str) -> Trip | int:
        """``check``, and when nothing trips, ``horizon``, in one pass over the checks: the trip, or
        the smallest horizon. Each check's horizon depends only on that check's own state, so it is
        asked right after its own ``check`` passed, in the same call (``DeltaCheck.check_horizon``):
        the per-delta path, one loop and one call per check."""
        if self._owed or not self._fused:  # a redaction owes later checks some text: the two steps
            trip = self.check(accumulated, delta)
            return trip if trip is not None else self.horizon(accumulated)
        view = self._view
        if view is None and not (delta.isascii() or reads_as_is(delta)):
            view = self._view = VisibleText()
            view.add(accumulated[:len(accumulated) - len(delta)])
        if view is not None:
            return self._check_horizon_seen(view, accumulated, delta)
        end = len(accumulated)
        for check in self._objects:
            at = check.check_horizon(accumulated, delta)
            if not isinstance(at, int):  # a decision that is not PASS
                if (trip := self._tripped(check, at, delta)) is not None:
                    return trip
                at = check.horizon(accumulated)
            if at < end:  # noqa: PLR1730 - min() is a builtin call per check per delta
                end = at
        return end

    def _check_horizon_seen(self, view: VisibleText, accumulated: str, delta: str) -> Trip | int:
        """``check_horizon`` on a stream that carried an invisible character or a look-alike, in one
        pass too: a check that reads the visible text gets it, and its horizon (or redaction) is
        mapped to the raw text."""
        shown = view.add(delta)
        text = view.text
        end, low = len(accumulated), len(text)
        for check in self._objects:
            seen, seen_delta = (text, shown) if check.sees_visible_text else (accumulated, delta)
            at = check.check_horizon(seen, seen_delta)
            if not isinstance(at, int):  # a decision that is not PASS
                if (trip := self._tripped(check, at, delta)) is not None:
                    if check.sees_visible_text and isinstance(trip.decision, Redact):
                        return _mapped(trip, trip.decision, view)
                    return trip
                at = check.horizon(seen)
            if check.sees_visible_text:
                low = min(low, at)
                at = view.raw_horizon(at)
            end = min(end, at)
        view.forget_before(low)
        return end

    def _tripped(self, check: DeltaCheck, decision: Decision, delta: str) -> Trip | None:
        """``check``'s handling of a non-Pass decision of ``check`` with nothing owed."""
        index = next(i for i, armed in enumerate(self._objects) if armed is check)
        trip = _trip(self.ids[index], decision)
        if trip is not None and isinstance(trip.decision, Redact):
            self._owe(index, delta)
        return trip

    def horizon(self, accumulated: str) -> int:
        """The smallest horizon of the armed checks (``len(accumulated)`` when none is armed):
        every character before it may be released. See ``DeltaCheck.horizon``."""
        if self._view is not None:
            return self._horizon_seen(self._view, accumulated)
        end = len(accumulated)
        for check in self._objects:
            at = check.horizon(accumulated)
            if at < end:  # noqa: PLR1730 - min() is a builtin call per check per delta
                end = at
        return end

    def _horizon_seen(self, view: VisibleText, accumulated: str) -> int:
        """``horizon`` on a stream that carried an invisible character (``_check_seen``)."""
        end, low = len(accumulated), len(view.text)
        for check in self._objects:
            if check.sees_visible_text:
                visible = check.horizon(view.text)
                low = min(low, visible)
                at = view.raw_horizon(visible)
            else:
                at = check.horizon(accumulated)
            end = min(end, at)
        view.forget_before(low)
        return end

    def finish(self, accumulated: str) -> Trip | None:
        view = self._view
        for guardrail_id, check in zip(self.ids, self._objects, strict=True):
            if view is not None and check.sees_visible_text:
                trip = _trip(guardrail_id, check.finish(view.text))
                if trip is not None and isinstance(trip.decision, Redact):
                    trip = _mapped(trip, trip.decision, view)
            else:
                trip = _trip(guardrail_id, check.finish(accumulated))
            if trip is not None:
                return trip
        return None

    def __bool__(self) -> bool:
        return bool(self._objects)


WholeForms = tuple[tuple[PassesWhole | None, StreamGuardrail, bool], ...]
"""Guardrails with their whole-text forms looked up, and whether they read the text as a reader sees
it (``whole_forms``), for ``passes_forms``."""


def whole_forms(guardrails: Sequence[StreamGuardrail]) -> WholeForms:
    """Each guardrail with its whole-text form (``passes_whole_of``) and whether it reads the visible
    text (``sees_visible_text``), looked up once (per policy)."""
    return tuple((passes_whole_of(g), g, sees_visible_text(g)) for g in guardrails)


def passes_complete(guardrails: Sequence[StreamGuardrail], ctx: StreamContext, pieces: Sequence[str]) -> bool:
    """Whether every check ``guardrails`` arm for ``ctx`` passes a complete text fed in ``pieces`` (one
    ``check`` per piece, then ``finish``), as an ``ArmedSet`` of them would see it when none trips.
    Each guardrail's whole-text form answers first (``guardrails.seams.PassesWhole``); when it has
    none, or it declines, its check is armed alone and run over the pieces. False as soon as one
    might act: the caller then runs the armed set, for which trip wins and what it rewrites."""
    return passes_forms(whole_forms(guardrails), ctx, pieces)


def passes_forms(forms: WholeForms, ctx: StreamContext, pieces: Sequence[str]) -> bool:
    """``passes_complete`` over guardrails whose forms were looked up before (``whole_forms``).
    A text that carries an invisible character (an emoji's variation selector or joiner, often) or a
    look-alike is seen by a guardrail that reads the visible text as ``ArmedSet`` would hand it to
    its check: each piece as a reader reads it (``as_read``)."""
    visible = pieces
    for piece in pieces:
        if not (piece.isascii() or reads_as_is(piece)):
            visible = [as_read(p) for p in pieces]
            break
    for form, guardrail, sees_visible in forms:
        seen = visible if sees_visible else pieces
        if form is not None and form(ctx, seen):
            continue
        check = guardrail.arm(ctx)
        if check is not None and not _passes_pieces(check, seen):
            return False
    return True


def _passes_pieces(check: DeltaCheck, pieces: Sequence[str]) -> bool:
    accumulated = ""
    for piece in pieces:
        accumulated += piece
        if check.check(accumulated, piece) is not PASS:
            return False
    return check.finish(accumulated) is PASS


def _mapped(trip: Trip, redact: Redact, view: VisibleText) -> Trip:
    """A redaction of the visible text as one of the raw text: the span from the match's first
    visible character to its last, every invisible character between them inside it."""
    start, end = view.raw_span(redact.start, redact.end)
    return Trip(trip.guardrail_id, Redact(redact.reason_code, start, end, redact.mask))


def _trip(guardrail_id: str, decision: Decision) -> Trip | None:
    if isinstance(decision, (Block, Redact)):
        return Trip(guardrail_id, decision)
    return None
