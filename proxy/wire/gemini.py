"""Gemini API: ``:generateContent`` and ``:streamGenerateContent`` (SSE, or a streamed JSON array).

Every stream chunk is a whole ``GenerateContentResponse``. A function call arrives complete in one
part (``args`` is an object, never fragmented), so it is decoded as start + args + end at once.

Traps (wire-formats.md 1d, DESIGN.md "keep-alive comments break Gemini clients"):
- SSE frames must be exactly ``data: <json>`` + a blank line: Gemini CLI's bundled SDK crashes on an
  SSE comment and cannot parse ``event:`` lines, and google-genai raises on them. So nothing here
  ever renders a comment or an ``event:`` line; the replaced signal rides as a ``guardproxy`` field
  on a normal chunk that carries non-empty ``parts`` (google-genai drops unknown fields; the JS SDK's
  chat history discards the whole turn if any chunk has empty ``parts``).
- Never end a rendered stream without a ``finishReason``: Gemini CLI retries and re-prints the text.
- A mid-stream error is a *bare* ``{"error": {...}}`` write (no ``data: ``): the only form both the
  Python and the JS SDK raise on. In JSON-array mode it is one more array element, then ``]``, so
  the body stays a valid JSON array whose last element is the error (the shape the API itself uses
  for errors on that endpoint, ``[{"error": ...}]``).
- The model comes from the URL, not the body: ``parse_request`` takes an optional ``model``.
- Gemini 3 rejects a replayed ``functionCall`` part without its ``thoughtSignature``. A decoded
  message's ``provider_parts`` are the ``functionCall`` parts that carried one, exactly as received
  (``{"functionCall": {"name", "args", "id"?}, "thoughtSignature": "..."}``); ``with_tool_feedback``
  matches them to the calls (by id, else name + args) and puts back the real signature, the
  documented placeholder only when the first call has none.
"""

from __future__ import annotations

import copy
import re
from collections import defaultdict, deque
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import msgspec

from guardrails.datamodel import (
    ANSWER,
    AssistantMessage,
    Event,
    Finish,
    Frame,
    HistoryToolCall,
    Lane,
    LaneEnd,
    LazyHistory,
    RequestView,
    StreamError,
    TextDelta,
    ToolCall,
    ToolCallArgsDelta,
    ToolCallEnd,
    ToolCallStart,
    Unvetted,
    WholeText,
)
from proxy.wire.base import (
    BadRequest,
    ErrorKind,
    FinishKind,
    JsonBody,
    Replaced,
    SplitStream,
    StreamCodec,
    TurnsWireFormat,
    _number,
    body_bytes,
    dumps,
    known_only,
    label_events,
    loads,
    loads_output,
    output_object,
    quick_decoder,
)
from proxy.wire.conversation_delta import Turns
from proxy.wire.held_state import held_caches
from proxy.wire.logprobs import TokenLanes
from proxy.wire.shapes import error_event, lane_events, obj, unread, whole_events
from proxy.wire.sse import SSESplitter, parse_fields

_ERRORS: dict[ErrorKind, tuple[int, str]] = {
    "invalid_request": (400, "INVALID_ARGUMENT"),
    "authentication": (401, "UNAUTHENTICATED"),
    "permission": (403, "PERMISSION_DENIED"),
    "not_found": (404, "NOT_FOUND"),
    "too_large": (400, "INVALID_ARGUMENT"),
    "rate_limit": (429, "RESOURCE_EXHAUSTED"),
    "upstream": (500, "INTERNAL"),
    "timeout": (504, "DEADLINE_EXCEEDED"),
    "guardrail": (400, "INVALID_ARGUMENT"),
    "overloaded": (503, "UNAVAILABLE"),
}
_STATUS_BY_CODE = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED",
                   404: "NOT_FOUND", 409: "ABORTED", 429: "RESOURCE_EXHAUSTED", 499: "CANCELLED",
                   500: "INTERNAL", 501: "UNIMPLEMENTED", 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}
"""Google pairs ``code`` and ``status`` strictly (google.rpc.Code); clients key retries on them."""

DUMMY_SIGNATURE = "skip_thought_signature_validator"
"""Gemini 3 rejects a replayed function call without its ``thoughtSignature``; this is the value
Google documents (and Gemini CLI sends) for calls whose real signature is unknown."""


def error_object(code: int, status: str, message: str, extra: dict[str, str] | None = None) -> dict[str, Any]:
    err: dict[str, Any] = {"code": code, "message": message, "status": status}
    if extra:
        err["details"] = [{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                           "reason": extra.get("reason_code", ""), "domain": "guardproxy",
                           "metadata": dict(extra)}]
    return {"error": err}


def _parts(content: Any) -> list[dict[str, Any]]:
    parts = content.get("parts") if isinstance(content, dict) else None
    return [p for p in parts if isinstance(p, dict)] if isinstance(parts, list) else []


def _parts_of_objects(content: Any) -> bool:
    """Whether a candidate's ``content.parts`` is absent or a list of objects: ``_parts`` skips any
    other item (a string among the parts), which a client printing the JSON would still show."""
    parts = content.get("parts") if isinstance(content, dict) else None
    return parts is None or (type(parts) is list and all(type(p) is dict for p in parts))


def _text(content: Any) -> str:
    """Visible text of a Content: its text parts that are not thoughts."""
    return "".join(p["text"] for p in _parts(content)
                   if isinstance(p.get("text"), str) and not p.get("thought"))


def _system_text(system: Any) -> str:
    """The text of a system instruction (a string, or a Content's text parts, thoughts too): the input
    screen reads a part flagged ``thought`` there as system text (``input_parts._gemini``: nothing
    says the upstream leaves it out of the prompt), so the canary is armed with it as well."""
    if isinstance(system, str):
        return system
    return "".join(p["text"] for p in _parts(system) if isinstance(p.get("text"), str))


def _call(part: dict[str, Any]) -> ToolCall | None:
    fc = part.get("functionCall")
    if not isinstance(fc, dict):
        return None
    return ToolCall(str(fc.get("id") or ""), str(fc.get("name", "")), dumps(fc.get("args") or {}))


def _call_part(call: ToolCall, signature: str | None = None) -> dict[str, Any]:
    try:
        args = loads(call.arguments) if call.arguments else {}
    except ValueError:
        args = {}  # arguments the model got wrong: Gemini only carries an object
    fc: dict[str, Any] = {"name": call.name, "args": args if isinstance(args, dict) else {}}
    if call.call_id:
        fc["id"] = call.call_id
    part: dict[str, Any] = {"functionCall": fc}
    if signature:
        part["thoughtSignature"] = signature
    return part


def _history(contents: list[dict[str, Any]]) -> list[HistoryToolCall]:
    """Calls from ``model`` turns, each settled by the first later ``functionResponse`` with its id,
    else (ids are optional on the Gemini API) by name in order: a response with an id only falls
    back to calls without one. O(parts): the name queues skip settled calls lazily."""
    calls: list[ToolCall] = []
    outcome: list[bool | None] = []
    by_id: dict[str, int] = {}
    by_name: dict[tuple[bool, str], deque[int]] = defaultdict(deque)
    """(id-less only?, name) -> pending calls, oldest first."""
    for content in contents:
        for part in _parts(content):
            call = _call(part)
            if call is not None and content.get("role") == "model":
                n = len(calls)
                calls.append(call)
                outcome.append(None)
                if call.call_id:
                    by_id.setdefault(call.call_id, n)
                by_name[(False, call.name)].append(n)
                if not call.call_id:
                    by_name[(True, call.name)].append(n)
            fr = part.get("functionResponse")
            if not isinstance(fr, dict):
                continue
            resp, rid = fr.get("response"), str(fr.get("id") or "")
            found = by_id.pop(rid, None) if rid else None
            queue = by_name[(bool(rid), str(fr.get("name", "")))]
            while found is None and queue:
                n = queue.popleft()
                found = n if outcome[n] is None else None
            if found is not None and outcome[found] is None:
                outcome[found] = not (isinstance(resp, dict) and "error" in resp)
    return [HistoryToolCall(c.call_id, c.name, c.arguments, ok) for c, ok in zip(calls, outcome, strict=True)]


def _tail_candidate(message: AssistantMessage, finish: FinishKind,
                    signatures: dict[str, str]) -> dict[str, Any]:
    parts: list[dict[str, Any]] = [{"text": message.text}] if message.text else []
    parts += [_call_part(c, _signature_for(c, signatures)) for c in message.tool_calls]
    candidate: dict[str, Any] = {}
    if parts or finish == "normal":
        # Never an empty ``parts`` list: the JS SDK's chat would drop the whole model turn.
        candidate["content"] = {"parts": parts or [{"text": ""}], "role": "model"}
    candidate["finishReason"] = "SAFETY" if finish == "filtered" else "STOP"
    candidate["index"] = 0
    return candidate


def _signature_for(call: ToolCall, signatures: dict[str, str]) -> str | None:
    return signatures.get(call.call_id) or signatures.get(f"{call.name}\0{call.arguments}")


def _signed_calls(parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ``functionCall`` parts that carry a ``thoughtSignature`` (``provider_parts``), copied."""
    return [copy.deepcopy(p) for p in parts
            if isinstance(p.get("functionCall"), dict) and isinstance(p.get("thoughtSignature"), str)]


def _remember_signatures(parts: list[dict[str, Any]], into: dict[str, str]) -> None:
    for part in parts:
        call, sig = _call(part), part.get("thoughtSignature")
        if call is not None and isinstance(sig, str):
            into[call.call_id or f"{call.name}\0{call.arguments}"] = sig


_PART_QUIET = frozenset({"thought", "thoughtSignature", "thought_signature", "videoMetadata", "partMetadata"})
"""Part fields that carry nothing a client renders as text."""
_CANDIDATE_QUIET = frozenset({"content", "finishReason", "index", "safetyRatings", "tokenCount", "avgLogprobs",
                              "logprobsResult"})
"""Candidate fields without text of their own (``logprobsResult`` is checked against the text it
repeats, and dropped when the text is rewritten). Every other candidate field is checked as text, or
fails closed."""
_CANDIDATE_TEXT = ("citationMetadata", "groundingMetadata", "urlContextMetadata", "finishMessage",
                   "groundingAttributions")
"""Candidate fields that a client may render (citations, search suggestions' HTML, a finish message):
every string in them is checked whole."""
_THOUGHT = "thought"
_CODE_LANES = {"executableCode": ("code", "code"), "codeExecutionResult": ("output", "code_output")}
"""Code execution parts: the field that streams, and its lane."""
_LOGPROB = obj("token", "tokenId", "logProbability")
_LOGPROBS_RESULT = obj("logProbabilitySum", chosenCandidates=_LOGPROB, topCandidates=obj(candidates=_LOGPROB))
_FUNCTION_CALL = obj("id", "name", "args")
_CONTENT = obj("role", "parts")
"""The fields of the objects inside a candidate (``proxy.wire.shapes``); candidate and part fields
outside their lists fail closed (``candidate_events``, ``part_events``). Each is walked only where
the decoder reads it, so a plain text chunk costs one set comparison per content."""
_SAFE_CANDIDATE = ("index", "safetyRatings", "tokenCount")
"""What a replaced candidate keeps of the original."""


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value] if value else []
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _candidate_index(cand: dict[str, Any], position: int) -> int:
    index = cand.get("index", position)
    if not isinstance(index, int) or isinstance(index, bool) or index < 0:
        raise ValueError("candidate index")
    return index

_ERROR_TOP = frozenset({"error"})
_ERROR_INNER = frozenset({"code", "message", "status", "details"})
"""A Google error object's fields (``{"error": {"code": 503, "message", "status": "UNAVAILABLE",
"details": [...]}}``): a frame with only these is relayed as the upstream sent it."""


class _Decoder:
    """Candidates to events, with what must persist across chunks (call keys, signatures, which
    candidates have thoughts open)."""

    def __init__(self) -> None:
        self.calls = 0
        self.signatures: dict[str, str] = {}
        """thoughtSignature per call (id, else name + args), so re-rendered calls keep theirs."""
        self.signed: list[dict[str, Any]] = []
        """The signed functionCall parts, in arrival order (``provider_parts``)."""
        self.thinking: set[int] = set()
        self.choices: set[int] = {0}
        """Candidates the upstream began: a tail ends each of them."""
        self.token_lanes = TokenLanes()
        """The runs a client joins of each candidate's ``logprobsResult`` over the stream."""
        self.first: int | None = None
        """The candidate whose text came first in its chunk (``chunk_events``)."""

    def chunk_events(self, chunk: dict[str, Any]) -> list[Event]:
        cands = chunk.get("candidates")
        if cands is None:
            return []
        if not isinstance(cands, list):
            return [Unvetted("candidates of an unknown shape")]
        events: list[Event] = []
        for position, cand in enumerate(cands):
            if not isinstance(cand, dict):
                events.append(Unvetted("a candidate of an unknown shape"))
                continue
            c = _candidate_index(cand, position)
            found = self.candidate_events(cand, c)
            if position == 0 and c != self.first and TextDelta in map(type, found):
                # ``chunk.text`` (both SDKs) reads each chunk's first candidate, by position: once one
                # candidate's text came first, another's there would be joined to it by the client,
                # while the proxy checks each candidate's text on its own.
                if self.first is not None:
                    found.append(Unvetted("the first candidate of a chunk changed"))
                self.first = c
            events += found
        return events

    def candidate_events(self, cand: dict[str, Any], c: int) -> list[Event]:
        self.choices.add(c)
        events: list[Event] = []
        for key, value in cand.items():
            if key in _CANDIDATE_TEXT:
                events += [WholeText(t, c, key) for t in _strings(value)]
            elif key not in _CANDIDATE_QUIET and value not in (None, "", [], {}):
                events.append(Unvetted(f"candidate field {key!r}"))
        content = cand.get("content")
        if content is not None and not isinstance(content, dict):
            events.append(Unvetted("candidate content of an unknown shape"))
        elif content is not None and not _CONTENT.keys.issuperset(content):
            events += lane_events(unread(content, _CONTENT, f"candidates[{c}].content"), c)
        if content is not None and not _parts_of_objects(content):
            events.append(Unvetted("candidate parts of an unknown shape"))
        parts = _parts(content)
        _remember_signatures(parts, self.signatures)
        self.signed += _signed_calls(parts)
        for part in parts:
            events += self.part_events(part, c)
        if (logprobs := cand.get("logprobsResult")) is not None:
            said = "".join(e.text for e in events if isinstance(e, TextDelta) and e.channel == ANSWER)
            events += _logprob_events(logprobs, said, self.token_lanes, c)
            events += lane_events(unread(logprobs, _LOGPROBS_RESULT, f"candidates[{c}].logprobsResult"), c)
        elif self.token_lanes.dormant and events:  # text without tokens: they no longer spell it
            events += self.token_lanes.text_only(c, "".join(
                e.text for e in events if isinstance(e, TextDelta) and e.channel == ANSWER))
        if cand.get("finishReason"):
            events.append(Finish(str(cand["finishReason"]), c))
        return events

    def part_events(self, part: dict[str, Any], c: int) -> list[Event]:
        events: list[Event] = []
        for key, value in part.items():
            if key in _PART_QUIET or key == "text" or value in (None, "", [], {}):
                continue
            if key == "functionCall" and isinstance(value, dict):
                if value.get("partialArgs") or value.get("willContinue"):
                    # Arguments streamed in pieces: the tool rules need the whole call, and a
                    # client assembles it from pieces the proxy does not join.
                    events.append(Unvetted("a function call streamed in pieces (partialArgs)"))
                    continue
                events += self._end_thoughts(c)
                events += lane_events(unread(value, _FUNCTION_CALL, f"candidates[{c}].functionCall"), c)
                call = _call(part)
                assert call is not None
                k = str(self.calls)
                self.calls += 1
                events += [ToolCallStart(k, call.call_id, call.name, c),
                           ToolCallArgsDelta(k, call.arguments, c), ToolCallEnd(k, c)]
            elif key in _CODE_LANES:
                # The code the model ran and what it printed: shown as they arrive, so each is a lane
                # of its own across chunks (a key cut between two chunks' code reads joined).
                field, lane = _CODE_LANES[key]
                said = value.get(field) if isinstance(value, dict) else None
                if isinstance(said, str):
                    events.append(TextDelta(said, c, lane))
                    value = {k: v for k, v in value.items() if k != field}
                events += [WholeText(t, c, key) for t in _strings(value)]
            else:
                events.append(Unvetted(f"part field {key!r}"))
        text = part.get("text")
        if isinstance(text, str) and text:
            if part.get("thought"):
                self.thinking.add(c)
                events.insert(0, TextDelta(text, c, _THOUGHT))
            else:
                events[:0] = [*self._end_thoughts(c), TextDelta(text, c)]
        elif text is not None and not isinstance(text, str):
            events.append(Unvetted("part text of an unknown shape"))
        return events

    def _end_thoughts(self, c: int) -> list[Event]:
        """Thoughts come before the answer: the answer (or a call) starting ends them."""
        if c not in self.thinking:
            return []
        self.thinking.discard(c)
        return [LaneEnd(c, _THOUGHT)]


def _logprob_events(logprobs: Any, said: str, lanes: TokenLanes, c: int) -> list[Event]:
    """``logprobsResult`` spells the chosen tokens and offers alternatives: the chosen tokens and the
    alternatives of each rank are lanes across the stream (``proxy.wire.logprobs.TokenLanes``: a
    prompt spelled one token a chunk, in the tokens or through second choices, reads as it streams),
    and all the alternatives, joined, are checked whole per chunk."""
    if not isinstance(logprobs, dict):
        return [Unvetted("logprobsResult of an unknown shape")]
    chosen = [str(t.get("token") or "") for t in logprobs.get("chosenCandidates") or [] if isinstance(t, dict)]
    ranks: list[list[str]] = []
    for top in logprobs.get("topCandidates") or []:
        if not isinstance(top, dict):
            continue
        for rank, a in enumerate(a for a in top.get("candidates") or [] if isinstance(a, dict)):
            while len(ranks) <= rank:
                ranks.append([])
            ranks[rank].append(str(a.get("token") or ""))
    out = lanes.events(c, "".join(chosen), said, {f"top_logprobs/{rank}": "".join(tokens)
                                                  for rank, tokens in enumerate(ranks)})
    alternatives = [token for tokens in ranks for token in tokens]
    if any(alternatives):
        out.append(WholeText(" ".join(alternatives), c, "top_logprobs"))
    return out


def _retext_candidate(cand: dict[str, Any], text: str) -> None:
    """The candidate's visible text parts collapse into one carrying ``text``; its logprobs go."""
    content = cand.get("content") or {}
    parts, done = [], False
    for p in _parts(content):
        if isinstance(p.get("text"), str) and not p.get("thought"):
            if done:
                continue
            p, done = {**p, "text": text}, True
        parts.append(p)
    if not done:
        parts.insert(0, {"text": text})
    cand["content"] = {**content, "parts": parts}
    cand.pop("logprobsResult", None)
    cand.pop("avgLogprobs", None)


def _cands_by_index(data: dict[str, Any]) -> dict[int, dict[str, Any]]:
    return {_candidate_index(c, n): c for n, c in enumerate(data.get("candidates") or []) if isinstance(c, dict)}


class _QuickPart(msgspec.Struct, gc=False):
    text: Any = None
    thought: Any = None


class _QuickContent(msgspec.Struct, gc=False):
    role: Any = msgspec.UNSET
    parts: list[_QuickPart] | msgspec.UnsetType = msgspec.UNSET
    """Parts as their text only: calls, function responses and inline data are skipped, not built
    (a part that is not an object makes the whole quick decode decline)."""


class _QuickRequest(msgspec.Struct, gc=False):
    """What ``parse_request`` reads of a request (``quick_view``); tools and config are skipped."""

    contents: list[_QuickContent] | None = None
    systemInstruction: Any = msgspec.UNSET
    system_instruction: Any = msgspec.UNSET
    cachedContent: Any = msgspec.UNSET
    cached_content: Any = msgspec.UNSET


_QUICK = quick_decoder(_QuickRequest)
_ROLES = ("user", "model", "function")


def _whole_history(body: JsonBody) -> list[HistoryToolCall]:
    return _history(body.data["contents"])


@dataclass(frozen=True, slots=True)
class _Read:
    """What the quick view reads of a body (its model and stream come from the URL)."""

    system_prompt: str
    last_user_text: str
    held: tuple[str, ...] = ()


def _unread_system(system: Any) -> bool:
    """Whether a system instruction is not one the readers here take: not a Content, or a Content whose
    ``parts`` is one object, which Gemini's parser reads as a list of that part (Google's REST examples
    send ``"parts": {"text": ...}``) and ``_text`` would read as no text: the canary unarmed."""
    return system is not None and (not isinstance(system, dict | str)
                                   or isinstance(system, dict) and isinstance(system.get("parts"), dict))


def cached_system(body: dict[str, Any]) -> str | None:
    """The system instruction a ``POST .../cachedContents`` body asks the upstream to keep ("" for
    none); None when it is not a Content the proxy reads (``_unread_system``: then unseen)."""
    system = body.get("systemInstruction", body.get("system_instruction"))
    if _unread_system(system):
        return None
    return _system_text(system)


def _fold(read: _Read, contents: Sequence[_QuickContent]) -> _Read | None:
    """``read`` with more contents: what ``parse_request`` does, on the same values (None for a role
    it would refuse: the whole path then decides)."""
    last_user_text = read.last_user_text
    for c in contents:
        role = "user" if c.role is msgspec.UNSET else c.role
        if role not in _ROLES:
            return None
        if role == "user" and c.parts is not msgspec.UNSET and (
                t := "".join(p.text for p in c.parts if isinstance(p.text, str) and not p.thought)):
            last_user_text = t
    return _Read(read.system_prompt, last_user_text, read.held)


def _read_whole(raw: bytes) -> tuple[_Read, list[_QuickContent]] | None:
    quick = _QUICK(raw)
    if quick is None or quick.contents is None:
        return None
    system = quick.systemInstruction
    if system is msgspec.UNSET:
        system = None if quick.system_instruction is msgspec.UNSET else quick.system_instruction
    if _unread_system(system):
        return None
    held = held_caches(quick.cachedContent, quick.cached_content)
    if held is None:
        return None
    read = _fold(_Read(_system_text(system), "", held), quick.contents)
    return None if read is None else (read, quick.contents)


_TURNS = Turns(_read_whole, _fold, _QuickContent, b'{"role":"model"}')
"""Bodies of recent requests: an agent's next turn is read from the contents it adds (``turns``)."""


class Gemini(TurnsWireFormat[_Read]):
    name = "gemini"
    turns = _TURNS

    def view_of(self, read: _Read, body: JsonBody, *, stream: bool) -> RequestView:
        # The body names no model: the caller takes it from the URL (as for ``parse_request``).
        return RequestView(model="", stream=stream, system_prompt=read.system_prompt,
                           last_user_text=read.last_user_text, history=LazyHistory(partial(_whole_history, body)),
                           held=read.held)

    def parse_request(self, body: dict[str, Any], *, stream: bool, model: str = "") -> RequestView:
        """``model`` is taken from the URL by the caller (the body has none)."""
        contents = body.get("contents")
        if not isinstance(contents, list) or not all(isinstance(c, dict) for c in contents):
            raise BadRequest("'contents' must be an array of Content objects")
        for c in contents:
            if "parts" in c and not isinstance(c["parts"], list):
                raise BadRequest("'contents[].parts' must be an array")
            if c.get("role", "user") not in ("user", "model", "function"):
                raise BadRequest(f"invalid role {c.get('role')!r}: use 'user' or 'model'")
        system = body.get("systemInstruction", body.get("system_instruction"))
        if _unread_system(system):
            raise BadRequest("'systemInstruction' must be a Content object, its 'parts' an array")
        users = [t for c in contents if c.get("role", "user") == "user" and (t := _text(c))]
        held = held_caches(body.get("cachedContent"), body.get("cached_content"))
        if held is None:
            raise BadRequest("'cachedContent' must be a string")
        return RequestView(model=model, stream=stream,
                           system_prompt=_system_text(system),
                           last_user_text=users[-1] if users else "", history=LazyHistory(partial(_history, contents)),
                           held=held)

    def new_stream(self, *, sse: bool = True) -> StreamCodec:
        return GeminiSSEStream() if sse else GeminiArrayStream()

    def message_of(self, data: Any) -> AssistantMessage:
        try:
            cand = (data.get("candidates") or [{}])[0]
            content = cand.get("content")
        except (AttributeError, LookupError, TypeError) as exc:
            raise ValueError(f"not a GenerateContentResponse: {exc!r}") from None
        calls = [c for p in _parts(content) if (c := _call(p)) is not None]
        reason = cand.get("finishReason")
        return AssistantMessage(text=_text(content), tool_calls=calls,
                                finish_reason=str(reason) if reason else None,
                                provider_parts=_signed_calls(_parts(content)))

    def events_of(self, data: Any) -> tuple[Event, ...]:
        if not isinstance(data, dict):
            raise TypeError("not a GenerateContentResponse")
        return tuple(whole_events(unread(data, _BODY)) + _Decoder().chunk_events(data))

    def render_response(self, body: bytes, message: AssistantMessage, finish: FinishKind,
                        replaced: Replaced | None) -> bytes:
        data = known_only(loads(body), _BODY_FIELDS)
        cands = [c for c in data.get("candidates") or [] if isinstance(c, dict)] or [{}]
        signatures: dict[str, str] = {}
        _remember_signatures(_parts(cands[0].get("content")), signatures)
        # Every candidate shows the replacement; of the original only fields without text stay
        # (content, thoughts, citations, grounding, logprobs all go: they may hold what was blocked).
        data["candidates"] = [{**{k: old[k] for k in _SAFE_CANDIDATE if k in old},
                               **_tail_candidate(message, finish, signatures),
                               "index": _candidate_index(old, n)} for n, old in enumerate(cands)]
        return body_bytes(data, replaced)

    def retext_body(self, body: bytes, texts: dict[Lane, str]) -> bytes:
        data = loads(body)
        cands = _cands_by_index(data)
        for (c, _), text in texts.items():
            _retext_candidate(cands[c], text)
        return dumps(data).encode()

    def http_error(self, status: int, message: str, kind: ErrorKind,
                   extra: dict[str, str] | None = None) -> bytes:
        return dumps(error_object(status, _STATUS_BY_CODE.get(status, _ERRORS[kind][1]), message,
                                  extra)).encode()

    def with_system(self, body: dict[str, Any], text: str) -> dict[str, Any]:
        out = copy.copy(body)
        key = "system_instruction" if "system_instruction" in body and "systemInstruction" not in body \
            else "systemInstruction"
        old = body.get(key)
        system = {"parts": [{"text": old}]} if isinstance(old, str) else copy.copy(old or {})
        system["parts"] = [*_parts(system), {"text": text}]
        out[key] = system
        return out

    def with_tool_feedback(self, body: dict[str, Any], message: AssistantMessage,
                           results: list[tuple[ToolCall, str]]) -> dict[str, Any]:
        out = copy.copy(body)
        parts: list[dict[str, Any]] = [{"text": message.text}] if message.text else []
        # Each call gets back the signature it came with (``provider_parts``). The API requires one on
        # the first call of a step (only that one has one on the real API): the placeholder when unknown.
        signatures: dict[str, str] = {}
        _remember_signatures(message.provider_parts, signatures)
        parts += [_call_part(c, _signature_for(c, signatures) or (DUMMY_SIGNATURE if n == 0 else None))
                  for n, c in enumerate(message.tool_calls)]
        responses = []
        for call, text in results:
            fr: dict[str, Any] = {"name": call.name, "response": {"error": text}}
            if call.call_id:
                fr["id"] = call.call_id
            responses.append({"functionResponse": fr})
        out["contents"] = [*body.get("contents", []), {"role": "model", "parts": parts},
                           {"role": "user", "parts": responses}]
        return out

    def judge_request(self, model: str, prompt: str, *, temperature: float | None = 0.0
                      ) -> tuple[str, dict[str, Any]]:
        body: dict[str, Any] = {"contents": [{"role": "user", "parts": [{"text": prompt}]}]}
        if temperature is not None:
            body["generationConfig"] = {"temperature": _number(temperature)}
        return f"/v1beta/models/{model}:generateContent", body


_IN_STRING = re.compile(rb'["\\]')
_OUTSIDE = re.compile(rb'["{}\]]')


_ARRAY_SYNTAX = b"[], \t\r\n"
"""The bytes a JSON-array stream may hold outside its elements."""


_BODY_FIELDS = frozenset({"candidates", "usageMetadata", "modelVersion", "responseId", "promptFeedback",
                          "createTime", "modelStatus"})
"""The fields of a GenerateContentResponse; others (a top-level ``text``) are checked and dropped
from a replaced answer (see ``proxy.wire.shapes``)."""
_BODY = obj(*_BODY_FIELDS, promptFeedback=obj("blockReason", "safetyRatings"))
"""The candidates are walked by the decoder (``_Decoder``); the prompt feedback's enums carry no text, any
other field of it (``blockReasonMessage``, which a client prints) is checked."""


class ArraySplitter:
    """Cuts a streamed JSON array (``[{...},\\r\\n{...}]``) at top-level object boundaries.

    A frame is the separator bytes before an object (``[``, ``,``, whitespace) plus the object; the
    closing ``]`` is a frame of its own; bytes after it come out of ``flush``. Strings, escapes and
    brace depth are tracked across feeds, so each byte is scanned once (regex jumps between the few
    bytes that matter), whatever the chunking.
    """

    __slots__ = ("_buf", "_depth", "_escaped", "_in_string", "_pos")

    def __init__(self) -> None:
        self._buf = bytearray()
        self._reset()

    def _reset(self) -> None:
        self._buf.clear()
        self._pos = 0
        self._depth = 0
        self._in_string = False
        self._escaped = False

    def feed(self, data: bytes) -> list[bytes]:
        self._buf += data
        buf, start, pos = self._buf, 0, self._pos
        frames: list[bytes] = []
        while pos < len(buf):
            if self._escaped:
                self._escaped, pos = False, pos + 1
                continue
            m = (_IN_STRING if self._in_string else _OUTSIDE).search(buf, pos)
            if m is None:
                pos = len(buf)
                break
            c, pos = buf[m.start()], m.end()
            if c == 0x5C:  # backslash, only searched for inside strings
                self._escaped = True
            elif c == 0x22:
                self._in_string = not self._in_string
            elif c == 0x7B:
                self._depth += 1
            elif c == 0x7D:
                self._depth = max(0, self._depth - 1)  # a stray "}" must not wedge the splitter
                if self._depth == 0:
                    frames.append(bytes(buf[start:pos]))
                    start = pos
            elif self._depth == 0:  # the array's closing bracket
                frames.append(bytes(buf[start:pos]))
                start = pos
        del buf[:start]
        self._pos = pos - start
        return frames

    def flush(self) -> bytes:
        rest = bytes(self._buf)
        self._reset()
        return rest


class _GeminiStream(SplitStream[SSESplitter | ArraySplitter]):
    """Decoding and client-state shared by both framings; subclasses cut and wrap the chunks."""

    bare_errors = True
    """An error element may be relayed as the upstream sent it (``StreamError.bare``)."""

    def __init__(self, splitter: SSESplitter | ArraySplitter) -> None:
        super().__init__(splitter)
        self._meta: dict[str, Any] = {}
        """The latest usageMetadata / modelVersion / responseId seen, copied onto rendered chunks."""
        self._decoder = _Decoder()

    def provider_parts(self) -> list[dict[str, Any]]:
        """The ``functionCall`` parts that carried a ``thoughtSignature``, as received, in order (see
        the module docstring): ``with_tool_feedback`` gives each replayed call its real signature."""
        return copy.deepcopy(self._decoder.signed)

    def _events(self, chunk: Any) -> tuple[Event, ...]:
        if not isinstance(chunk, dict):
            return ()
        if "error" in chunk:
            err = chunk["error"]
            msg = err.get("message") if isinstance(err, dict) else err
            event = error_event(chunk, str(msg or "upstream error"), _ERROR_TOP, _ERROR_INNER)
            # In the JSON array only the proxy keeps the array whole (its own ``[``, separators and
            # ``]`` around what it sends): the upstream's error element is not relayed as it came.
            return (event if self.bare_errors else StreamError(event.message),)
        self._meta.update({k: chunk[k] for k in ("usageMetadata", "modelVersion", "responseId")
                           if k in chunk})
        try:
            extras = [] if _BODY.keys.issuperset(chunk) and "promptFeedback" not in chunk \
                else lane_events(unread(chunk, _BODY))
            return tuple(extras + self._decoder.chunk_events(chunk))
        except ValueError:
            return (Unvetted("a candidate index"),)

    def _tail_chunk(self, message: AssistantMessage, finish: FinishKind,
                    replaced: Replaced | None) -> dict[str, Any]:
        # Every candidate the client has is ended, each with the same text (see README, "Several choices").
        cands = [{**_tail_candidate(message, finish, self._decoder.signatures), "index": c}
                 for c in sorted(self._decoder.choices)]
        chunk: dict[str, Any] = {"candidates": cands, **self._meta}
        if replaced:
            chunk["guardproxy"] = replaced.payload()
        return chunk

    def _replaced_chunk(self, replaced: Replaced) -> dict[str, Any]:
        # An empty text part, not empty ``parts``: see the module docstring.
        return {"candidates": [{"content": {"parts": [{"text": ""}], "role": "model"}, "index": 0}],
                **{k: v for k, v in self._meta.items() if k != "usageMetadata"},
                "guardproxy": replaced.payload()}

    @staticmethod
    def _with_text(chunk: dict[str, Any], texts: dict[Lane, str]) -> dict[str, Any]:
        """``chunk`` with each rewritten candidate's visible text parts collapsed into one."""
        cands = _cands_by_index(chunk)
        for (c, _), text in texts.items():
            _retext_candidate(cands[c], text)
        return chunk


class GeminiSSEStream(_GeminiStream):
    """``alt=sse``: ``data: <chunk>\\r\\n\\r\\n`` frames, no ``event:`` lines, no terminator."""

    media_type = "text/event-stream"

    def __init__(self) -> None:
        super().__init__(SSESplitter())

    def _decode(self, raw: bytes) -> Frame:
        sse = parse_fields(raw)
        if sse.foreign and sse.has_data:
            # google-genai reads a bare line as a chunk of its own, beside the frame's data: two
            # chunks for the SDK where the proxy would read one.
            return Frame(raw, unreadable=True)
        if sse.foreign:  # a bare JSON object (the API's own mid-stream error write), read whole as google-genai reads it
            text = raw.decode("utf-8", errors="replace").strip()
        elif sse.has_data:
            text = sse.data
        else:
            return Frame(raw, tuple(label_events(sse)))  # comments, ids: checked whole
        if not text.strip():
            return Frame(raw, tuple(label_events(sse)))
        chunk = output_object(text)
        if chunk is None:
            return Frame(raw, unreadable=True)
        if sse.labels or sse.event is not None:
            return Frame(raw, (*label_events(sse), *self._events(chunk)))
        return Frame(raw, self._events(chunk))

    def note_sent(self, frame: Frame) -> None:
        """Nothing to track: every SSE chunk stands alone (no indexes, no open blocks)."""

    @staticmethod
    def _frame(chunk: dict[str, Any], end: bytes = b"\r\n\r\n") -> bytes:
        # Gemini CLI's bundled SDK cuts frames with /^\s*data: (.*)(?:\n\n|...)/, and JS ``.`` stops at
        # U+2028/U+2029: escape them, or a replacement containing one would never parse.
        data = dumps(chunk).replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
        return f"data: {data}".encode() + end

    def render_replaced(self, replaced: Replaced) -> bytes:
        return self._frame(self._replaced_chunk(replaced))

    def render_tail(self, message: AssistantMessage, finish: FinishKind, replaced: Replaced | None) -> bytes:
        return self._frame(self._tail_chunk(message, finish, replaced))

    def render_error(self, message: str, kind: ErrorKind) -> bytes:
        return dumps(error_object(*_ERRORS[kind], message)).encode()

    def retext(self, frame: Frame, texts: dict[Lane, str]) -> bytes:
        end = frame.raw[len(frame.raw.rstrip(b"\r\n")):] or b"\r\n\r\n"
        return self._frame(self._with_text(loads(parse_fields(frame.raw).data), texts), end)


class GeminiArrayStream(_GeminiStream):
    """No ``alt``: one JSON array written incrementally, ``[{...}`` then ``,\\r\\n{...}`` ... ``]``."""

    media_type = "application/json"
    bare_errors = False

    def __init__(self) -> None:
        super().__init__(ArraySplitter())
        self._sep = ",\r\n"
        """The separator the upstream puts between elements (learnt from its second element)."""
        self._seen_objects = 0
        self._opened = False
        self._objects_sent = 0
        self._closed = False

    def _decode(self, raw: bytes) -> Frame:
        brace = raw.find(b"{")
        # Only the elements are read: any other bytes between or after them (text, a string or an
        # array element) would be shown by a client that prints or parses the array, unchecked.
        if (raw if brace < 0 else raw[:brace]).strip(_ARRAY_SYNTAX):
            return Frame(raw, unreadable=True)
        if brace < 0 or not raw.rstrip().endswith(b"}"):
            # the closing ``]`` (the terminator), whitespace, or a truncated element (unreadable)
            return Frame(raw, last=raw.rstrip().endswith(b"]"), unreadable=brace >= 0)
        self._seen_objects += 1
        if self._seen_objects == 2:
            self._sep = raw[:brace].decode("utf-8", errors="replace") or self._sep
        try:
            return Frame(raw, self._events(loads_output(raw[brace:])))
        except ValueError:
            return Frame(raw, unreadable=True)

    def note_sent(self, frame: Frame) -> None:
        brace = frame.raw.find(b"{")
        head = frame.raw if brace < 0 else frame.raw[:brace]
        self._opened = self._opened or b"[" in head
        self._closed = self._closed or (brace < 0 and b"]" in head)
        self._objects_sent += brace >= 0

    def _element(self, obj: dict[str, Any]) -> str:
        """``obj`` as the next array element, opening the array if the client has nothing yet."""
        if not self._opened:
            self._opened = True
            self._objects_sent += 1
            return "[" + dumps(obj)
        sep = self._sep if self._objects_sent else ""
        self._objects_sent += 1
        return sep + dumps(obj)

    def render_replaced(self, replaced: Replaced) -> bytes:
        return b"" if self._closed else self._element(self._replaced_chunk(replaced)).encode()

    def render_tail(self, message: AssistantMessage, finish: FinishKind, replaced: Replaced | None) -> bytes:
        if self._closed:
            return b""
        self._closed = True
        return (self._element(self._tail_chunk(message, finish, replaced)) + "]").encode()

    def render_error(self, message: str, kind: ErrorKind) -> bytes:
        if self._closed:
            return b""
        self._closed = True
        return (self._element(error_object(*_ERRORS[kind], message)) + "]").encode()

    def retext(self, frame: Frame, texts: dict[Lane, str]) -> bytes:
        brace = frame.raw.find(b"{")
        chunk = self._with_text(loads(frame.raw[brace:]), texts)
        return frame.raw[:brace] + dumps(chunk).encode()
