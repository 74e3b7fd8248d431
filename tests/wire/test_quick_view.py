"""``WireFormat.quick_view`` (a partial decode of the request) reads what ``parse_request`` reads of the
whole decode, or declines.

The guards arm on the view: a system prompt, a last user text or a history that differed between the
two would be a check run on another request than the one the upstream answers. So for every body
drawn (duplicate keys, roles of any type, content as parts, null and missing fields, escapes, bodies
that are not JSON or not UTF-8), either the quick view equals the whole one, history included, or it
is None and the whole path decides (and refuses exactly what it refused before).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.common import request_body
from proxy.wire.anthropic import AnthropicMessages
from proxy.wire.base import BadRequest, JsonBody, WireFormat, load_json_body
from proxy.wire.gemini import Gemini
from proxy.wire.openai_chat import OpenAIChat
from proxy.wire.openai_responses import OpenAIResponses
from tests.apis import request_for

WIRES: dict[str, WireFormat] = {"chat": OpenAIChat(), "anthropic": AnthropicMessages(),
                                "responses": OpenAIResponses(), "gemini": Gemini()}


def _whole(wire: WireFormat, raw: bytes) -> tuple[Any, ...] | None:
    """The view of the whole decode as plain values, None when that path refuses the body."""
    try:
        data = load_json_body(raw)
        if wire.name != "gemini" and not isinstance(data.get("stream", False), (bool, type(None))):
            return None  # the edge refuses it (Gemini's stream is in its URL)
        if wire.name == "openai_responses" and data.get("background") not in (None, False):
            return None  # the edge refuses it
        view = wire.parse_request(data, stream=False)
    except BadRequest:
        return None
    return view.model, view.stream, view.system_prompt, view.last_user_text, list(view.history)


def _agrees(wire: WireFormat, raw: bytes) -> bool:
    """Whether the quick view equals the whole one, or declined. Returns whether it answered."""
    quick = wire.quick_view(JsonBody(raw), stream=False)
    whole = _whole(wire, raw)
    if quick is None:
        return False
    assert whole is not None, f"the quick view accepted a body the whole path refuses: {raw[:200]!r}"
    assert (quick.model, quick.stream, quick.system_prompt, quick.last_user_text, list(quick.history)) == whole
    return True


_HISTORIES: dict[str, list[Any]] = {
    "chat": [{"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": '{"file_path": "/w/a"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "x = 1"}],
    "anthropic": [{"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Read",
                                                     "input": {"file_path": "/w/a"}}]},
                  {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}]}],
    "responses": [{"type": "function_call", "call_id": "c1", "name": "read_file", "arguments": '{"file_path": "/w/a"}'},
                  {"type": "function_call_output", "call_id": "c1", "output": "x = 1"}],
    "gemini": [{"role": "model", "parts": [{"functionCall": {"name": "read_file", "args": {"file_path": "/w/a"}}}]},
               {"role": "function", "parts": [{"functionResponse": {"name": "read_file", "response": {"ok": 1}}}]}],
}


@pytest.mark.parametrize("api", list(WIRES))
@pytest.mark.parametrize("stream", [False, True])
def test_the_quick_view_answers_for_ordinary_requests(api: str, stream: bool) -> None:
    _, body = request_for(api, stream=stream, system="Be brief.", user="hi", history=_HISTORIES[api])
    assert _agrees(WIRES[api], json.dumps(body).encode())


def test_the_agent_bench_request_takes_the_quick_view() -> None:
    assert _agrees(WIRES["chat"], request_body("bench-agent", stream=False))


@pytest.mark.parametrize("raw", [
    b'{"model":"a","messages":[{"role":"system","content":"X"}],"messages":[{"role":"system","content":"Y"}]}',
    b'{"model":"a","messages":[{"role":"system","content":"X","content":"Y","role":"user"}],"system":"S"}',
    b'{"model":"a","model":"b","messages":[]}',
    b'{"model":"m","x":"\xff\xfe","messages":[]}',
    b'{"model":"m","x":"\\ud800","messages":[]}',
    b'{"model":"m","x":NaN,"messages":[]}',
    b'\xef\xbb\xbf{"model":"m","messages":[]}',
    b'{"model":"m","x":1e999,"messages":[]}',
    b'{"model":"m","messages":[1]}',
    b'{"model":"m","messages":null}',
    b'{"model":"m","messages":[],"stream":"false"}',
    b'{"model":"m","messages":[],"system":null}',
    b'{"model":"m","messages":[{"role":1,"content":"x"}]}',
    b'{"model":"m","messages":[{"role":"user"}]}',
    b'{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a"},{"text":2},"x"]}]}',
    b'{"model":"m","messages":[{"role":"developer","content":[{"type":"text","text":"dev"}]}]}',
    b'[1,2]',
    b'{"model":"m","messages":[]} x',
    b'{"model":"m","messages":' + b"[" * 3000 + b"]" * 3000 + b"}",
])
@pytest.mark.parametrize("api", list(WIRES))
def test_odd_bodies_get_the_same_view_or_the_whole_path(api: str, raw: bytes) -> None:
    _agrees(WIRES[api], raw)


_TEXT = st.text(alphabet=st.sampled_from("ab \n\"\\é\u2028😀"), max_size=6)
_SCALAR = st.one_of(st.none(), st.booleans(), st.integers(-2, 2), _TEXT)
_DICT_PART = st.fixed_dictionaries({"text": st.one_of(_TEXT, _TEXT, st.integers())}, optional={
    "type": st.sampled_from(["text", "text", "image", "tool_result", 1]), "thought": st.one_of(st.booleans(), st.none())})
_PART = st.one_of(_DICT_PART, _DICT_PART, _DICT_PART, _SCALAR)
_CONTENT = st.one_of(_SCALAR, st.lists(_PART, max_size=3))
_ROLE = st.one_of(st.sampled_from(["system", "developer", "user", "assistant", "tool"]), _SCALAR)
_ROLES = {"chat": ["system", "developer", "user", "assistant", "tool", "System", "DEVELOPER"],
          "anthropic": ["user", "assistant", "system", "System"],
          "responses": ["system", "developer", "user", "assistant", "Developer", "\u017fystem"],
          "gemini": ["user", "model", "function"]}
"""Each API's roles, and some in another case or fold (read as the system role they fold onto)."""
_LIST_KEY = {"chat": "messages", "anthropic": "messages", "responses": "input", "gemini": "contents"}


def _message(roles: list[Any], odd: bool = True) -> st.SearchStrategy[dict[str, Any]]:
    """A message with one of ``roles`` (the user's and the system's most often); ``odd``: also roles
    and parts that the API refuses or that are not objects."""
    common = [r for r in roles if r in ("user", "system", "developer")] * 3
    parts = st.one_of(st.lists(_PART, max_size=3), _SCALAR) if odd else st.lists(_DICT_PART, max_size=3)
    content = st.one_of(_TEXT, _CONTENT) if odd else st.one_of(_TEXT, st.lists(_DICT_PART, max_size=3))
    return st.fixed_dictionaries({"role": st.sampled_from([*roles, *common, *([None, 7, ""] if odd else [])]),
                                  "content": content}, optional={
        "name": _TEXT, "type": st.sampled_from(["message", "function_call", None]), "parts": parts})


_SYSTEM = st.one_of(_CONTENT, st.fixed_dictionaries({}, optional={"parts": st.lists(_PART, max_size=2)}))
_OK_SYSTEM = st.one_of(_TEXT, st.fixed_dictionaries({"parts": st.lists(_DICT_PART, max_size=2)}))
_MESSAGE = st.one_of(_message(_ROLES["chat"] + _ROLES["gemini"]), _SCALAR,
                     st.fixed_dictionaries({}, optional={"content": _CONTENT, "parts": st.lists(_PART, max_size=2)}))
_ANY = st.fixed_dictionaries({}, optional={
    "model": st.one_of(_TEXT, _SCALAR), "messages": st.one_of(_SCALAR, st.lists(_MESSAGE, max_size=5)),
    "input": st.one_of(_SCALAR, st.lists(_MESSAGE, max_size=5)), "contents": st.one_of(_SCALAR, st.lists(_MESSAGE, max_size=5)),
    "stream": _SCALAR, "system": _SYSTEM, "tools": st.lists(_SCALAR, max_size=2), "instructions": _SCALAR,
    "background": _SCALAR, "systemInstruction": _SYSTEM, "system_instruction": _SYSTEM, "prompt": _SCALAR})


def _ordinary(api: str) -> st.SearchStrategy[dict[str, Any]]:
    """Mostly well-formed requests of ``api`` (roles of its own, an odd one now and then)."""
    listed = st.lists(st.one_of(_message(_ROLES[api], odd=False), _message(_ROLES[api], odd=False),
                                _message(_ROLES[api])), max_size=5)
    return st.fixed_dictionaries({"model": _TEXT, _LIST_KEY[api]: st.one_of(listed, _TEXT) if api == "responses" else listed},
                                 optional={"stream": st.one_of(st.booleans(), st.none()), "system": _SYSTEM,
                                           "tools": st.lists(_SCALAR, max_size=2),
                                           "instructions": st.one_of(_TEXT, st.none()), "systemInstruction": _OK_SYSTEM,
                                           "system_instruction": _OK_SYSTEM,
                                           "background": st.sampled_from([False, None, True])})


def _with_duplicates(body: dict[str, Any], again: dict[str, Any]) -> bytes:
    """``body`` as JSON with ``again``'s keys written a second time after it (the last one counts)."""
    first = json.dumps(body)
    if not again:
        return first.encode()
    rest = json.dumps(again)[1:]
    return (first[:-1] + ("," if body else "") + rest).encode()


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
@pytest.mark.parametrize("api", list(WIRES))
def test_drawn_bodies_get_the_same_view_or_the_whole_path(api: str, data: st.DataObject) -> None:
    body = data.draw(st.one_of(_ordinary(api), _ordinary(api), _ANY))
    again = data.draw(st.one_of(st.just({}), _ordinary(api), _ANY))
    _agrees(WIRES[api], _with_duplicates(body, again))


def test_a_repeated_system_prompt_is_read_once_and_each_prompt_keeps_its_own_text() -> None:
    """Chat's quick view keeps system prompts' texts by their raw JSON: the same prompt gives the same
    ``str`` (no second decode, its hash already known), another prompt (or the same text spelt
    with an escape) gets its own, and a prompt past the size bound is read every time."""
    chat = OpenAIChat()

    def prompt_of(system: Any) -> str:
        body = {"model": "m", "messages": [{"role": "system", "content": system}, {"role": "user", "content": "hi"}]}
        view = chat.quick_view(JsonBody(json.dumps(body).encode()), stream=False)
        assert view is not None
        return view.system_prompt

    first, again = prompt_of("You are terse. " * 100), prompt_of("You are terse. " * 100)
    assert first == again == "You are terse. " * 100 and first is again
    assert prompt_of("You are kind.") == "You are kind."
    assert prompt_of([{"type": "text", "text": "part one"}, {"type": "text", "text": "two"}]) == "part one\ntwo"
    escaped = {"model": "m", "messages": [{"role": "system", "content": "caf\\u00e9"}]}
    view = chat.quick_view(JsonBody(json.dumps(escaped).encode()), stream=False)
    assert view is not None and view.system_prompt == "caf\\u00e9"
    raw = b'{"model": "m", "messages": [{"role": "system", "content": "caf\\u00e9"}]}'
    view = chat.quick_view(JsonBody(raw), stream=False)
    assert view is not None and view.system_prompt == "caf\u00e9"
    huge = "x" * 70_000
    assert prompt_of(huge) == huge and prompt_of(huge) is not prompt_of(huge)
