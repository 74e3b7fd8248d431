"""Every text a Responses stream or body shows, beyond the answer deltas (used by ``openai_responses``).

A Responses stream says most things twice: the deltas, then ``*.done`` events, ``content_part.done``,
``output_item.done`` and the terminal ``response.completed`` repeat the whole text. The SDK's
``responses.stream()`` helper and Codex build what they show from either, so each repeat is compared
with what the deltas gave for the same slot: equal, it was checked already; different (or never
streamed at all), it is checked whole (``WholeText``). When a redaction rewrote the deltas, the
repeats are rewritten to what the client was actually sent (``client_item`` / ``rewrite_repeat``),
and their logprobs dropped.

Lanes: the answer (``output_text`` and ``refusal``) is choice 0's answer lane; each reasoning summary
part and each reasoning text part is a lane of its own, ended by its ``.done`` event; so are the audio
transcript and a code interpreter's code.
"""

from __future__ import annotations

from typing import Any

from guardrails.datamodel import ANSWER, Event, LaneEnd, TextDelta, Unvetted, WholeText
from proxy.wire.logprobs import TokenLanes, token_events
from proxy.wire.shapes import ByType, by_type, obj

Slot = tuple[str, int, int]
"""(kind, output_index, part index): where a streamed text lands in the response's output."""

DELTAS: dict[str, str] = {
    "response.output_text.delta": "text",
    "response.refusal.delta": "text",
    "response.reasoning_summary_text.delta": "summary",
    "response.reasoning_text.delta": "reasoning",
    "response.audio.transcript.delta": "transcript",
    "response.audio_transcript.delta": "transcript",
    "response.code_interpreter_call_code.delta": "code",
    "response.mcp_call_arguments.delta": "mcp",
}
"""Text-delta event types and the kind of slot they fill."""
DONES: dict[str, tuple[str, str]] = {
    "response.output_text.done": ("text", "text"),
    "response.refusal.done": ("text", "refusal"),
    "response.reasoning_summary_text.done": ("summary", "text"),
    "response.reasoning_text.done": ("reasoning", "text"),
    "response.audio.transcript.done": ("transcript", "transcript"),
    "response.audio_transcript.done": ("transcript", "transcript"),
    "response.code_interpreter_call_code.done": ("code", "code"),
    "response.mcp_call_arguments.done": ("mcp", "arguments"),
}
"""``.done`` event types: the slot kind and the field that repeats the whole text."""
PARTS = {"response.content_part.added": "text", "response.content_part.done": "text",
         "response.reasoning_summary_part.added": "summary", "response.reasoning_summary_part.done": "summary"}
QUIET = frozenset({
    "response.function_call_arguments.delta", "response.function_call_arguments.done",
    "response.custom_tool_call_input.delta", "response.custom_tool_call_input.done", "response.audio.delta",
    "response.audio.done", "error",
})
"""Event types without text of their own here (tool arguments are decoded by the stream codec)."""
TOOL_CALL_ITEMS = frozenset({"function_call", "custom_tool_call"})
"""Items the stream codec decodes as the client's tool calls (their arguments go to the tool rules)."""
_OPAQUE = frozenset({"type", "id", "item_id", "call_id", "status", "role", "encrypted_content", "signature",
                     "sequence_number", "result", "partial_image_b64", "b64_json", "format", "obfuscation",
                     "logprobs", "mime_type", "file_id", "container_id"})
"""Keys of identifiers, states and opaque blobs (encrypted reasoning, image bytes): not rendered text."""


_AT = ("type", "sequence_number", "item_id", "output_index", "content_index", "obfuscation")
"""Fields of every event that say where it belongs (``proxy.wire.shapes``)."""
_LOGPROBS = obj("token", "logprob", "bytes", top_logprobs=obj("token", "logprob", "bytes"))
_PART = by_type(output_text=obj("type", "text", "annotations", logprobs=_LOGPROBS), refusal=obj("type", "refusal"),
                summary_text=obj("type", "text"), reasoning_text=obj("type", "text"))
_CALL = ("id", "type", "status", "call_id", "caller", "caller_id", "namespace", "async", "created_by")
ITEM = by_type(
    message=obj("id", "type", "status", "role", "phase", content=_PART),
    reasoning=obj("id", "type", "status", "encrypted_content", summary=_PART, content=_PART),
    function_call=obj(*_CALL, "name", "arguments"), custom_tool_call=obj(*_CALL, "name", "input"),
    local_shell_call=obj(*_CALL, "action"), shell_call=obj(*_CALL, "action", "environment"),
    apply_patch_call=obj(*_CALL, "operation"), computer_call=obj(*_CALL, "action"))
"""The items the codec reads (others have every string checked: ``item_extras``). A computer call's
``pending_safety_checks`` carry messages shown to the user: outside the shape, so checked."""
_DELTA_EVENTS = {t: obj(*_AT, "delta", **({"logprobs": _LOGPROBS} if t == "response.output_text.delta" else {}))
                 for t in (*DELTAS, *QUIET) if t.endswith(".delta")}
_DONE_EVENTS = {t: obj(*_AT, "summary_index", field, **({"logprobs": _LOGPROBS} if t == "response.output_text.done"
                                                        else {})) for t, (_, field) in DONES.items()}
_EVENTS: dict[str, Any] = {
    **_DELTA_EVENTS, **_DONE_EVENTS,
    "response.reasoning_summary_text.delta": obj(*_AT, "summary_index", "delta"),
    **{t: obj(*_AT, "summary_index", part=_PART) for t in PARTS},
    "response.output_text.annotation.added": obj(*_AT, "annotation_index", "annotation"),
    "response.function_call_arguments.done": obj(*_AT, "name", "arguments"),
    "response.custom_tool_call_input.done": obj(*_AT, "name", "input"),
    "response.audio.done": obj(*_AT),
    **{t: obj(*_AT, "item", item=ITEM) for t in ("response.output_item.added", "response.output_item.done")},
    **{f"response.{s}": obj(*_AT, "response") for s in ("created", "in_progress", "queued", "completed",
                                                      "incomplete", "failed")},
}
EVENT = ByType(_EVENTS)
"""The events the codec reads, down to their parts and items (``response.*`` events carry a Response,
walked by the codec with its own shape)."""
STREAMED = frozenset(_DELTA_EVENTS) | {"response.reasoning_summary_text.delta"}
"""Events whose unread fields are a lane per field (a value split across events reads as one)."""


def strings(value: Any) -> list[str]:
    """Every string a client could render in ``value`` (identifiers and blobs left out)."""
    if isinstance(value, str):
        return [value] if value else []
    if isinstance(value, dict):
        return [s for k, v in value.items() if k not in _OPAQUE for s in strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    return []


def lane(kind: str, oi: int, pi: int) -> str:
    if kind in ("text", "transcript"):
        return ANSWER if kind == "text" else kind
    return f"{kind}#{oi}.{pi}" if kind in ("summary", "reasoning") else f"{kind}#{oi}"


def part_text(part: Any) -> str | None:
    if not isinstance(part, dict):
        return None
    value = part.get("refusal") if part.get("type") == "refusal" else part.get("text")
    return value if isinstance(value, str) else None


def item_slots(item: dict[str, Any], oi: int) -> list[tuple[Slot, str]]:
    """The texts of an output item by slot: message parts, reasoning summaries and reasoning text."""
    kind = item.get("type")
    out: list[tuple[Slot, str]] = []
    if kind == "message":
        for ci, part in enumerate(item.get("content") or []):
            if (t := part_text(part)) is not None:
                out.append((("text", oi, ci), t))
    elif kind == "reasoning":
        for si, part in enumerate(item.get("summary") or []):
            if (t := part_text(part)) is not None:
                out.append((("summary", oi, si), t))
        for ci, part in enumerate(item.get("content") or []):
            if (t := part_text(part)) is not None:
                out.append((("reasoning", oi, ci), t))
    return out


_SERVER_ITEMS = frozenset({
    "web_search_call", "file_search_call", "code_interpreter_call", "image_generation_call", "mcp_call",
    "mcp_list_tools", "mcp_approval_request", "computer_call", "local_shell_call", "shell_call",
    "shell_call_output", "apply_patch_call", "apply_patch_call_output", "tool_search_call", "compaction"})
"""Item types the API defines besides messages, reasoning and client tool calls; another type's name
is checked with its strings (``strings`` leaves ``type`` out)."""


def item_extras(item: dict[str, Any]) -> list[Event]:
    """What an item shows besides its slots and its parts' logprobs (``part_logprobs``): annotations,
    and every string of items that are not messages, reasoning or client tool calls (server tools'
    queries, results, code output), checked whole in one text."""
    kind = item.get("type")
    if kind == "message":
        parts = [p for p in item.get("content") or [] if isinstance(p, dict)]
        found = [t for p in parts for t in strings(p.get("annotations"))]
        return ([WholeText("\n".join(found), 0, "annotation")] if found else []) + _unread_parts(item, ("content",))
    if kind == "reasoning":
        return _unread_parts(item, ("summary", "content"))
    if kind in TOOL_CALL_ITEMS:
        return []
    found = strings(item) + ([] if kind in _SERVER_ITEMS else [str(kind)])
    return [WholeText("\n".join(found), 0, str(kind))] if found else []


def _unread_parts(item: dict[str, Any], keys: tuple[str, ...]) -> list[Event]:
    """The strings of a message's or reasoning's parts that ``item_slots`` does not read, checked whole:
    a part list that is not a list, a part that is not an object, or one without a string text (an
    unknown type, a text that is an object). A client printing the item shows them."""
    found: list[str] = []
    for key in keys:
        parts = item.get(key)
        if type(parts) is not list:
            found += strings(parts)
            continue
        found += [t for part in parts if part_text(part) is None for t in strings(part)]
    return [WholeText("\n".join(found), 0, "parts")] if found else []


def part_logprobs(item: dict[str, Any]) -> list[tuple[int, Any, str]]:
    """(content index, logprobs, the part's text) of a message item's parts that carry logprobs."""
    if item.get("type") != "message":
        return []
    return [(ci, p["logprobs"], part_text(p) or "") for ci, p in enumerate(item.get("content") or [])
            if isinstance(p, dict) and p.get("logprobs")]


def logprob_events(logprobs: Any, said: str, *, whole: bool = False, lanes: TokenLanes | None = None) -> list[Event]:
    """A text's logprobs (``[{token, bytes, logprob, top_logprobs: [...]}]``), checked against the
    text they spell (``proxy.wire.logprobs``). (Replacement and redaction drop the logprobs.)"""
    if not isinstance(logprobs, list) or not all(isinstance(t, dict) for t in logprobs):
        return [Unvetted("logprobs of an unknown shape")]
    return token_events(logprobs, said, whole=whole, lanes=lanes)


class OutputTexts:
    """What the deltas of one stream gave per slot, and the events for everything that repeats it.

    The answer lane is read in arrival order, and the SDK's ``output_text`` joins the answer's parts
    in output order, its text parts only; so the answer's text must arrive part after part (never
    back to an earlier part), of one kind (output text or refusal), and a part's text given when it
    is added (``content_part.added``, ``output_item.added``) is its first delta, as the SDK's
    snapshot starts from it. A snapshot that differs from the deltas (a ``done`` item, the terminal
    response) is checked whole, and so is the whole ``output_text`` it makes: its parts read as one
    text there."""

    def __init__(self) -> None:
        self._slots: dict[Slot, list[str]] = {}
        self._logprobs: dict[Slot, list[Any]] = {}
        """The logprob entries the deltas carried per slot (checked with them)."""
        self._token_lanes = TokenLanes()
        """The runs a client joins of the deltas' logprobs, over the stream."""
        self._at: tuple[int, int] = (-1, -1)
        """The answer part the last answer text went to (output index, content index)."""
        self._answer_kind = ""
        """``output_text`` or ``refusal``: the kind of the answer's text so far."""
        self._parts: dict[int, int] = {}
        """Per message item, how many content parts the SDK holds (it appends each added part)."""
        self._done: dict[int, dict[str, Any]] = {}
        """The ``output_item.done`` items by output index: the SDK's final output when the terminal
        response gives none."""
        self._done_differs = False
        """Some done item differed from its deltas: the ``output_text`` of all of them is checked at
        the end (``final_done``), items done after it included."""

    def delta(self, kind: str, ev: dict[str, Any]) -> list[Event]:
        delta = ev.get("delta")
        if not isinstance(delta, str):
            return [Unvetted(f"{ev.get('type')} without a text delta")]
        oi, pi = _index(ev, "output_index"), _index(ev, "summary_index" if kind == "summary" else "content_index")
        if kind == "text" and delta and (refused := self._answer_order(
                oi, pi, "refusal" if ev.get("type") == "response.refusal.delta" else "output_text")):
            return refused
        self._slots.setdefault((kind, oi, pi), []).append(delta)
        events: list[Event] = [TextDelta(delta, 0, lane(kind, oi, pi))] if delta else []
        if logprobs := ev.get("logprobs"):  # usually ``[]``
            events += logprob_events(logprobs, delta, lanes=self._token_lanes)
            if isinstance(logprobs, list):
                self._logprobs.setdefault((kind, oi, pi), []).extend(logprobs)
        elif kind == "text" and self._token_lanes.dormant:  # text without tokens: they no longer spell it
            events += self._token_lanes.text_only(0, delta)
        return events

    def done(self, t: str, ev: dict[str, Any]) -> list[Event]:
        kind, field = DONES[t]
        oi, pi = _index(ev, "output_index"), _index(ev, "summary_index" if kind == "summary" else "content_index")
        text = ev.get(field)
        events = self.repeat((kind, oi, pi), text)
        events += self.repeat_logprobs((kind, oi, pi), ev.get("logprobs"), text)
        return events if kind in ("text", "transcript") else [*events, LaneEnd(0, lane(kind, oi, pi))]

    def _answer_order(self, oi: int, ci: int, kind: str) -> list[Event]:
        """Fails closed on answer text the lane would read in another order than ``output_text``."""
        if (oi, ci) < self._at:
            return [Unvetted("answer text for an earlier part than the last one")]
        if self._answer_kind and kind != self._answer_kind:
            return [Unvetted("a refusal and output text in one answer")]
        self._at, self._answer_kind = (oi, ci), kind
        return []

    def _seed(self, slot: Slot, part: Any) -> list[Event]:
        """A part's text given as it is added: the first delta of its slot."""
        text = part_text(part)
        if not text:
            return []
        kind, oi, pi = slot
        if kind == "text" and (refused := self._answer_order(oi, pi, str(part.get("type")))):
            return refused
        self._slots.setdefault(slot, []).append(text)
        return [TextDelta(text, 0, lane(kind, oi, pi))]

    def part(self, t: str, ev: dict[str, Any]) -> list[Event]:
        kind = PARTS[t]
        oi, pi = _index(ev, "output_index"), _index(ev, "summary_index" if kind == "summary" else "content_index")
        part = ev.get("part")
        if kind == "text" and isinstance(part, dict) and part.get("type") in ("reasoning_text",):
            kind = "reasoning"
        if t == "response.content_part.added":
            held = self._parts.get(oi, 0)
            self._parts[oi] = held + 1
            if pi != held:  # the SDK appends the part: its deltas would fill another part than ours
                return [Unvetted("a content part added at another index than the next")]
        if t.endswith(".added"):
            events = self._seed((kind, oi, pi), part)
        else:
            events = self.repeat((kind, oi, pi), part_text(part))
        if isinstance(part, dict):
            found = strings(part.get("annotations"))
            events += [WholeText("\n".join(found), 0, "annotation")] if found else []
            events += self.repeat_logprobs((kind, oi, pi), part.get("logprobs"), part_text(part))
        return events

    def item(self, item: dict[str, Any], oi: int, how: str = "done") -> list[Event]:
        """An item as ``output_item.added`` (``how="added"``: its parts' texts are their first
        deltas), ``output_item.done`` (``"done"``) or a response's output (``"output"``) shows it."""
        if how == "added":
            if item.get("type") == "message":
                content = item.get("content")
                self._parts[oi] = len(content) if isinstance(content, list) else 0
            events = [e for slot, _ in item_slots(item, oi) for e in self._seed(slot, _slot_part(item, slot))]
            return events + item_extras(item)
        events = self._repeats(item, oi)
        if how == "done":
            self._done[oi] = item
            if events:  # the SDK's final output may be these items: their answer as output_text joins it
                self._done_differs = True
                events += self.joined([self._done[i] for i in sorted(self._done)])
        return events + item_extras(item)

    def _repeats(self, item: dict[str, Any], oi: int) -> list[Event]:
        events: list[Event] = []
        for slot, text in item_slots(item, oi):
            events += self.repeat(slot, text)
        for ci, logprobs, text in part_logprobs(item):
            events += self.repeat_logprobs(("text", oi, ci), logprobs, text)
        return events

    def final_done(self) -> list[Event]:
        """A terminal response without output: the SDK's final output is the done items, and its
        ``output_text`` their answer joined (checked whole when any of them differed from its deltas:
        a part said only in a done item joins the text of items done after it)."""
        return self.joined([self._done[i] for i in sorted(self._done)]) if self._done_differs else []

    def output(self, items: list[tuple[int, dict[str, Any]]]) -> list[Event]:
        """A response's output (the terminal one is the SDK's final response): each item as a
        repeat, and when one differs from the deltas, the ``output_text`` the items make, whole."""
        events = [e for n, i in items for e in self._repeats(i, n)]
        if events:
            events += self.joined([i for _, i in items])
        return events + [e for _, i in items for e in item_extras(i)]

    @staticmethod
    def joined(items: list[dict[str, Any]]) -> list[Event]:
        """The SDK's ``output_text`` of ``items``: their messages' output_text parts, joined."""
        text = "".join(p["text"] for i in items if i.get("type") == "message" for p in i.get("content") or []
                       if isinstance(p, dict) and p.get("type") == "output_text" and isinstance(p.get("text"), str))
        return [WholeText(text, 0, "output_text")] if text else []

    def repeat_logprobs(self, slot: Slot, logprobs: Any, text: Any) -> list[Event]:
        """Logprobs that repeat ``slot``'s (a ``.done`` event's, a part's, an item's): nothing when
        they are exactly the entries its deltas carried, else checked whole against ``text``."""
        if not logprobs or logprobs == self._logprobs.get(slot):
            return []
        return logprob_events(logprobs, text if isinstance(text, str) else "", whole=True)

    def repeat(self, slot: Slot, text: Any) -> list[Event]:
        """A text that repeats ``slot``: nothing when the deltas gave exactly it, else checked whole."""
        if not isinstance(text, str) or not text:
            return []
        if text == "".join(self._slots.get(slot, ())):
            return []
        return [WholeText(text, 0, "repeat" if slot[0] == "text" else slot[0])]


def _slot_part(item: dict[str, Any], slot: Slot) -> Any:
    """The part object behind ``slot`` of ``item`` (``item_slots`` found it there)."""
    kind, _, pi = slot
    key = "summary" if kind == "summary" else "content"
    return item[key][pi]


def body_events(output: list[dict[str, Any]]) -> list[Event]:
    """A whole response's output as events: slots as lane text, the rest as ``item_extras``."""
    events: list[Event] = []
    for oi, item in enumerate(output):
        for (kind, _, pi), text in item_slots(item, oi):
            if text:
                events.append(TextDelta(text, 0, lane(kind, oi, pi)))
        events += [e for _, logprobs, text in part_logprobs(item) for e in logprob_events(logprobs, text, whole=True)]
        events += item_extras(item)
    return events


def _index(ev: dict[str, Any], key: str) -> int:
    value = ev.get(key, 0)
    return value if isinstance(value, int) else 0


def rewrite_item(item: dict[str, Any], client_text: Any) -> None:
    """A message item's answer parts become what the client was sent (``client_text(ci)``, None when
    unknown: left as is), without logprobs."""
    if item.get("type") != "message":
        return
    for ci, part in enumerate(item.get("content") or []):
        if isinstance(part, dict):
            rewrite_part(part, client_text(ci))


def rewrite_part(part: dict[str, Any], text: str | None) -> None:
    if text is None or part.get("type") not in ("output_text", "refusal"):
        return
    part["refusal" if part.get("type") == "refusal" else "text"] = text
    part.pop("logprobs", None)
