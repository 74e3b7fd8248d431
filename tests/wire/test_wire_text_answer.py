"""The common chat body read in one look (``openai_chat._text_answer``) gives exactly what the full
readers give (``message_of``, ``events_of``), or declines.

A message or an event list that differed would be a check run on other text than the client gets.
Bodies are drawn around the shape the one look takes: known and unknown fields at each level, one
choice or several, any index, logprobs, every message field with empty, null, text and object values
(an empty legacy ``function_call`` is a call), content as text or parts, finish reasons of any type.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from proxy.wire.base import loads_output
from proxy.wire.openai_chat import OpenAIChat, _text_answer

WIRE = OpenAIChat()
_VALUES = st.one_of(st.none(), st.just(""), st.just(0), st.just(False), st.just([]), st.just({}),
                    st.text(max_size=12), st.just(["x"]), st.just({"name": "f", "arguments": "{}"}),
                    st.just([{"type": "text", "text": "part"}]), st.integers(-2, 3), st.just(True))
_MESSAGE_KEYS = st.sampled_from(["role", "content", "refusal", "reasoning", "reasoning_content", "tool_calls",
                                 "function_call", "annotations", "audio", "name", "tool_call_id", "odd"])
_CHOICE_KEYS = st.sampled_from(["index", "finish_reason", "logprobs", "native_finish_reason", "delta", "odd"])
_BODY_KEYS = st.sampled_from(["id", "object", "created", "model", "usage", "citations"])


@st.composite
def _message(draw: st.DrawFn) -> Any:
    if draw(st.integers(0, 9)) == 0:
        return draw(_VALUES)
    msg = {"role": draw(st.sampled_from(["assistant", None, "", 3])), "content": draw(_VALUES)}
    for key in draw(st.lists(_MESSAGE_KEYS, max_size=3)):
        msg[key] = draw(_VALUES)
    return msg


@st.composite
def _choice(draw: st.DrawFn) -> Any:
    choice: dict[str, Any] = {"index": draw(st.sampled_from([0, 0, 1, -1, "0", True, None])),
                              "message": draw(_message()), "finish_reason": draw(_VALUES)}
    for key in draw(st.lists(_CHOICE_KEYS, max_size=2)):
        choice[key] = draw(_VALUES)
    if draw(st.booleans()):
        del choice["index"]
    return choice


@st.composite
def _body(draw: st.DrawFn) -> Any:
    body: dict[str, Any] = {"id": "c", "object": "chat.completion", "model": "m",
                            "choices": draw(st.lists(_choice(), min_size=0, max_size=2))}
    for key in draw(st.lists(_BODY_KEYS, max_size=2)):
        body[key] = draw(_VALUES)
    if draw(st.integers(0, 9)) == 0:
        body["choices"] = draw(_VALUES)
    return body


_MOSTLY_EMPTY = st.one_of(st.none(), st.just(""), st.just([]), st.just({}), st.just(0), st.just(False), _VALUES)


@st.composite
def _near_common(draw: st.DrawFn) -> Any:
    """One choice, mostly what the one look takes, now and then one thing it must not."""
    msg: dict[str, Any] = {"role": draw(st.sampled_from(["assistant", "assistant", None, 1])),
                           "content": draw(st.one_of(st.text(max_size=12), st.none(), _VALUES))}
    for key in draw(st.lists(_MESSAGE_KEYS, max_size=3)):
        msg[key] = draw(_MOSTLY_EMPTY)
    choice: dict[str, Any] = {"index": draw(st.sampled_from([0, 0, 0, 2, "0", None])), "message": msg,
                              "logprobs": draw(st.sampled_from([None, None, None, {}, {"content": None}])),
                              "finish_reason": draw(st.one_of(st.sampled_from(["stop", "length", None, ""]),
                                                              _VALUES))}
    if draw(st.integers(0, 4)) == 0:
        choice[draw(_CHOICE_KEYS)] = draw(_MOSTLY_EMPTY)
    body = {"id": "c", "object": "chat.completion", "model": "m", "choices": [choice]}
    if draw(st.integers(0, 4)) == 0:
        body[draw(_BODY_KEYS)] = draw(_MOSTLY_EMPTY)
    return body


def _full(data: Any) -> Any:
    try:
        return WIRE.message_of(data), WIRE.events_of(data)
    except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
        return type(exc)


@settings(max_examples=1500, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(_body())
def test_the_one_look_reads_as_the_full_readers_or_declines(body: Any) -> None:
    data = loads_output(json.dumps(body).encode())
    quick = _text_answer(data)
    if quick is not None:
        assert quick == _full(data)


@settings(max_examples=1500, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(_near_common())
def test_near_the_common_shape_too(body: Any) -> None:
    data = loads_output(json.dumps(body).encode())
    quick = _text_answer(data)
    if quick is not None:
        assert quick == _full(data)


def test_the_common_bodies_take_the_one_look() -> None:
    """OpenAI's own shape (null refusal, empty annotations), an empty answer, a missing index."""
    for message in ({"role": "assistant", "content": "Hello.", "refusal": None, "annotations": []},
                    {"role": "assistant", "content": None}, {"content": ""}):
        body = {"id": "c", "object": "chat.completion", "created": 1, "model": "m", "usage": {"total_tokens": 3},
                "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": "stop"}]}
        data = loads_output(json.dumps(body).encode())
        quick = _text_answer(data)
        assert quick is not None and quick == _full(data)
        assert WIRE.decode_answer(json.dumps(body).encode()) == quick


def test_what_the_one_look_leaves_to_the_full_readers() -> None:
    base = {"index": 0, "finish_reason": "stop"}
    for choice in ({**base, "message": {"role": "assistant", "content": "x", "refusal": "no"}},
                   {**base, "message": {"role": "assistant", "content": "x", "function_call": {}}},
                   {**base, "message": {"role": "assistant", "content": [{"type": "text", "text": "x"}]}},
                   {**base, "message": {"role": "assistant", "content": "x"}, "logprobs": {"content": []}},
                   {**base, "message": {"role": "assistant", "content": "x", "odd": None}},
                   {**base, "index": 1, "message": {"role": "assistant", "content": "x"}, "delta": {}}):
        assert _text_answer({"choices": [choice]}) is None
    assert _text_answer({"choices": [], "citations": None}) is None
