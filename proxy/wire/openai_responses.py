"""OpenAI Responses (``POST /v1/responses``): ``event: <type>`` + ``data: {"type": <type>, ...,
"sequence_number": n}`` frames, no ``[DONE]``; one terminal event (``response.completed``,
``response.incomplete`` or ``response.failed``) ends the stream.

Decisions and traps (verified against openai 3.57 and Codex 0.169's ``process_responses_event``):
- Tool calls are ``function_call`` items and Codex's freeform ``custom_tool_call`` items
  (``apply_patch``), keyed by item id. For custom calls the "arguments" are the raw ``input`` text,
  not JSON; the codec remembers their call ids to render them back as custom calls.
- A call is said several times: its added item and deltas (what the rules judge), then
  ``*_arguments.done``, ``output_item.done`` and the terminal response, which the SDK's events and
  its final response show. Each repeat must say what was judged (type, name, arguments, byte for
  byte), else the answer fails closed; a call first seen whole (only ``.done``, only the terminal
  response) is judged there. Argument text for no open call fails closed.
- ``response.refusal.delta`` is decoded as ``TextDelta``: a refusal is visible to the user, so it is
  guarded like text (``retext`` and the tail's closing of an open part handle both kinds).
- Finish reasons: ``completed`` -> ``stop``; ``incomplete`` -> ``incomplete_details.reason``;
  ``failed`` -> ``failed`` (after a ``StreamError``, unless an ``error`` event already gave one).
- The replaced signal is its own ``output.message.replaced`` event. The SDK builds it as a stand-in
  model whose ``.type`` is ours (no raise, ``event.type`` dispatch skips it); Codex ignores unknown
  types. It must come after ``response.created``: the SDK's ``responses.stream()`` helper raises on
  anything before it, so with nothing sent the synthesized preamble goes first.
- The SDK helper also raises when a stream completes with an output item left open, or when the
  response id changes; and it reads ``logprobs`` on text events. The tail closes what is open,
  reuses the upstream response id and always sends ``logprobs: []``.
- Mid-stream errors do not raise in the Python SDK (it yields ``error`` / ``response.failed``);
  Codex only looks at ``response.failed``, whose ``error.code`` decides retrying: ``invalid_prompt``
  fails the turn at once, ``rate_limit_exceeded`` / ``server_error`` are retried.
Everything the proxy renders is assumed sent: it advances the sequence numbers and output indexes.
Once the client has a terminal event nothing may follow it, so the renderers then return ``b""``.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import msgspec

from guardrails.datamodel import (
    AssistantMessage,
    Event,
    Finish,
    Frame,
    HistoryToolCall,
    Lane,
    LazyHistory,
    RequestView,
    StreamError,
    ToolCall,
    ToolCallArgsDelta,
    ToolCallEnd,
    ToolCallStart,
    Unvetted,
    WholeText,
)
from proxy.wire import responses_template
from proxy.wire import responses_text as rt
from proxy.wire.base import (
    QUICK_NULL,
    QUICK_REFUSALS,
    REPLACED_EVENT,
    BadRequest,
    DecodedFrames,
    ErrorKind,
    FinishKind,
    JsonBody,
    Replaced,
    SplitStream,
    StreamCodec,
    TurnsWireFormat,
    body_bytes,
    dumps,
    known_only,
    label_events,
    loads,
    output_object,
    quick_decoder,
    raw_value,
    with_temperature,
)
from proxy.wire.conversation_delta import Reading, Turns
from proxy.wire.input_parts import RESPONSES_ROLES, is_system
from proxy.wire.openai_errors import error_object
from proxy.wire.shapes import error_event, lane_events, obj, plain, unread, whole_events
from proxy.wire.sse import SSEFrame, SSESplitter, parse_fields

_TOOL_ITEMS = {"function_call": "arguments", "custom_tool_call": "input"}
"""Tool-call item types and the field that carries their arguments."""
_ACTION_ITEMS = {"local_shell_call": "action", "shell_call": "action", "apply_patch_call": "operation",
                 "computer_call": "action"}
"""Built-in tool-call items the client executes: the tool is named by the item type, and the JSON of
the object in this field is the call's arguments (``guardrails.tools.catalog`` knows each)."""
_CALL_ITEMS = {*_TOOL_ITEMS, *_ACTION_ITEMS}
_CALL_OUTPUTS = {"function_call_output", "custom_tool_call_output", *(f"{k}_output" for k in _ACTION_ITEMS)}
_ARGS_DELTA = {"response.function_call_arguments.delta", "response.custom_tool_call_input.delta"}
_ARGS_DONE = {"response.function_call_arguments.done", "response.custom_tool_call_input.done"}
_RESPONSE_FIELDS = frozenset({
    "id", "object", "created_at", "completed_at", "status", "background", "billing", "conversation", "error",
    "incomplete_details", "instructions", "max_output_tokens", "max_tool_calls", "metadata", "model", "output",
    "parallel_tool_calls", "previous_response_id", "prompt", "prompt_cache_key", "prompt_cache_retention",
    "reasoning", "safety_identifier", "service_tier", "store", "temperature", "text", "tool_choice", "tools",
    "top_logprobs", "top_p", "truncation", "usage", "user"})
"""The fields of a Response object; others (a top-level ``output_text``, which some clients read) are
checked whole and never kept in what the proxy renders (see ``proxy.wire.shapes``)."""
_RESPONSE = obj(*_RESPONSE_FIELDS, output=rt.ITEM)
"""A Response down to its output items (``proxy.wire.shapes``): whatever lies outside is checked."""
_LIFECYCLE = {"response.created", "response.in_progress", "response.queued"}
_TERMINAL = {"response.completed", "response.incomplete", "response.failed"}
_TEXT_DELTAS = {"response.output_text.delta": "text", "response.refusal.delta": "refusal"}
_REPEATS = {"response.output_text.done", "response.refusal.done", "response.content_part.done",
            "response.output_item.done", *_TERMINAL}
"""Events that repeat the answer's text (rewritten after a redaction: ``outgoing``)."""
_KEPT_FOR_SENT = frozenset({*rt.DELTAS, *_ARGS_DELTA})
"""The bulk of a stream, kept decoded for ``note_sent`` (``DecodedFrames``; none of them repeats
the answer, so ``outgoing`` never rewrites one). Their decode reads the event and never changes it."""

_FAILED_CODES: dict[str, str] = {"rate_limit": "rate_limit_exceeded", "upstream": "server_error",
                                 "timeout": "server_error", "overloaded": "server_is_overloaded"}
"""``response.error.code`` per kind; the rest are ``invalid_prompt``, which Codex does not retry."""

_PLAIN_TYPE = re.compile(r"response(\.[a-z_]+)+|error")
"""The shape of the API's event types (``response.web_search_call.searching``)."""
_FAILURE_PREFIXES = ("error", "failed", "aborted")
_EXIT_CODE = re.compile(r"exit code:\s*(-?\d+)", re.IGNORECASE)


# -- requests ----------------------------------------------------------------------------------
def _text(content: Any) -> str:
    """Text of a ``content`` / ``output`` that is a string or a list of parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", p.get("refusal", ""))) for p in content if isinstance(p, dict))
    return ""


def _result_ok(output: Any) -> bool:
    """A tool output is a failure only when it says so at its very start: an error marker (``Error:``,
    ``failed``, ``aborted``), or a non-zero exit code in either of Codex's shell formats (text that
    begins ``Exit code: N``, or JSON ``{"metadata": {"exit_code": N}}``). Anything else is a success:
    a marker deeper in the text may just be file content the tool read."""
    text = _text(output).lstrip()
    if text.lower().startswith(_FAILURE_PREFIXES):
        return False
    if m := _EXIT_CODE.match(text):
        return int(m.group(1)) == 0
    if text.startswith("{"):
        try:
            meta = loads(text).get("metadata")
        except (ValueError, AttributeError):
            return True
        return not (isinstance(meta, dict) and meta.get("exit_code") not in (0, None))
    return True


def _history(items: list[dict[str, Any]]) -> list[HistoryToolCall]:
    results = {str(i.get("call_id", i.get("id"))): _output_ok(i) for i in items if i.get("type") in _CALL_OUTPUTS}
    calls = [_call_of(i) for i in items if i.get("type") in _CALL_ITEMS]
    return [HistoryToolCall(c.call_id, c.name, c.arguments, results.get(c.call_id)) for c in calls]


def _output_ok(item: dict[str, Any]) -> bool:
    """An apply_patch_call_output says ``status``; a shell_call_output's records say their exit codes;
    the other outputs are text (``_result_ok``)."""
    output = item.get("output")
    if item.get("type") == "apply_patch_call_output":
        return item.get("status") == "completed"
    if item.get("type") == "shell_call_output" and isinstance(output, list):
        outcomes = [r.get("outcome") for r in output if isinstance(r, dict)]
        return all(isinstance(o, dict) and o.get("type") == "exit" and o.get("exit_code") == 0 for o in outcomes)
    return _result_ok(output)


def _call_of(item: dict[str, Any]) -> ToolCall:
    kind = str(item["type"])
    if kind in _ACTION_ITEMS:
        return ToolCall(str(item.get("call_id", "")), kind, _action_args(item))
    return ToolCall(str(item.get("call_id", "")), str(item.get("name", "")), str(item.get(_TOOL_ITEMS[kind], "")))


def _action_args(item: dict[str, Any]) -> str:
    """A built-in call item's action as the call's JSON arguments (``{}`` when it carries none yet)."""
    action = item.get(_ACTION_ITEMS[str(item["type"])])
    return dumps(action) if isinstance(action, dict) else "{}"


def _input_items(body: dict[str, Any]) -> list[dict[str, Any]]:
    """``input`` as a list of items (a string becomes one user message)."""
    raw = body.get("input", [])
    if isinstance(raw, str):
        return [{"type": "message", "role": "user", "content": raw}]
    if not isinstance(raw, list) or not all(isinstance(i, dict) for i in raw):
        raise BadRequest("'input' must be a string or an array of input items")
    return raw


def _custom_tool_names(body: dict[str, Any]) -> set[str]:
    tools = body.get("tools") or []
    return {str(t.get("name")) for t in tools if isinstance(t, dict) and t.get("type") == "custom"}

_ERROR_TOP = frozenset({"type", "code", "message", "param", "sequence_number", "error"})
_ERROR_INNER = frozenset({"type", "code", "message", "param"})
"""An ``error`` event's fields (``{"type": "error", "code", "message", "param", "sequence_number"}``,
or its error nested): a frame with only these is relayed as the upstream sent it."""


class _QuickItem(msgspec.Struct, gc=False):
    type: Any = msgspec.UNSET
    role: Any = msgspec.UNSET
    id: Any = None
    """Read for an ``item_reference`` (held state: ``held_items``)."""
    content: msgspec.Raw = QUICK_NULL
    """Decoded only for the messages a view reads (system, developer, the last user's)."""


class _QuickRequest(msgspec.Struct, gc=False):
    """What ``parse_request`` (and the edge's ``background`` check) reads of a request (``quick_view``)."""

    model: Any = None
    stream: Any = None
    instructions: Any = None
    background: Any = None
    input: str | list[_QuickItem] = msgspec.field(default_factory=list)
    previous_response_id: Any = None
    conversation: Any = None
    prompt: Any = None
    store: Any = None


_QUICK = quick_decoder(_QuickRequest)


def _whole_history(body: JsonBody) -> list[HistoryToolCall]:
    return _history(_input_items(body.data))


def held_state(previous: Any, conversation: Any, prompt: Any) -> tuple[str, ...] | None:
    """``RequestView.held`` of a request: the upstream state it names that may hold a system prompt
    (None: a field of a shape the upstream refuses; the whole path raises ``BadRequest`` for it)."""
    if previous is None and conversation is None and prompt is None:
        return ()
    held: list[str] = []
    if previous is not None:
        if not isinstance(previous, str):
            return None
        held.append(f"response:{previous}")
    if isinstance(conversation, dict):
        conversation = conversation.get("id")
    if conversation is not None:
        if not isinstance(conversation, str):
            return None
        held.append(f"conversation:{conversation}")
    if prompt is not None:
        pid = prompt.get("id") if isinstance(prompt, dict) else None
        if not isinstance(pid, str):
            return None
        held.append(f"prompt:{pid}")
    return tuple(held)


def held_items(references: Sequence[Any]) -> tuple[str, ...] | None:
    """``RequestView.held`` keys of the ``item_reference`` input items (the ids of ``references``): an
    item the upstream stored, which can be a system or developer message the proxy never saw in this
    request, so it is held state the canary cannot know (``item:``, always a miss). None for an id that
    is not a string (the upstream refuses it)."""
    if not all(isinstance(r, str) for r in references):
        return None
    return tuple(f"item:{r}" for r in references)


def _keeps(store: Any, conversation: Any) -> bool:
    """Whether the upstream keeps a turn's input items for later requests (``Reading.stored``): stored
    (``store`` not false), or added to a conversation, which ``store: false`` does not keep them out of
    (or, if it does, remembering a text the upstream does not hold only widens the canary)."""
    return store is not False or conversation is not None


_MESSAGE_TYPES = ("message", None)
"""An input item's ``type`` read as a message: ``message``, or none (absent or null), as the input
screen reads it (``input_parts._kind(item, "message")``)."""


def _system_role(role: Any) -> bool:
    """Whether a message item is system text: ``system``/``developer``, or a role the input screen
    reads as one (``System``: an upstream that folds the case reads it so), the same in every reader."""
    return role == "system" or role == "developer" or (role != "user" and role != "assistant"
                                                        and is_system(role, RESPONSES_ROLES))


def _fold(read: Reading, items: Sequence[_QuickItem]) -> Reading | None:
    """``read`` with more input items: what ``parse_request`` does, on the same values (None where a
    raw field does not decode: the whole path then decides)."""
    system: list[str] | None = None
    last_user: _QuickItem | None = None
    references: list[Any] = []
    try:
        for i in items:
            if i.type == "item_reference":
                references.append(i.id)
            elif (i.type is msgspec.UNSET or i.type in _MESSAGE_TYPES) and i.role is not msgspec.UNSET:
                if _system_role(i.role):
                    system = [*(system or read.system), _text(raw_value(i.content))]
                elif i.role == "user":
                    last_user = i
        text = read.last_user_text if last_user is None else _text(raw_value(last_user.content))
    except QUICK_REFUSALS:
        return None
    held = read.held
    if references:
        found = held_items(references)
        if found is None:
            return None
        held = (*held, *found)
    return Reading(read.model, read.stream, read.system if system is None else tuple(system), text, read.kept,
                   held, read.stored)


def _read_whole(raw: bytes) -> tuple[Reading, list[_QuickItem]] | None:
    """Declines a request with ``background`` set: the edge refuses those, on the whole decode. An
    ``input`` that is one string is one user message (and no list for a next turn to extend)."""
    quick = _QUICK(raw)
    if (quick is None or not isinstance(quick.model, str) or quick.background not in (None, False)
            or not isinstance(quick.instructions, (str, type(None)))
            or not isinstance(quick.stream, (bool, type(None)))):
        return None
    held = held_state(quick.previous_response_id, quick.conversation, quick.prompt)
    if held is None:
        return None
    read = Reading(quick.model, quick.stream, (quick.instructions or "",), "", True, held,
                   _keeps(quick.store, quick.conversation))
    if isinstance(quick.input, str):
        return read._replace(last_user_text=quick.input), []
    folded = _fold(read, quick.input)
    return None if folded is None else (folded, quick.input)


_TURNS = Turns(_read_whole, _fold, _QuickItem, b'{"type":"guardproxy-probe"}')
"""Bodies of recent requests: an agent's next turn is read from the items it adds (``turns``)."""


def system_items(body: dict[str, Any]) -> tuple[str, ...] | None:
    """The system and developer texts of a Conversations API ``items`` list (``POST /v1/conversations``),
    which the upstream keeps for every later turn of the conversation; None when ``items`` is not a
    list of objects."""
    items = body.get("items", [])
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        return None
    return tuple(_text(i.get("content")) for i in items
                 if i.get("type") in _MESSAGE_TYPES and _system_role(i.get("role")))


class OpenAIResponses(TurnsWireFormat[Reading]):
    name = "openai_responses"
    turns = _TURNS

    def view_of(self, read: Reading, body: JsonBody, *, stream: bool) -> RequestView:
        return RequestView(model=read.model, stream=bool(read.stream),
                           system_prompt="\n".join(s for s in read.system if s),
                           last_user_text=read.last_user_text, history=LazyHistory(partial(_whole_history, body)),
                           held=read.held, kept=read.system[1:] if read.stored else None)

    def parse_request(self, body: dict[str, Any], *, stream: bool) -> RequestView:
        items = _input_items(body)
        model = body.get("model")
        if not isinstance(model, str) and not (model is None and "prompt" in body):
            raise BadRequest("'model' must be a string")
        instructions = body.get("instructions")
        if instructions is not None and not isinstance(instructions, str):
            raise BadRequest("'instructions' must be a string")
        messages = [i for i in items if i.get("type") in _MESSAGE_TYPES and "role" in i]
        system = [instructions or ""] + [_text(m.get("content")) for m in messages
                                         if _system_role(m.get("role"))]
        users = [m for m in messages if m.get("role") == "user"]
        held = held_state(body.get("previous_response_id"), body.get("conversation"), body.get("prompt"))
        found = held_items([i.get("id") for i in items if i.get("type") == "item_reference"])
        if held is None or found is None:
            raise BadRequest("'previous_response_id', 'conversation', 'prompt.id' and an item_reference's 'id' "
                             "must be strings")
        held = (*held, *found)
        return RequestView(model=model or "", stream=bool(body.get("stream")),
                           system_prompt="\n".join(s for s in system if s),
                           last_user_text=_text(users[-1].get("content")) if users else "",
                           history=LazyHistory(partial(_history, items)), held=held,
                           kept=tuple(system[1:]) if _keeps(body.get("store"), body.get("conversation")) else None)

    def new_stream(self, *, sse: bool = True) -> StreamCodec:
        return ResponsesStream()

    def message_of(self, data: Any) -> AssistantMessage:
        try:
            output = [i for i in data["output"] if isinstance(i, dict)]
            parts = [p for i in output if i.get("type") == "message" for p in i.get("content") or []]
            calls = [_call_of(i) for i in output if i.get("type") in _CALL_ITEMS]
            urls = [str(a.get("url", a.get("title", ""))) for p in parts for a in p.get("annotations") or []
                    if isinstance(a, dict)]
            rid = data.get("id")
            return AssistantMessage(text=_text(parts), tool_calls=calls,
                                    finish_reason=_finish_of("", data), annotations=urls,
                                    state_id=rid if isinstance(rid, str) else "")
        except (KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"not a Responses API response: {exc!r}") from None

    def events_of(self, data: Any) -> tuple[Event, ...]:
        output = data.get("output")
        if not isinstance(output, list) or not all(isinstance(i, dict) for i in output):
            raise ValueError("not a Responses API response: no output list")
        events = whole_events(unread(data, _RESPONSE)) + rt.body_events(output)
        for n, item in enumerate(output):
            if item.get("type") in _TOOL_ITEMS:
                call, key = _call_of(item), str(n)
                events += [ToolCallStart(key, call.call_id, call.name), ToolCallArgsDelta(key, call.arguments),
                           ToolCallEnd(key)]
        events.append(Finish(_finish_of("", data)))
        return tuple(events)

    def retext_body(self, body: bytes, texts: dict[Lane, str]) -> bytes:
        data = loads(body)
        text, done = texts[(0, "text")], False
        for item in data.get("output") or []:
            if not isinstance(item, dict) or item.get("type") != "message":
                continue
            parts = []
            for p in item.get("content") or []:  # the answer's parts collapse into the first one
                if isinstance(p, dict) and p.get("type") in ("output_text", "refusal"):
                    if done:
                        continue
                    name = "refusal" if p.get("type") == "refusal" else "text"
                    p, done = {k: v for k, v in p.items() if k != "logprobs"} | {name: text}, True
                parts.append(p)
            item["content"] = parts
        return dumps(data).encode()

    def render_response(self, body: bytes, message: AssistantMessage, finish: FinishKind,
                        replaced: Replaced | None) -> bytes:
        data = known_only(loads(body), _RESPONSE_FIELDS)
        old = [i for i in data.get("output") or [] if isinstance(i, dict)]
        ids = [str(i["id"]) for i in old if i.get("type") == "message" and "id" in i]
        msg_id = ids[0] if ids else "msg_guardproxy"
        # Nothing of the original output stays (reasoning summaries, server tools' results, logprobs
        # may all hold what was blocked): our message and our tool calls only.
        output: list[dict[str, Any]] = []
        if message.text:
            output.append(_message_item(msg_id, message.text, "completed"))
        custom = {i.get("call_id") for i in old if i.get("type") == "custom_tool_call"}
        output += [_tool_item(c, c.call_id in custom, f"fc_guardproxy_{n}", "completed")
                   for n, c in enumerate(message.tool_calls)]
        data["output"] = output
        data.update(_ending(finish))
        return body_bytes(data, replaced)

    def http_error(self, status: int, message: str, kind: ErrorKind,
                   extra: dict[str, str] | None = None) -> bytes:
        return dumps(error_object(message, kind, extra)).encode()

    def with_system(self, body: dict[str, Any], text: str) -> dict[str, Any]:
        out = copy.copy(body)
        old = body.get("instructions")
        out["instructions"] = f"{old}\n\n{text}" if isinstance(old, str) and old else text
        return out

    def with_tool_feedback(self, body: dict[str, Any], message: AssistantMessage,
                           results: list[tuple[ToolCall, str]]) -> dict[str, Any]:
        out = copy.copy(body)
        custom = _custom_tool_names(body)
        extra: list[dict[str, Any]] = []
        if message.text:
            extra.append({"type": "message", "role": "assistant",
                          "content": [{"type": "output_text", "text": message.text, "annotations": []}]})
        # A computer_call's output can only be a screenshot: it is not replayed (a call without its
        # output is refused) and the reason goes to the model as a message instead.
        extra += [_tool_item(call, call.name in custom) for call in message.tool_calls if call.name != "computer_call"]
        extra += [_feedback_item(call, text, call.name in custom) for call, text in results]
        out["input"] = [*_input_items(body), *extra]
        return out

    def judge_request(self, model: str, prompt: str, *, temperature: float | None = 0.0
                      ) -> tuple[str, dict[str, Any]]:
        body: dict[str, Any] = {"model": model, "input": prompt, "temperature": temperature, "stream": False,
                                "store": False}
        return "/v1/responses", with_temperature(body, temperature)


# -- shared shapes -------------------------------------------------------------------------------
def _finish_of(event_type: str, response: dict[str, Any]) -> str:
    """Our ``Finish.reason`` for a terminal event type, or for a response's ``status``."""
    status = event_type.removeprefix("response.") if event_type in _TERMINAL else response.get("status")
    if status == "completed":
        return "stop"
    if status == "incomplete":
        details = response.get("incomplete_details")
        return str(details.get("reason") or "incomplete") if isinstance(details, dict) else "incomplete"
    return str(status or "failed")


def _ending(finish: FinishKind) -> dict[str, Any]:
    if finish == "filtered":
        return {"status": "incomplete", "incomplete_details": {"reason": "content_filter"}, "error": None}
    return {"status": "completed", "incomplete_details": None, "error": None}


def _message_item(item_id: str, text: str, status: str) -> dict[str, Any]:
    return {"id": item_id, "type": "message", "status": status, "role": "assistant",
            "content": [{"type": "output_text", "text": text, "annotations": []}] if text else []}


def _tool_item(call: ToolCall, custom: bool, item_id: str = "", status: str = "") -> dict[str, Any]:
    """A tool-call item; input items (tool feedback) go without ``id`` and ``status``."""
    if call.name in _ACTION_ITEMS:
        head = {"id": item_id, "type": call.name, "status": status} if item_id else {"type": call.name}
        try:
            action = loads(call.arguments) if call.arguments else {}
        except ValueError:
            action = {}
        return {**head, "call_id": call.call_id, _ACTION_ITEMS[call.name]: action}
    kind = "custom_tool_call" if custom else "function_call"
    head = {"id": item_id, "type": kind, "status": status} if item_id else {"type": kind}
    return {**head, "call_id": call.call_id, "name": call.name, _TOOL_ITEMS[kind]: call.arguments}


def _feedback_item(call: ToolCall, text: str, custom: bool) -> dict[str, Any]:
    """The input item that tells the model ``call`` was not run, in the shape the API takes for the
    call's kind (openai-python 3.57 ``response_input_item_param``): a shell_call's output is a list of
    stdout/stderr/outcome records, an apply_patch_call's has a required ``status``, a
    local_shell_call's names the call by ``id`` and carries a JSON string, a computer_call's is a
    screenshot (so the text goes in a user message)."""
    if call.name == "computer_call":
        return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}
    if call.name == "shell_call":
        return {"type": "shell_call_output", "call_id": call.call_id,
                "output": [{"stdout": "", "stderr": text, "outcome": {"type": "exit", "exit_code": 1}}]}
    if call.name == "apply_patch_call":
        return {"type": "apply_patch_call_output", "call_id": call.call_id, "status": "failed", "output": text}
    if call.name == "local_shell_call":
        return {"type": "local_shell_call_output", "id": call.call_id,
                "output": dumps({"output": text, "metadata": {"exit_code": 1}})}
    kind = "custom_tool_call_output" if custom else "function_call_output"
    return {"type": kind, "call_id": call.call_id, "output": text}


def _load(raw: bytes | SSEFrame) -> dict[str, Any] | None:
    """The event's JSON object; an empty one for a frame without data (a comment, an ``id:``),
    None for anything else: data that is not a JSON object, a line that is no SSE field (the SDK
    skips it, other clients may read it)."""
    sse = parse_fields(raw) if isinstance(raw, bytes) else raw
    if sse.foreign:
        return None
    if not sse.has_data:
        return {}
    ev = output_object(sse.data)
    if ev is None:
        return None
    if "type" not in ev and sse.event:
        ev["type"] = sse.event
    return ev


def _plain_delta(sse: SSEFrame, ev: dict[str, Any] | None) -> dict[str, Any] | None:
    """``ev`` when it is an output-text delta whose decode shows nothing but the delta itself: its
    own event name, no other SSE field, no field outside its shape (what a template may learn)."""
    if not ev or ev.get("type") != responses_template.TEXT_DELTA or label_events(sse, responses_template.TEXT_DELTA):
        return None
    return ev if plain(ev, rt.EVENT.shapes[responses_template.TEXT_DELTA]) else None


def _read_plain_delta(raw: bytes) -> dict[str, Any] | None:
    """``_plain_delta`` of ``raw`` as the full decode reads it (no codec state read or changed)."""
    sse = parse_fields(raw)
    return _plain_delta(sse, _load(sse))


@dataclass(slots=True)
class _Part:
    part: dict[str, Any]
    text_done: bool = False
    open: bool = True


@dataclass(slots=True)
class _Call:
    """A tool-call item as decoded: what every later view of it must repeat."""

    kind: str
    name: str
    parts: list[str] = field(default_factory=list)
    """The argument text decoded so far (the added item's, then the fragments)."""
    shown: str = "{}"
    """A built-in call's action as its item last showed it (what ends it when nothing else does)."""
    args: str | None = None
    """The arguments the rules judged, once the call ended."""


@dataclass(slots=True)
class _Item:
    """An output item as the client has it (the added item, updated by deltas, or the done item)."""

    item: dict[str, Any]
    open: bool = True
    args_done: bool = False
    parts: list[_Part] = field(default_factory=list)


class ResponsesStream(SplitStream[SSESplitter]):
    def __init__(self) -> None:
        super().__init__(SSESplitter())
        # decoding state
        self._response: dict[str, Any] = {}
        """The upstream's response object (id, model, created_at...), to render ours with the same."""
        self._ids: list[str] = []
        """Every ``response.id`` the stream named (``state_ids``): the SDK keeps the final one, which an
        upstream may name only in ``response.completed``, or change after ``response.created``."""
        self._usage: Any = None
        self._keys: dict[int, str] = {}
        """output_index -> tool key (the item id), for deltas without a known ``item_id``."""
        self._calls: dict[str, _Call] = {}
        """Tool-call items by key (the item id), open or judged: every repeat is compared with them."""
        self._custom_calls: set[str] = set()
        self._last_added = -1
        """The output index of the last ``output_item.added``."""
        self._error_seen = False
        self._texts = rt.OutputTexts()
        # what the client has
        self._seq = -1
        self._preamble = False
        self._ended = False
        self._items: dict[int, _Item] = {}
        self._unsettled: dict[int, tuple[dict[str, Any], str, list[str]]] = {}
        """Deltas the client was sent that are not in the text they join yet, by the identity of the
        item or part holding that text: (it, the text's key, the deltas). Appending each delta to
        the text copied the whole text each time, quadratic in the answer's length (6.7 us a delta
        over 100,000 deltas, 1.2 over 2,000); ``_settle`` joins them before anything reads one."""
        self._decoded: DecodedFrames[dict[str, Any]] = DecodedFrames()
        """The events of delta frames as decoded, for ``note_sent`` to read rather than parse again."""
        self._template: responses_template.DeltaTemplate | None = None
        """The shape of the first plain output-text delta: later ones are read from their bytes."""
        self._learns = 0

    @property
    def state_ids(self) -> tuple[str, ...]:
        return tuple(self._ids)

    # -- decoding ---------------------------------------------------------------------------
    def _decode(self, raw: bytes) -> Frame:
        template = self._template
        if template is not None and (ev := template.match(raw)) is not None:
            # The event as the full read gives it, and then what the full decode does with a plain
            # text delta (``responses_template``): the same events and the same state.
            try:
                events = self._texts.delta("text", ev)
            except (TypeError, AttributeError, ValueError, KeyError):
                return Frame(raw, unreadable=True)
            self._decoded.keep(raw, ev)
            return Frame(raw, tuple(events))
        sse = parse_fields(raw)
        ev = _load(sse)
        if ev is None:
            return Frame(raw, unreadable=True)
        if not ev:  # a comment, an id, a name without data (one of this API's names shows nothing new)
            named = sse.event is not None and _PLAIN_TYPE.fullmatch(sse.event) is not None
            return Frame(raw, tuple(label_events(sse, sse.event if named else None)))
        try:
            events = self._events(ev)
            t = ev.get("type")
            if t in _KEPT_FOR_SENT:
                self._decoded.keep(raw, ev)
            if t == responses_template.TEXT_DELTA and self._template is None \
                    and self._learns < responses_template.MAX_LEARNS and _plain_delta(sse, ev) is not None:
                self._learns += 1
                self._template = responses_template.learn(raw, ev, _read_plain_delta)
            if not plain(ev, rt.EVENT.shapes.get(t)) and (found := unread(ev, rt.EVENT, str(t))):  # type: ignore[arg-type]
                events += lane_events(found) if t in rt.STREAMED else whole_events(found)
            if sse.labels or sse.event != t:
                events[:0] = label_events(sse, t if isinstance(t, str) else None)
            if t not in rt.EVENT.shapes and not (isinstance(t, str) and _PLAIN_TYPE.fullmatch(t)):
                events.append(WholeText(str(t), 0, "event"))  # a type that is no event name is text too
            return Frame(raw, tuple(events))
        except (TypeError, AttributeError, ValueError, KeyError):
            return Frame(raw, unreadable=True)  # an unexpected shape fails closed, never raised on

    def _events(self, ev: dict[str, Any]) -> list[Event]:
        t = ev.get("type")
        if t in rt.DELTAS:
            return self._texts.delta(rt.DELTAS[t], ev)
        if t in rt.DONES:
            return self._texts.done(t, ev)
        if t in rt.PARTS:
            return self._texts.part(t, ev)
        if t == "response.output_text.annotation.added":
            return [WholeText(s, 0, "annotation") for s in rt.strings(ev.get("annotation"))]
        if t in _ARGS_DELTA:
            key = self._key(ev)
            delta = ev.get("delta")
            if delta == "":
                return []
            call = self._calls.get(key)
            if not isinstance(delta, str) or call is None or call.args is not None or call.kind in _ACTION_ITEMS:
                # Text the client shows (the SDK appends it to the call it has) for no call being judged.
                return [Unvetted(f"{t} for no open tool call")]
            call.parts.append(delta)
            return [ToolCallArgsDelta(key, delta)]
        if t in _ARGS_DONE:
            key = self._key(ev)
            args = ev.get("arguments" if t == "response.function_call_arguments.done" else "input")
            if key not in self._calls:  # no call to repeat: its text is checked, as any event's
                return [WholeText("\n".join(rt.strings(ev)), 0, "arguments")] if rt.strings(ev) else []
            return self._repeat(key, None, ev.get("name"), args)
        item = ev.get("item")
        if t in ("response.output_item.added", "response.output_item.done") and isinstance(item, dict):
            index = ev.get("output_index")
            if t == "response.output_item.added" and isinstance(index, int):
                if index <= self._last_added:  # the SDK's snapshot lists items in arrival order
                    return [Unvetted("an output item added before an earlier one")]
                self._last_added = index
            how = "added" if t == "response.output_item.added" else "done"
            return [*self._texts.item(item, index if isinstance(index, int) else 0, how),
                    *self._item_events(t, index, item)]
        if t == "error":
            self._error_seen = True
            nested = ev.get("error")
            err: dict[str, Any] = nested if isinstance(nested, dict) else ev
            return [error_event(ev, str(err.get("message") or "upstream error"), _ERROR_TOP, _ERROR_INNER)]
        response = ev.get("response")
        if not isinstance(response, dict):
            return self._other_events(str(t), ev)
        output = response.get("output")
        if not isinstance(output, list | None):  # the API's is a list: another shape no one reads alike
            return [Unvetted(f"an output that is no list in {t}")]
        items = [(n, i) for n, i in enumerate(output) if isinstance(i, dict)] if output else []
        if t in _TERMINAL:  # the SDK's final response: each call in it is the one judged, or judged now
            texts = [*self._texts.output(items), *(e for n, i in items for e in self._item_events(t, n, i))]
            if output is None:
                texts += self._texts.final_done()
        elif output:  # the API starts with none; the SDK's snapshot would start with these, unjudged
            texts = [Unvetted(f"output in {t}")]
        else:
            texts = []
        texts += whole_events(unread(response, _RESPONSE))
        if isinstance(rid := response.get("id"), str) and rid and rid not in self._ids:
            self._ids.append(rid)
        if not self._response or response.get("id") == self._response.get("id"):
            self._response = {k: v for k, v in response.items()
                              if k in _RESPONSE_FIELDS and k not in ("output", "usage")}
        self._usage = response.get("usage") or self._usage
        if t not in _TERMINAL:
            return texts
        events: list[Event] = [*texts]
        for k, call in self._calls.items():
            events += self._end(k, call.shown)
        if t == "response.failed" and not self._error_seen:
            failure = response.get("error")
            msg = failure.get("message") if isinstance(failure, dict) else None
            events.append(StreamError(str(msg or "response failed")))
        return [*events, Finish(_finish_of(t, response))]

    @staticmethod
    def _other_events(t: str, ev: dict[str, Any]) -> list[Event]:
        """Event types this codec has no decoder for: a text delta fails closed (split text cannot be
        checked piece by piece); anything else has every string it carries checked whole."""
        if t in rt.QUIET:
            return []
        if t.endswith(".delta") and isinstance(ev.get("delta"), str):
            return [Unvetted(f"event {t!r}")]
        found = [s for k, v in ev.items() if k != "type" for s in rt.strings(v)]
        return [WholeText("\n".join(found), 0, "event")] if found else []

    def _key(self, ev: dict[str, Any]) -> str:
        """The call an argument event is for: the SDK goes by ``output_index``, so an ``item_id``
        naming another call is for none ("")."""
        item_id = ev.get("item_id")
        index = ev.get("output_index")
        key = self._keys.get(index, "") if isinstance(index, int) else ""
        if isinstance(item_id, str) and item_id in self._calls:
            return item_id if index is None or key == item_id else ""
        return key

    def _item_key(self, item: dict[str, Any], index: Any) -> str:
        """A call item's key: its id; without one, the call streamed at its output index."""
        iid = item.get("id")
        if iid:
            return str(iid)
        if isinstance(index, int) and index in self._keys:
            return self._keys[index]
        return f"#{index}"

    def _item_events(self, t: str, index: Any, item: dict[str, Any]) -> list[Event]:
        """A tool-call item as an event shows it: opened at ``.added``; anywhere else (its ``.done``,
        the terminal response's output) it repeats the call, or is a call seen first whole."""
        kind = item.get("type")
        if kind not in _CALL_ITEMS:
            return []
        key = self._item_key(item, index)
        action = kind in _ACTION_ITEMS
        args = _action_args(item) if action else item.get(_TOOL_ITEMS[str(kind)])
        if t == "response.output_item.added":
            if key in self._calls:  # the SDK raises on a second item at an index; others show both
                return [Unvetted("a tool call item added twice")]
            return self._start(key, index, item, args)
        events = [] if key in self._calls else self._start(key, index, item, args if action else "")
        return [*events, *self._repeat(key, str(kind), kind if action else item.get("name"), args)]

    def _start(self, key: str, index: Any, item: dict[str, Any], args: Any) -> list[Event]:
        """Open a call: a function or custom call's arguments so far are its first fragment (the SDK
        appends the deltas to them); a built-in call's action is what it shows until its end."""
        kind = str(item["type"])
        action = kind in _ACTION_ITEMS
        name = kind if action else str(item.get("name", ""))
        if isinstance(index, int):
            self._keys[index] = key
        call = self._calls[key] = _Call(kind, name)
        if kind == "custom_tool_call":
            self._custom_calls.add(str(item.get("call_id", "")))
        events: list[Event] = [ToolCallStart(key, str(item.get("call_id", "")), name)]
        if action:
            call.shown = args
        elif isinstance(args, str) and args:
            call.parts.append(args)
            events.append(ToolCallArgsDelta(key, args))
        elif args not in ("", None):
            events.append(Unvetted("tool call arguments that are not a string"))
        return events

    def _repeat(self, key: str, kind: str | None, name: Any, args: Any) -> list[Event]:
        """An event that repeats call ``key`` (its ``.done``, its done item, the final response's
        item): it ends the call when still open, ``args`` standing in when no fragment carried any.
        Then what it says must be what was judged, byte for byte, else the answer fails closed: the
        SDK's final response and its events would show a call the rules never saw."""
        call = self._calls[key]
        added = "{}"
        if call.kind in _ACTION_ITEMS and call.args is None:  # its added item showed an action too
            added, call.shown = call.shown, args if isinstance(args, str) else call.shown
        events = self._end(key, call.shown if call.kind in _ACTION_ITEMS else args)
        same = ((kind is None or kind == call.kind) and (name is None or name == call.name)
                and (args is None or args == call.args) and added in ("{}", call.args))
        return events if same else [Unvetted(f"a {call.kind} repeated otherwise than it was checked"), *events]

    def _end(self, key: str, final: Any) -> list[Event]:
        """End ``key`` once; the final arguments stand in when no fragment carried any."""
        call = self._calls.get(key)
        if call is None or call.args is not None:
            return []
        if call.parts:
            call.args = "".join(call.parts)
            return [ToolCallEnd(key)]
        call.args = final if isinstance(final, str) else ""
        return [ToolCallArgsDelta(key, call.args), ToolCallEnd(key)] if call.args else [ToolCallEnd(key)]

    # -- what the client has ------------------------------------------------------------------
    def note_sent(self, frame: Frame) -> None:
        ev = self._decoded.take(frame.raw)
        if ev is None:
            ev = _load(frame.raw)
        if ev is None:
            return
        seq = ev.get("sequence_number")
        if isinstance(seq, int):
            self._seq = max(self._seq, seq)
        t = ev.get("type")
        index = ev.get("output_index")
        it = self._items.get(index) if isinstance(index, int) else None
        if self._unsettled and t not in _TEXT_DELTAS and t not in _ARGS_DELTA:
            self._settle()
        if t in _LIFECYCLE:
            self._preamble = True
        elif t in _TERMINAL:
            self._ended = True
        elif t == "response.output_item.added" and isinstance(index, int):
            self._items[index] = _Item(dict(ev.get("item") or {}))
        elif t == "response.output_item.done" and isinstance(index, int):
            self._items[index] = _Item(dict(ev.get("item") or {}), open=False)
        elif it is None:
            return
        elif t == "response.content_part.added":
            it.parts.append(_Part(dict(ev.get("part") or {"type": "output_text", "text": ""})))
        elif t in _ARGS_DELTA:
            name = _TOOL_ITEMS.get(str(it.item.get("type")), "arguments")
            self._pending(it.item, name, str(ev.get("delta", "")))
        elif t in _ARGS_DONE:
            name = _TOOL_ITEMS.get(str(it.item.get("type")), "arguments")
            it.item[name] = ev.get(name, str(it.item.get(name, "")))
            it.args_done = True
        else:
            self._note_part(it, str(t), ev)

    def _pending(self, holder: dict[str, Any], name: str, delta: str) -> None:
        """``delta`` to be appended to ``holder[name]`` (the name stays: only a non-delta event,
        which settles first, can change the holder's type)."""
        waiting = self._unsettled.get(id(holder))
        if waiting is None:
            self._unsettled[id(holder)] = (holder, name, [delta])  # (holding it keeps its id unique)
        else:
            waiting[2].append(delta)

    def _settle(self) -> None:
        for holder, name, deltas in self._unsettled.values():
            holder[name] = str(holder.get(name, "")) + "".join(deltas)
        self._unsettled.clear()

    def _note_part(self, it: _Item, t: str, ev: dict[str, Any]) -> None:
        ci = ev.get("content_index")
        if not isinstance(ci, int) or not 0 <= ci < len(it.parts):
            return
        part = it.parts[ci]
        name = "refusal" if part.part.get("type") == "refusal" else "text"
        if t in _TEXT_DELTAS:
            self._pending(part.part, name, str(ev.get("delta", "")))
        elif t in ("response.output_text.done", "response.refusal.done"):
            part.part[name] = ev.get(name, part.part.get(name, ""))
            part.text_done = True
        elif t == "response.content_part.done":
            part.part, part.open = dict(ev.get("part") or part.part), False

    def outgoing(self, frame: Frame) -> Frame:
        """The frames that repeat the answer (``*.done``, items, the terminal response) carry what the
        client was sent: after a redaction, the redacted text, without logprobs."""
        frame = self._rewritten(frame)
        self.note_sent(frame)
        return frame

    def _rewritten(self, frame: Frame) -> Frame:
        if self._decoded.holds(frame.raw):  # a delta: it repeats nothing
            return frame
        ev = _load(frame.raw)
        t = ev.get("type") if ev else None
        if ev is None or t not in _REPEATS:
            return frame
        oi = ev.get("output_index")
        if t in ("response.output_text.done", "response.refusal.done"):
            name = "refusal" if t == "response.refusal.done" else "text"
            if (text := self._client_text(oi, ev.get("content_index"))) is not None:
                ev[name] = text
            if "logprobs" in ev:
                ev["logprobs"] = []
        elif t == "response.content_part.done" and isinstance(ev.get("part"), dict):
            rt.rewrite_part(ev["part"], self._client_text(oi, ev.get("content_index")))
        elif t == "response.output_item.done" and isinstance(ev.get("item"), dict):
            rt.rewrite_item(ev["item"], lambda ci: self._client_text(oi, ci))
        elif isinstance(response := ev.get("response"), dict):
            for n, item in enumerate(response.get("output") or []):
                if isinstance(item, dict):
                    rt.rewrite_item(item, lambda ci, n=n: self._client_text(n, ci))
        return Frame(f"event: {t}\ndata: {dumps(ev)}\n\n".encode(), frame.events)

    def _client_text(self, oi: Any, ci: Any) -> str | None:
        self._settle()
        it = self._items.get(oi) if isinstance(oi, int) else None
        if it is None or not isinstance(ci, int) or ci < 0:
            return None
        if ci < len(it.parts):
            part = it.parts[ci].part
        else:  # an item the client got whole (its ``output_item.done``, as rewritten)
            content = it.item.get("content")
            if not isinstance(content, list) or ci >= len(content) or not isinstance(content[ci], dict):
                return None
            part = content[ci]
        value = part.get("refusal" if part.get("type") == "refusal" else "text")
        return value if isinstance(value, str) else None

    # -- rendering -----------------------------------------------------------------------------
    def _emit(self, out: list[str], t: str, **fields: Any) -> None:
        self._seq += 1
        out.append(f"event: {t}\ndata: {dumps({'type': t, **fields, 'sequence_number': self._seq})}\n\n")

    def _head(self, status: str) -> dict[str, Any]:
        base = self._response or {"id": "resp_guardproxy", "object": "response", "created_at": 0, "model": "",
                                  "instructions": None, "metadata": {}, "parallel_tool_calls": True,
                                  "tool_choice": "auto", "tools": [], "temperature": None, "top_p": None}
        return {**base, "status": status, "output": [], "error": None, "incomplete_details": None,
                "usage": None}

    def _begin(self, out: list[str]) -> None:
        """The preamble the client needs before anything else, when it has none yet."""
        if not self._preamble:
            self._preamble = True
            self._emit(out, "response.created", response=self._head("in_progress"))
            self._emit(out, "response.in_progress", response=self._head("in_progress"))

    def render_replaced(self, replaced: Replaced) -> bytes:
        if self._ended:
            return b""
        out: list[str] = []
        self._begin(out)
        self._emit(out, REPLACED_EVENT, **{k: v for k, v in replaced.payload().items() if k != "type"})
        return "".join(out).encode()

    def render_tail(self, message: AssistantMessage, finish: FinishKind, replaced: Replaced | None) -> bytes:
        if self._ended:  # the client already has a terminal event: nothing may follow it
            return b""
        out: list[str] = [self.render_replaced(replaced).decode()] if replaced else []
        self._begin(out)
        self._settle()
        for index in sorted(self._items):
            if self._items[index].open:
                self._close_item(out, index)
        if message.text:
            self._add_message(out, message.text)
        for call in message.tool_calls:
            self._add_tool(out, call)
        response = self._head("completed")
        response.update(_ending(finish), output=[self._items[i].item for i in sorted(self._items)],
                        usage=self._usage)
        terminal = "response.completed" if finish == "normal" else "response.incomplete"
        self._emit(out, terminal, response=response)
        self._ended = True
        return "".join(out).encode()

    def _close_item(self, out: list[str], index: int) -> None:
        it = self._items[index]
        item, iid = it.item, it.item.get("id", "")
        if item.get("type") == "message":
            for ci, p in enumerate(it.parts):
                if not p.open:
                    continue
                refusal = p.part.get("type") == "refusal"
                name = "refusal" if refusal else "text"
                if not p.text_done:
                    extra: dict[str, Any] = {} if refusal else {"logprobs": []}
                    self._emit(out, f"response.{'refusal' if refusal else 'output_text'}.done", item_id=iid,
                               output_index=index, content_index=ci, **{name: p.part.get(name, "")}, **extra)
                self._emit(out, "response.content_part.done", item_id=iid, output_index=index,
                           content_index=ci, part=p.part)
                p.open = False
            item["content"] = [p.part for p in it.parts]
        elif item.get("type") in _TOOL_ITEMS and not it.args_done:
            name = _TOOL_ITEMS[str(item["type"])]
            done = "function_call_arguments" if name == "arguments" else "custom_tool_call_input"
            self._emit(out, f"response.{done}.done", item_id=iid, output_index=index,
                       **{name: item.get(name, "")})
        if "status" in item:
            item["status"] = "completed"
        self._emit(out, "response.output_item.done", output_index=index, item=item)
        it.open = False

    def _next_index(self) -> int:
        return max(self._items, default=-1) + 1

    def _add_message(self, out: list[str], text: str) -> None:
        index = self._next_index()
        iid = f"msg_guardproxy_{index}"
        added = _message_item(iid, "", "in_progress")
        self._emit(out, "response.output_item.added", output_index=index, item=added)
        where = {"item_id": iid, "output_index": index, "content_index": 0}
        self._emit(out, "response.content_part.added", **where, part={"type": "output_text", "text": "",
                                                                      "annotations": []})
        self._emit(out, "response.output_text.delta", **where, delta=text, logprobs=[])
        self._emit(out, "response.output_text.done", **where, text=text, logprobs=[])
        item = _message_item(iid, text, "completed")
        self._emit(out, "response.content_part.done", **where, part=item["content"][0])
        self._emit(out, "response.output_item.done", output_index=index, item=item)
        self._items[index] = _Item(item, open=False)

    def _add_tool(self, out: list[str], call: ToolCall) -> None:
        index = self._next_index()
        if call.name in _ACTION_ITEMS:
            iid = f"{call.name}_guardproxy_{index}"
            added = _tool_item(call, False, iid, "in_progress")
            self._emit(out, "response.output_item.added", output_index=index, item=added)
            item = _tool_item(call, False, iid, "completed")
            self._emit(out, "response.output_item.done", output_index=index, item=item)
            self._items[index] = _Item(item, open=False, args_done=True)
            return
        custom = call.call_id in self._custom_calls
        iid = f"{'ctc' if custom else 'fc'}_guardproxy_{index}"
        name = _TOOL_ITEMS["custom_tool_call" if custom else "function_call"]
        done = "custom_tool_call_input" if custom else "function_call_arguments"
        added = _tool_item(ToolCall(call.call_id, call.name, ""), custom, iid, "in_progress")
        self._emit(out, "response.output_item.added", output_index=index, item=added)
        self._emit(out, f"response.{done}.delta", item_id=iid, output_index=index, delta=call.arguments)
        self._emit(out, f"response.{done}.done", item_id=iid, output_index=index, **{name: call.arguments})
        item = _tool_item(call, custom, iid, "completed")
        self._emit(out, "response.output_item.done", output_index=index, item=item)
        self._items[index] = _Item(item, open=False, args_done=True)

    def render_error(self, message: str, kind: ErrorKind) -> bytes:
        if self._ended:
            return b""
        out: list[str] = []
        self._begin(out)
        self._settle()
        code = _FAILED_CODES.get(kind, "invalid_prompt")
        self._emit(out, "error", code=code, message=message, param=None)
        response = self._head("failed")
        response.update(output=[self._items[i].item for i in sorted(self._items)], usage=self._usage,
                        error={"code": code, "message": message})
        self._emit(out, "response.failed", response=response)
        self._ended = True
        return "".join(out).encode()

    def retext(self, frame: Frame, texts: dict[Lane, str]) -> bytes:
        self.rewrites = True
        sse = parse_fields(frame.raw)
        ev = loads(sse.data)
        ev["delta"] = texts[(0, "text")]
        if "logprobs" in ev:
            ev["logprobs"] = []
        return f"event: {sse.event or ev.get('type')}\ndata: {dumps(ev)}\n\n".encode()
