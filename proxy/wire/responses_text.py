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


def item_extras(item: dict[str, Any]) -> list[Event]:
    """What an item shows besides its slots: annotations, logprobs that do not spell the text, and
    every string of items that are not messages, reasoning or client tool calls (server tools'
    queries, results, code output)."""
    kind = item.get("type")
    if kind == "message":
        parts = [p for p in item.get("content") or [] if isinstance(p, dict)]
        return [*(WholeText(t, 0, "annotation") for p in parts for t in strings(p.get("annotations"))),
                *(e for p in parts if p.get("logprobs") for e in logprob_events(p["logprobs"], part_text(p) or ""))]
    if kind == "reasoning" or kind in TOOL_CALL_ITEMS:
        return []
    return [WholeText(t, 0, str(kind)) for t in strings(item)]


def logprob_events(logprobs: Any, said: str) -> list[Event]:
    """A text delta's logprobs (``[{token, logprob, top_logprobs: [{token, ...}]}]``) repeat its text
    token by token and offer alternatives: a client can show both. Chosen tokens that spell exactly
    the delta were checked with it; any others are a lane of their own; alternatives are checked
    whole. (Replacement and redaction drop the logprobs.)"""
    if not isinstance(logprobs, list):
        return [Unvetted("logprobs of an unknown shape")]
    chosen: list[str] = []
    alternatives: list[str] = []
    for t in logprobs:
        if not isinstance(t, dict):
            return [Unvetted("a logprob of an unknown shape")]
        chosen.append(str(t.get("token") or ""))
        alternatives += [str(a.get("token") or "") for a in t.get("top_logprobs") or [] if isinstance(a, dict)]
    spelled = "".join(chosen)
    out: list[Event] = [] if spelled == said else [TextDelta(spelled, 0, "logprobs")]
    if alternatives:
        out.append(WholeText(" ".join(alternatives), 0, "top_logprobs"))
    return out


class OutputTexts:
    """What the deltas of one stream gave per slot, and the events for everything that repeats it."""

    def __init__(self) -> None:
        self._slots: dict[Slot, list[str]] = {}

    def delta(self, kind: str, ev: dict[str, Any]) -> list[Event]:
        delta = ev.get("delta")
        if not isinstance(delta, str):
            return [Unvetted(f"{ev.get('type')} without a text delta")]
        oi, pi = _index(ev, "output_index"), _index(ev, "summary_index" if kind == "summary" else "content_index")
        self._slots.setdefault((kind, oi, pi), []).append(delta)
        events: list[Event] = [TextDelta(delta, 0, lane(kind, oi, pi))] if delta else []
        if logprobs := ev.get("logprobs"):  # usually ``[]``
            events += logprob_events(logprobs, delta)
        return events

    def done(self, t: str, ev: dict[str, Any]) -> list[Event]:
        kind, field = DONES[t]
        oi, pi = _index(ev, "output_index"), _index(ev, "summary_index" if kind == "summary" else "content_index")
        events = self.repeat((kind, oi, pi), ev.get(field))
        return events if kind in ("text", "transcript") else [*events, LaneEnd(0, lane(kind, oi, pi))]

    def part(self, t: str, ev: dict[str, Any]) -> list[Event]:
        kind = PARTS[t]
        oi, pi = _index(ev, "output_index"), _index(ev, "summary_index" if kind == "summary" else "content_index")
        part = ev.get("part")
        if kind == "text" and isinstance(part, dict) and part.get("type") in ("reasoning_text",):
            kind = "reasoning"
        events = self.repeat((kind, oi, pi), part_text(part))
        if isinstance(part, dict):
            events += [WholeText(s, 0, "annotation") for s in strings(part.get("annotations"))]
        return events

    def item(self, item: dict[str, Any], oi: int) -> list[Event]:
        events: list[Event] = []
        for slot, text in item_slots(item, oi):
            events += self.repeat(slot, text)
        return events + item_extras(item)

    def repeat(self, slot: Slot, text: Any) -> list[Event]:
        """A text that repeats ``slot``: nothing when the deltas gave exactly it, else checked whole."""
        if not isinstance(text, str) or not text:
            return []
        if text == "".join(self._slots.get(slot, ())):
            return []
        return [WholeText(text, 0, "repeat" if slot[0] == "text" else slot[0])]


def body_events(output: list[dict[str, Any]]) -> list[Event]:
    """A whole response's output as events: slots as lane text, the rest as ``item_extras``."""
    events: list[Event] = []
    for oi, item in enumerate(output):
        for (kind, _, pi), text in item_slots(item, oi):
            if text:
                events.append(TextDelta(text, 0, lane(kind, oi, pi)))
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
