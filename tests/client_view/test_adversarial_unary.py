"""A hostile upstream's whole (non-streamed) answers: every string a client can print or act on is checked.

The whole-answer shortcut (``proxy.core.whole_answer``) relays a body unchanged when the checks pass the
events its decoder gives; a string the decoder does not turn into an event is relayed unchecked. Each
body here hides a credential where an official SDK (or a client printing the JSON) still shows it:
- a chat tool call of ``type: custom`` that also carries a decoy ``function`` (the SDK reads the call
  by its ``type``: ``custom.input`` is what the agent runs), or a ``custom`` with a decoy
  ``arguments`` beside its ``input``;
- a list item that is not an object (a string, a number, a nested list) where the API puts objects:
  Anthropic ``content``, chat ``tool_calls`` and ``annotations``, Gemini ``candidates``, Responses
  ``output`` (the SDKs build their objects without validating, so the item stays in what they return);
- a text field holding an object or a list (Anthropic ``text`` / ``thinking``, chat ``arguments``,
  ``transcript``, a citation's ``title``, ``top_logprobs``; Responses parts that are not a list of
  objects, parts of an unknown type).
``test_a_string_anywhere_in_a_whole_body_is_checked`` puts the credential at every place of a rich body
of each API (as a new key, in place of a value, as an object or list in place of a string, appended to
every list) and asks the decoder for it.

Also, streamed: a chat tool call's name continued in a later delta (the SDK's stream helper joins the
pieces into a name the proxy never read).

The proxy runs under uvicorn, a scripted upstream answers with exact bytes, the official SDKs are the
clients; no byte of the credential may reach the client.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest

from proxy.wire.anthropic import AnthropicMessages
from proxy.wire.gemini import Gemini
from proxy.wire.openai_chat import OpenAIChat
from proxy.wire.openai_responses import OpenAIResponses
from tests.client_view.test_coverage_choices import POLICY, SECRET, assert_clean, raw_post
from tests.fakes.proxy import ProxyServer
from tests.fakes.upstream import FakeUpstream, Reply

CHAT_BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
ANTHROPIC_BODY = {"model": "m", "max_tokens": 100, "messages": [{"role": "user", "content": "hi"}]}


@pytest.fixture(scope="module")
def proxy(upstream_server: FakeUpstream) -> Iterator[ProxyServer]:
    with ProxyServer(upstream_server.url, POLICY) as p:
        yield p


def chat_body(message: dict[str, Any], finish: str = "stop") -> bytes:
    return json.dumps({"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m",
                       "choices": [{"index": 0, "message": {"role": "assistant", **message}, "logprobs": None,
                                    "finish_reason": finish}]}).encode()


def anthropic_body(content: list[Any]) -> bytes:
    return json.dumps({"id": "msg_1", "type": "message", "role": "assistant", "model": "m", "content": content,
                       "stop_reason": "end_turn", "stop_sequence": None,
                       "usage": {"input_tokens": 1, "output_tokens": 1}}).encode()


DECOY = {"name": "noop", "arguments": "{}"}
CUSTOM_CALLS = [
    {"id": "call_1", "type": "custom", "function": DECOY, "custom": {"name": "bash", "input": f"echo {SECRET}"}},
    {"id": "call_1", "type": "custom", "custom": {"name": "bash", "arguments": "{}", "input": f"echo {SECRET}"}},
    {"id": "call_1", "type": "function", "function": DECOY, "custom": {"name": "bash", "input": f"echo {SECRET}"}},
]


@pytest.mark.parametrize("call", CUSTOM_CALLS)
def test_a_chat_tool_call_is_read_by_its_type_not_by_a_decoy_beside_it(proxy: ProxyServer, upstream: FakeUpstream,
                                                                        call: dict[str, Any]) -> None:
    upstream.queue(Reply(raw_body=chat_body({"content": None, "tool_calls": [call]}, "tool_calls")))
    client = openai.OpenAI(base_url=proxy.url + "/v1", api_key="sk-test", max_retries=0)
    try:
        completion = client.chat.completions.create(**CHAT_BODY)  # type: ignore[call-overload]
        shown = completion.model_dump_json(warnings=False)
    except openai.APIStatusError as exc:  # failing closed is fine too
        shown = exc.response.text
    assert_clean(shown)


@pytest.mark.parametrize("call", CUSTOM_CALLS)
def test_a_streamed_chat_tool_call_is_read_by_its_type_not_by_a_decoy_beside_it(
        proxy: ProxyServer, upstream: FakeUpstream, call: dict[str, Any]) -> None:
    head = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    frames = [{**head, "choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": [{"index": 0, **call}]},
                                    "logprobs": None, "finish_reason": None}]},
              {**head, "choices": [{"index": 0, "delta": {}, "logprobs": None, "finish_reason": "tool_calls"}]}]
    upstream.queue(Reply(raw_frames=[f"data: {json.dumps(f)}\n\n".encode() for f in frames] + [b"data: [DONE]\n\n"]))
    _, raw = raw_post(proxy, "/v1/chat/completions", {**CHAT_BODY, "stream": True})
    assert_clean(raw)


@pytest.mark.parametrize("item", [SECRET, [SECRET], {"nested": [[SECRET]]}])
def test_an_anthropic_content_item_that_is_not_a_block_is_checked(proxy: ProxyServer, upstream: FakeUpstream,
                                                                  item: Any) -> None:
    upstream.queue(Reply(raw_body=anthropic_body([{"type": "text", "text": "Fine."}, item])))
    client = anthropic.Anthropic(base_url=proxy.url, api_key="sk-ant", max_retries=0)
    try:
        message = client.messages.create(**ANTHROPIC_BODY)  # type: ignore[call-overload]
        shown = message.model_dump_json(warnings=False)
    except anthropic.APIStatusError as exc:
        shown = exc.response.text
    assert_clean(shown)
    upstream.queue(Reply(raw_body=anthropic_body([{"type": "text", "text": "Fine."}, item])))
    _, raw = raw_post(proxy, "/v1/messages", ANTHROPIC_BODY)
    assert_clean(raw)


@pytest.mark.parametrize("body", [
    chat_body({"content": "Fine.", "tool_calls": [SECRET]}),
    chat_body({"content": "Fine.", "annotations": [SECRET]}),
    chat_body({"content": "Fine.", "reasoning_details": [SECRET]}),
])
def test_a_chat_list_item_that_is_not_an_object_is_checked(proxy: ProxyServer, upstream: FakeUpstream,
                                                           body: bytes) -> None:
    upstream.queue(Reply(raw_body=body))
    _, raw = raw_post(proxy, "/v1/chat/completions", CHAT_BODY)
    assert_clean(raw)


# -- the decoders alone: a string outside every object still becomes an event ----------------------------
def _strings(events: tuple[Any, ...]) -> str:
    return "\n".join(str(getattr(e, name, "")) for e in events for name in ("text", "fragment", "name", "what"))


@pytest.mark.parametrize(("wire", "body"), [
    (AnthropicMessages(), anthropic_body([SECRET])),
    (OpenAIChat(), chat_body({"content": "x", "tool_calls": [SECRET]})),
    (OpenAIChat(), chat_body({"content": None, "tool_calls": [CUSTOM_CALLS[0]]}, "tool_calls")),
    (OpenAIChat(), chat_body({"content": None, "tool_calls": [CUSTOM_CALLS[1]]}, "tool_calls")),
    (OpenAIChat(), chat_body({"content": "x", "tool_calls": SECRET})),
    (OpenAIChat(), chat_body({"content": None, "tool_calls": [{"id": "c", "type": "function", "function": SECRET}]})),
    (OpenAIChat(), chat_body({"content": None, "function_call": SECRET})),
    (Gemini(), json.dumps({"candidates": [{"index": 0, "content": {"role": "model", "parts": SECRET}}]}).encode()),
    (Gemini(), json.dumps({"candidates": [{"index": 0, "content": {"role": "model", "parts": [{"text": "x"}, SECRET]},
                                           "finishReason": "STOP"}]}).encode()),
    (OpenAIResponses(), json.dumps({"id": "r", "object": "response", "status": "completed", "model": "m",
                                    "output": [SECRET]}).encode()),
])
def test_every_string_of_a_whole_body_reaches_the_checks(wire: Any, body: bytes) -> None:
    """The string is an event's text, or the body fails closed (``Unvetted``, or an error: unreadable)."""
    try:
        events = wire.decode_events(body)
    except (TypeError, ValueError):
        return
    assert SECRET in _strings(events) or any(type(e).__name__ == "Unvetted" for e in events), events


# -- every place of a rich body ------------------------------------------------------------------------------
RICH: dict[str, tuple[Any, dict[str, Any]]] = {
    "chat": (OpenAIChat(), {"id": "c", "object": "chat.completion", "created": 1, "model": "m", "choices": [{
        "index": 0, "message": {
            "role": "assistant", "content": "hi", "refusal": None, "reasoning_content": "r",
            "annotations": [{"type": "url_citation", "url_citation": {"title": "t", "url": "u", "start_index": 0,
                                                                      "end_index": 1}}],
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
            "audio": {"id": "a", "data": "ZGF0YQ==", "expires_at": 1, "transcript": "tr"}},
        "logprobs": {"content": [{"token": "hi", "logprob": -1, "bytes": [104, 105],
                                  "top_logprobs": [{"token": "hi", "logprob": -1, "bytes": [104, 105]}]}]},
        "finish_reason": "stop"}], "usage": {"prompt_tokens": 1}}),
    "anthropic": (AnthropicMessages(), {"id": "m", "type": "message", "role": "assistant", "model": "c", "content": [
        {"type": "text", "text": "hi", "citations": [{"type": "char_location", "cited_text": "x", "document_index": 0}]},
        {"type": "thinking", "thinking": "t", "signature": "s"},
        {"type": "tool_use", "id": "t1", "name": "f", "input": {"a": "b"}},
        {"type": "server_tool_use", "id": "s1", "name": "web_search", "input": {"query": "q"}}],
        "stop_reason": "end_turn", "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}}),
    "gemini": (Gemini(), {"candidates": [{"index": 0, "content": {"role": "model", "parts": [
        {"text": "hi"}, {"text": "th", "thought": True}, {"functionCall": {"name": "f", "args": {"a": "b"}}},
        {"executableCode": {"language": "PYTHON", "code": "x"}}]}, "finishReason": "STOP",
        "citationMetadata": {"citationSources": [{"uri": "u"}]}}], "usageMetadata": {"promptTokenCount": 1},
        "modelVersion": "g"}),
    "responses": (OpenAIResponses(), {"id": "r", "object": "response", "created_at": 1, "status": "completed",
                                      "model": "m", "usage": {"input_tokens": 1}, "output": [
        {"type": "reasoning", "id": "rs", "summary": [{"type": "summary_text", "text": "s"}]},
        {"type": "message", "id": "m1", "role": "assistant", "status": "completed", "content": [
            {"type": "output_text", "text": "hi", "annotations": [
                {"type": "url_citation", "url": "u", "title": "t", "start_index": 0, "end_index": 1}]}]},
        {"type": "function_call", "id": "f1", "call_id": "c1", "name": "f", "arguments": "{}", "status": "completed"},
        {"type": "custom_tool_call", "id": "f2", "call_id": "c2", "name": "g", "input": "x"}]}),
}
TEXTLESS = frozenset({"id", "object", "created", "created_at", "model", "modelVersion", "status", "call_id", "usage",
                      "usageMetadata", "index", "finish_reason", "finishReason", "stop_reason", "stop_sequence",
                      "expires_at", "logprob", "bytes", "signature", "start_index", "end_index", "document_index",
                      "role", "language", "thought", "type", "data"})
"""Fields that carry no text (ids, enums, numbers, usage, opaque blobs: audio ``data``): a hostile upstream
can put a string there, which no check reads (a documented limit, not what this test is about)."""


def _places(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    yield path, value
    children = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in children:
        yield from _places(child, (*path, key))


def _with(body: dict[str, Any], path: tuple[Any, ...], change: Any) -> dict[str, Any]:
    copy = json.loads(json.dumps(body))
    if not path:
        return change(copy)  # type: ignore[no-any-return]
    at = copy
    for key in path[:-1]:
        at = at[key]
    at[path[-1]] = change(at[path[-1]])
    return copy


def _changes(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [lambda v: {**v, "zz": SECRET}, lambda v: SECRET, lambda v: [SECRET]]
    if isinstance(value, list):
        return [lambda v: [*v, SECRET], lambda v: [*v, [SECRET]], lambda v: SECRET, lambda v: {"a": SECRET}]
    return [lambda v: SECRET, lambda v: f"{v} {SECRET}", lambda v: {"a": SECRET}, lambda v: [SECRET]]


def _reaches_the_checks(wire: Any, body: dict[str, Any]) -> bool:
    try:
        events = wire.decode_events(json.dumps(body).encode())
    except (TypeError, ValueError, KeyError, AttributeError):
        return True  # unreadable: the proxy answers with the API's error
    from proxy.core.whole_answer import tool_texts
    return any(type(e).__name__ == "Unvetted" for e in events) or SECRET in _strings(events) \
        or SECRET in "\n".join(tool_texts(events))


@pytest.mark.parametrize("api", sorted(RICH))
def test_a_string_anywhere_in_a_whole_body_is_checked(api: str) -> None:
    wire, body = RICH[api]
    assert not _reaches_the_checks(wire, body)
    missed = [(".".join(map(str, path)), n) for path, value in _places(body)
              if not any(key in TEXTLESS for key in path if isinstance(key, str))
              for n, change in enumerate(_changes(value))
              if not _reaches_the_checks(wire, _with(body, path, change))]
    assert not missed


def test_two_chat_choices_with_one_index_fail_closed(proxy: ProxyServer, upstream: FakeUpstream) -> None:
    """Both choices say ``index: 0``: the SDK shows the first (``choices[0]``, whose tool call an agent
    runs), and the decoder keyed each choice's calls from 0, so the second call restarted the first
    one's and its arguments were never checked."""
    leak = {"id": "a", "type": "function", "function": {"name": "run_shell", "arguments": json.dumps(
        {"command": f"echo {SECRET}"})}}
    decoy = {"id": "b", "type": "function", "function": {"name": "noop", "arguments": "{}"}}
    choices = [{"index": 0, "message": {"role": "assistant", "content": None, "tool_calls": [call]},
                "logprobs": None, "finish_reason": "tool_calls"} for call in (leak, decoy)]
    body = json.dumps({"id": "c", "object": "chat.completion", "created": 1, "model": "m", "choices": choices})
    upstream.queue(Reply(raw_body=body.encode()))
    client = openai.OpenAI(base_url=proxy.url + "/v1", api_key="sk-test", max_retries=0)
    try:
        shown = client.chat.completions.create(**CHAT_BODY).model_dump_json(warnings=False)  # type: ignore[call-overload]
    except openai.APIStatusError as exc:
        shown = exc.response.text
    assert_clean(shown)


def test_a_streamed_chat_tool_name_continued_in_a_later_delta_fails_closed(proxy: ProxyServer,
                                                                          upstream: FakeUpstream) -> None:
    """OpenAI sends a call's name whole in its first delta; a hostile upstream continues it in a later
    one. The SDK's stream helper joins the pieces (``accumulate_delta``): the client would run a tool,
    and show a name, that the proxy never checked (it read the name of the first delta only)."""
    head = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m"}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        frame = {**head, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}
        return f"data: {json.dumps(frame)}\n\n".encode()

    call = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "run_", "arguments": ""}}
    more = {"index": 0, "function": {"name": SECRET, "arguments": "{}"}}
    upstream.queue(Reply(raw_frames=[chunk({"role": "assistant", "tool_calls": [call]}),
                                     chunk({"tool_calls": [more]}), chunk({}, "tool_calls"), b"data: [DONE]\n\n"]))
    _, raw = raw_post(proxy, "/v1/chat/completions", {**CHAT_BODY, "stream": True})
    assert_clean(raw)
    # The same name again is a new name too: the SDK's helper shows a call to ``run_run_``.
    same = {"index": 0, "function": {"name": "run_", "arguments": "{}"}}
    upstream.queue(Reply(raw_frames=[chunk({"role": "assistant", "tool_calls": [call]}),
                                     chunk({"tool_calls": [same]}), chunk({}, "tool_calls"), b"data: [DONE]\n\n"]))
    _, raw = raw_post(proxy, "/v1/chat/completions", {**CHAT_BODY, "stream": True})
    assert b"run_" not in raw and b'"error"' in raw


@pytest.mark.parametrize("feedback", [{"blockReason": "OTHER", "blockReasonMessage": f"blocked: {SECRET}"},
                                      {"blockReason": "OTHER", "safetyRatings": [], "note": SECRET}])
def test_gemini_prompt_feedback_text_is_checked_whole_and_streamed(feedback: dict[str, Any]) -> None:
    """``promptFeedback`` was a field without text; its ``blockReasonMessage`` (and any unknown field) is
    text a client prints."""
    body = {"candidates": [{"index": 0, "content": {"role": "model", "parts": [{"text": "x"}]}}],
            "promptFeedback": feedback}
    assert SECRET in _strings(Gemini().decode_events(json.dumps(body).encode()))
    stream = Gemini().new_stream()
    frames = stream.feed(f"data: {json.dumps(body)}\r\n\r\n".encode())
    assert SECRET in _strings(tuple(e for frame in frames for e in frame.events))
