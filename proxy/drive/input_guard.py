"""Input guardrails on a guarded request, before it goes upstream (``[[input_guardrails]]``).

``InputGuard.screen`` reads the texts the request carries into the model (``proxy.wire.input_parts``),
runs each armed check over the parts it names, in policy order (adjacent text parts of a message, a
group, read together as the model reads them: ``guardrails.input.joined``), and returns what to send:

- ``redact``: the body with each flagged string rewritten in place (values masked, hidden characters
  dropped), every other byte as the client sent it (``proxy.wire.json_spans``); a later check reads
  the text as an earlier one left it;
- ``reject``: nothing is sent; the client gets its API's 400 naming the guardrail and reason code,
  never the value;
- ``log``: the request goes as it is; the trip is audited and logged.

Any flag by a check that ``taints`` marks the conversation tainted (``RequestView.tainted``), which the
tool rules read (``guardrails.tools.taint``). Span checks are pure and cached by text digest, so a
growing conversation pays for its new turns only; message checks (judge, webhook, moderation) run
concurrently on the texts they have not judged before, each bounded by its ``timeout_s``, and fail
open (as the message checks do on answers). With no input guardrail in the policy, none of this runs
and the request is sent before it is read, as before (``Exchange._send_early``).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

import structlog

from guardrails.datamodel import AssistantMessage, RequestView
from guardrails.decision import Block
from guardrails.input.build import InputCheck, SpanCheck, TextCheck
from guardrails.input.finders import CACHE_ENTRIES, Hits, digest, redacted
from guardrails.input.joined import JOINS, find_joined, redact_all
from guardrails.message.base import ContentRefused, Undecided
from guardrails.seams import MessageContext, TextCompleter
from proxy.downstream.responder import Responder
from proxy.drive.offload import OFF_LOOP_CHARS
from proxy.drive.services import Services
from proxy.wire.base import JsonBody
from proxy.wire.input_parts import InputText, input_texts
from proxy.wire.json_spans import Path, SpliceError, splice

log = structlog.get_logger("guardproxy")

STAGE = "input"
_PART_KEYS = {"user": b"u", "tool_result": b"t", "system": b"s"}
_GROUP = b"g"
Verdict = tuple[tuple[Hits, ...], ...]
"""Per span check (policy order), the hits per text of a text or a group (a group's texts in order)."""
_UNSEEN: Verdict = ()


@dataclass(frozen=True, slots=True)
class Rejected:
    guardrail_id: str
    reason_code: str
    message: str


@dataclass(slots=True)
class Screened:
    body: bytes
    """What goes upstream: the client's own bytes (the same object) unless something was redacted."""
    rejected: Rejected | None = None
    tainted: tuple[str, ...] = ()
    """``input:<guardrail id>`` for each tainting check that flagged something."""
    unchecked: list[str] = field(default_factory=list)
    """Media the model is shown that no check read (``image@tool_result``)."""

    def apply(self, view: RequestView, responder: Responder) -> None:
        """The taint goes on the request's view (the tool rules read it); unchecked media are named
        to the client in ``x-guardproxy-input-unchecked``."""
        view.tainted = self.tainted
        if self.unchecked:
            kinds = ",".join(sorted(set(self.unchecked))).encode("latin-1", "replace")
            responder.decision_headers = [*responder.decision_headers, (b"x-guardproxy-input-unchecked", kinds)]


@dataclass(slots=True)
class _Trip:
    check: InputCheck
    reason_code: str
    parts: set[str] = field(default_factory=set)
    tools: set[str] = field(default_factory=set)
    count: int = 0


Completers = tuple[TextCompleter | None, Callable[[str, str | None, str | None], TextCompleter | None] | None]


def _group_key(keys: list[bytes]) -> bytes:
    """A group's key: its texts' keys (part and digest) in order, digested (each key has one length,
    so the boundaries between the texts are part of what is digested)."""
    return _GROUP + hashlib.blake2b(b"".join(keys), digest_size=16).digest()


def _units(texts: list[InputText]) -> list[list[int]]:
    """The texts' indexes, a group's together (its texts are adjacent in body order)."""
    units: list[list[int]] = []
    for i, t in enumerate(texts):
        if units and texts[units[-1][0]].group == t.group:
            units[-1].append(i)
        else:
            units.append([i])
    return units


class InputGuard:
    """One policy's input checks, built when the policy loads (``input_guard_of``)."""

    units = staticmethod(_units)
    """How the texts are read: each group together (``bench.input_cost`` reads them one by one to
    measure what the joined reading costs)."""

    def __init__(self, checks: list[InputCheck]) -> None:
        self.checks = checks
        self.parts = frozenset(p for c in checks for p in c.parts)
        self._span_checks = [c for c in checks if isinstance(c, SpanCheck)]
        self._text_checks = [c for c in checks if isinstance(c, TextCheck)]
        self._seen: OrderedDict[bytes, Verdict | None] = OrderedDict()
        """Span checks' hits on a text by its part and digest, or on a group by its texts' keys, one
        entry per text or group for every span check (None: none of them found anything, the common
        case)."""
        self._judged: dict[str, OrderedDict[bytes, bool]] = {c.id: OrderedDict() for c in self._text_checks}
        """Message checks' verdicts by text digest: True when flagged (only definite verdicts)."""

    async def screen(self, s: Services, wire: str, request: JsonBody, request_id: str, model: str,
                     completers: Callable[[], Completers]) -> Screened:
        """Raises ``BadRequest`` for a body that is not a JSON object (the caller answers 400)."""
        found = input_texts(wire, request.data, self.parts)
        texts = found.texts
        units = self.units(texts)
        current: dict[Path, str] = {}
        trips: dict[str, _Trip] = {}
        if self._span_checks:
            await self._spans(texts, units, current, trips)
        for check in self._text_checks:
            if check.action == "log" or not any(t.check.action == "reject" for t in trips.values()):
                trip = await self._judge(s, check, texts, units, current, model, completers)
                if trip is not None:
                    trips[check.id] = trip
        ordered = [trips[c.id] for c in self.checks if c.id in trips]
        out = Screened(request.raw, unchecked=found.skipped)
        for trip in ordered:
            self._record(s, trip, request_id, wire)
        out.tainted = tuple(f"input:{t.check.id}" for t in ordered if t.check.taints)
        rejected = next((t for t in ordered if t.check.action == "reject"), None)
        if rejected is not None:
            out.rejected = Rejected(rejected.check.id, rejected.reason_code, _reject_message(rejected))
            return out
        if current:
            try:
                out.body = splice(request.raw, current)
            except SpliceError as exc:
                log.warning("input_redaction_failed", error=str(exc))
                out.rejected = Rejected("input", "unredactable",
                                        f"guardproxy: the request could not be redacted ({exc}); it was not sent")
        return out

    async def _spans(self, texts: list[InputText], units: list[list[int]], current: dict[Path, str],
                     trips: dict[str, _Trip]) -> None:
        """Every span check over every text it reads, in policy order per text: a later check reads
        the text as an earlier one's redaction left it. Adjacent parts the model reads as one text
        (a group, ``InputText.group``) are read together (``guardrails.input.joined``). A text or a
        group seen before costs one digest and one lookup (``_seen``); those not seen before are
        checked together, in a worker thread when they are long (``OFF_LOOP_CHARS``: a conversation
        the proxy has not seen, after a restart)."""
        seen = self._seen
        keys = [_PART_KEYS[t.part] + digest(t.text) for t in texts]
        unit_keys = [keys[u[0]] if len(u) == 1 else _group_key([keys[i] for i in u]) for u in units]
        known: dict[bytes, Verdict | None] = {}
        misses: list[tuple[list[InputText], bytes]] = []
        for unit, key in zip(units, unit_keys, strict=True):
            if key not in known:
                got = seen.get(key, _UNSEEN)
                if got is _UNSEEN:
                    misses.append(([texts[i] for i in unit], key))
                known[key] = got
        if misses:
            size = sum(len(t.text) * (1 if len(u) == 1 else len(JOINS) + 1) for u, _ in misses for t in u)
            new = self._find_all([u for u, _ in misses]) if size <= OFF_LOOP_CHARS else \
                await asyncio.to_thread(self._find_all, [u for u, _ in misses])
            for (_, key), every in zip(misses, new, strict=True):
                known[key] = seen[key] = every
                if len(seen) > CACHE_ENTRIES:
                    seen.popitem(last=False)
        for unit, key in zip(units, unit_keys, strict=True):
            found = known[key]
            if found is None:
                continue
            if len(unit) == 1:
                self._apply_one(texts[unit[0]], found, current, trips)
            else:
                self._apply_group([texts[i] for i in unit], found, current, trips)

    def _apply_one(self, t: InputText, found: Verdict, current: dict[Path, str], trips: dict[str, _Trip]) -> None:
        """One text's verdict (each check's hits on the text as the client sent it)."""
        text = t.text
        for check, (hits,) in zip(self._span_checks, found, strict=True):
            if hits and text is not t.text:
                hits = check.finder.find(text)  # after an earlier check's redaction
            if not hits:
                continue
            _trip(trips, check, t)
            if check.action == "redact":
                text = redacted(text, hits)
        if text is not t.text:
            current[t.path] = text

    def _apply_group(self, group: list[InputText], found: Verdict, current: dict[Path, str],
                     trips: dict[str, _Trip]) -> None:
        """A group's verdict (each check's hits per part, on the parts as the checks before it left them)."""
        now = [t.text for t in group]
        for check, per_part in zip(self._span_checks, found, strict=True):
            for t, hits in zip(group, per_part, strict=True):
                if hits:
                    _trip(trips, check, t)
            if check.action == "redact" and any(per_part):
                now = redact_all(now, per_part)
        for t, text in zip(group, now, strict=True):
            if text is not t.text:
                current[t.path] = text

    def _find_all(self, units: list[list[InputText]]) -> list[Verdict | None]:
        """Each span check's hits on each text or group (None: no check found anything). Pure: safe in
        a thread. A text's hits are each on the text as sent (a redaction before a later check is
        rare, and that check reads again then); a group's follow the redactions through the checks,
        as a group is read as a whole."""
        out: list[Verdict | None] = []
        for unit in units:
            part = unit[0].part
            every: Verdict
            if len(unit) == 1:
                every = tuple((c.finder.inner.find(unit[0].text) if part in c.parts else (),)
                              for c in self._span_checks)
            else:
                now, got = [t.text for t in unit], []
                for c in self._span_checks:
                    per_part = find_joined(c.finder.inner, now) if part in c.parts else ((),) * len(now)
                    got.append(per_part)
                    if c.action == "redact" and any(per_part):
                        now = redact_all(now, per_part)
                every = tuple(got)
            out.append(every if any(h for per_part in every for h in per_part) else None)
        return out

    async def _judge(self, s: Services, check: TextCheck, texts: list[InputText], units: list[list[int]],
                     current: dict[Path, str], model: str, completers: Callable[[], Completers]) -> _Trip | None:
        """One message check over each text or group it reads (a group glued: the parts as the model
        reads them), as the span checks left them."""
        seen = self._judged[check.id]
        todo: list[tuple[list[InputText], str, bytes]] = []
        flagged: list[InputText] = []
        for unit in units:
            if texts[unit[0]].part not in check.parts:
                continue
            group = [texts[i] for i in unit]
            text = "".join(current.get(t.path, t.text) for t in group)
            key = digest(text)
            verdict = seen.get(key)
            if verdict is None:
                todo.append((group, text, key))
            elif verdict:
                flagged += group
        if todo:
            completer, completer_for = completers()
            verdicts = await asyncio.gather(*(self._one(s, check, text, model, completer, completer_for)
                                              for _, text, _ in todo))
            for (group, _, key), verdict in zip(todo, verdicts, strict=True):
                if verdict is None:
                    continue  # undecided: fails open, and is asked again next time
                seen[key] = verdict
                if len(seen) > CACHE_ENTRIES:
                    seen.popitem(last=False)
                if verdict:
                    flagged += group
        if not flagged:
            return None
        trip = _Trip(check, _reason(check))
        for t in flagged:
            trip.parts.add(t.part)
            trip.count += 1
            if t.tool:
                trip.tools.add(t.tool)
        return trip

    @staticmethod
    async def _one(s: Services, check: TextCheck, text: str, model: str, completer: TextCompleter | None,
                   completer_for: Callable[[str, str | None, str | None], TextCompleter | None] | None
                   ) -> bool | None:
        """One text through one message check, in a check slot (``Services.gate``, as the answers'
        checks) and under its ``timeout_s``: True flagged, False passed, None undecided (fails open).
        Content that makes the check fail (``ContentRefused``) is flagged unless the guardrail says
        ``on_content_error = "pass"``."""
        ctx = MessageContext(AssistantMessage(text=text), model=model, completer=completer,
                             completer_for=completer_for)
        outcome, verdict = "fail_open", None
        try:
            async with s.gate.slot() if s.gate is not None else contextlib.nullcontext():
                async with asyncio.timeout(check.timeout_s):
                    decision = await check.guardrail.check_message(ctx)
            if isinstance(decision, Undecided):
                log.info("fail_open", guardrail_id=check.id, stage=STAGE, detail=decision.reason)
            else:
                verdict = isinstance(decision, Block)
                outcome = "block" if verdict else "pass"
        except ContentRefused as exc:
            if check.on_content_error == "block":
                outcome, verdict = "fail_closed", True
            log.info("content_refused", guardrail_id=check.id, stage=STAGE, detail=exc.reason)
        except Exception as exc:  # noqa: BLE001 - a check that fails, fails open (logged by type only)
            log.info("fail_open", guardrail_id=check.id, stage=STAGE, detail=type(exc).__name__)
        s.metrics.message_checks.labels(guardrail_id=check.id, outcome=outcome).inc()
        return verdict

    @staticmethod
    def _record(s: Services, trip: _Trip, request_id: str, wire: str) -> None:
        parts = ",".join(sorted(trip.parts))
        source = ",".join(sorted(trip.tools)) or None
        s.audit.record("guardrail.tripped", request_id=request_id, guardrail_id=trip.check.id,
                       reason_code=trip.reason_code, decision=trip.check.action, stage=STAGE, part=parts,
                       source=source, wire=wire, detail=f"texts={trip.count}")
        log.info("input_guardrail", guardrail_id=trip.check.id, reason_code=trip.reason_code,
                 action=trip.check.action, part=parts, texts=trip.count)


def _trip(trips: dict[str, _Trip], check: SpanCheck, t: InputText) -> None:
    trip = trips.get(check.id)
    if trip is None:
        trip = trips[check.id] = _Trip(check, check.finder.reason_code)
    trip.parts.add(t.part)
    trip.count += 1
    if t.tool:
        trip.tools.add(t.tool)


_REASONS = {"llm_judge": "judge_violation", "webhook": "webhook_block", "moderation": "moderation_flagged"}


def _reason(check: TextCheck) -> str:
    return _REASONS[check.kind]


def _reject_message(trip: _Trip) -> str:
    parts = ", ".join(sorted(trip.parts))
    return (f"guardproxy: the request was rejected by input guardrail '{trip.check.id}' ({trip.reason_code}) "
            f"in its {parts} content; it was not sent to the model")


def input_guard_of(s: Services) -> InputGuard | None:
    """The policy's input guard (built with the policy: ``Guard.input_checks``); None when the policy
    has no input guardrail."""
    checks = s.guard.input_checks
    if not checks:
        return None
    return s.guard.once(InputGuard, InputGuard, checks)

