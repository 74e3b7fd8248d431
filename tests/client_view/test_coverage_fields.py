"""Anthropic and Responses: thinking, citations, reasoning, repeats and replacement (issue 10.3-10.4).

Same method as ``test_coverage_choices``: exact upstream bytes over a real socket, the proxy under
uvicorn, the official SDKs as clients; no byte of the blocked secret in the raw response or in any
field of anything the SDK yields.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import anthropic
import openai
import pytest

from tests.client_view.test_coverage_choices import (
    EMAIL,
    HEAD,
    POLICY,
    REPLACEMENT,
    SECRET,
    TAIL,
    assert_clean,
    raw_post,
)
from tests.fakes.proxy import ProxyServer
from tests.fakes.upstream import FakeUpstream, Reply

T = TypeVar("T")


@pytest.fixture(scope="module")
def proxy(upstream_server: FakeUpstream) -> Iterator[ProxyServer]:
    with ProxyServer(upstream_server.url, POLICY) as p:
        yield p


# -- Anthropic -------------------------------------------------------------------------------------------
def ev(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps({'type': name, **data})}\n\n".encode()


START = ev("message_start", {"message": {"id": "msg_1", "type": "message", "role": "assistant", "model": "m",
                                         "content": [], "stop_reason": None, "stop_sequence": None,
                                         "usage": {"input_tokens": 1, "output_tokens": 0}}})
END = [ev("message_delta", {"delta": {"stop_reason": "end_turn", "stop_sequence": None},
                            "usage": {"output_tokens": 5}}), ev("message_stop", {})]


def block(index: int, content_block: dict[str, Any], *deltas: dict[str, Any]) -> list[bytes]:
    return [ev("content_block_start", {"index": index, "content_block": content_block}),
            *[ev("content_block_delta", {"index": index, "delta": d}) for d in deltas],
            ev("content_block_stop", {"index": index})]


def text_block(index: int, *pieces: str) -> list[bytes]:
    return block(index, {"type": "text", "text": ""}, *[{"type": "text_delta", "text": p} for p in pieces])


ANTHROPIC_BODY = {"model": "m", "max_tokens": 100, "messages": [{"role": "user", "content": "hi"}]}


def claude(proxy: ProxyServer) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=proxy.url, api_key="sk-ant", max_retries=0)


def anthropic_sdk_stream(proxy: ProxyServer) -> tuple[str, str | None]:
    dumps, stop = [], None
    with claude(proxy).messages.stream(**ANTHROPIC_BODY) as stream:  # type: ignore[arg-type]
        for event in stream:
            dumps.append(event.model_dump_json(warnings=False))
        final = stream.get_final_message()
    dumps.append(final.model_dump_json(warnings=False))
    stop = final.stop_reason
    return "\n".join(dumps), stop


def clean_raw_then_sdk(proxy: ProxyServer, upstream: FakeUpstream, frames: list[bytes], path: str,
                       body: dict[str, Any], sdk_stream: Callable[[ProxyServer], tuple[str, T]]) -> T:
    """The same upstream bytes twice: a 200 whose raw bytes hold none of the secret, then what the SDK
    shows holds none of it either; returns the SDK's ending (its stop reason or final response)."""
    upstream.queue(Reply(raw_frames=frames))
    status, raw = raw_post(proxy, path, body)
    assert status == 200
    assert_clean(raw)
    upstream.queue(Reply(raw_frames=frames))
    seen, ending = sdk_stream(proxy)
    assert_clean(seen)
    return ending


@pytest.mark.parametrize("blocks", [
    block(0, {"type": "thinking", "thinking": ""}, {"type": "thinking_delta", "thinking": f"The key is {HEAD}"},
          {"type": "thinking_delta", "thinking": f"{TAIL} I think."}, {"type": "signature_delta", "signature": "c2ln"}),
    [*text_block(0, "The grass is green."),
     *block(1, {"type": "text", "text": "", "citations": []},
            {"type": "citations_delta", "citation": {"type": "char_location", "cited_text": SECRET,
                                                     "document_index": 0, "document_title": "Doc",
                                                     "start_char_index": 0, "end_char_index": 20}},
            {"type": "text_delta", "text": "Cited."})],
    block(0, {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}},
          {"type": "input_json_delta", "partial_json": f'{{"query": "{HEAD}'},
          {"type": "input_json_delta", "partial_json": f'{TAIL}"}}'}),
], ids=["thinking_delta", "citations_delta", "server_tool_use-input"])
def test_anthropic_stream_text_beside_the_answer_is_checked(proxy: ProxyServer, upstream: FakeUpstream,
                                                            blocks: list[bytes]) -> None:
    frames = [START, *blocks, *text_block(5, "Answer padding " * 4), *END]
    stop = clean_raw_then_sdk(proxy, upstream, frames, "/v1/messages", {**ANTHROPIC_BODY, "stream": True},
                              anthropic_sdk_stream)
    assert stop == "refusal"


def test_anthropic_unknown_delta_type_fails_closed(proxy: ProxyServer, upstream: FakeUpstream) -> None:
    frames = [START, *block(0, {"type": "text", "text": ""}, {"type": "commentary_delta", "text": SECRET}), *END]
    upstream.queue(Reply(raw_frames=frames))
    with pytest.raises(anthropic.APIStatusError) as err:
        anthropic_sdk_stream(proxy)
    assert err.value.status_code == 502
    assert_clean(str(err.value))


def anthropic_body(*content: dict[str, Any]) -> bytes:
    return json.dumps({"id": "msg_1", "type": "message", "role": "assistant", "model": "m", "content": list(content),
                       "stop_reason": "end_turn", "stop_sequence": None,
                       "usage": {"input_tokens": 1, "output_tokens": 1}}).encode()


@pytest.mark.parametrize("content", [
    [{"type": "thinking", "thinking": f"secret {SECRET}", "signature": "c2ln"}, {"type": "text", "text": "fine"}],
    [{"type": "text", "text": "fine", "citations": [{"type": "char_location", "cited_text": SECRET,
                                                      "document_index": 0, "document_title": "d",
                                                      "start_char_index": 0, "end_char_index": 1}]}],
    [{"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1",
      "content": [{"type": "web_search_result", "url": "https://x", "title": SECRET,
                   "encrypted_content": "abc", "page_age": None}]}, {"type": "text", "text": "fine"}],
], ids=["thinking", "citation", "web_search_tool_result"])
def test_anthropic_unary_replacement_keeps_nothing_of_the_original(proxy: ProxyServer, upstream: FakeUpstream,
                                                                   content: list[dict[str, Any]]) -> None:
    upstream.queue(Reply(raw_body=anthropic_body(*content)))
    message = claude(proxy).messages.create(**ANTHROPIC_BODY)  # type: ignore[call-overload]
    assert_clean(message.model_dump_json(warnings=False))
    assert [b.type for b in message.content] == ["text"] and message.content[0].text == REPLACEMENT


# -- Responses -------------------------------------------------------------------------------------------
RESP = {"id": "resp_1", "object": "response", "created_at": 1, "model": "m", "status": "in_progress",
        "output": [], "usage": None, "error": None, "incomplete_details": None, "instructions": None,
        "metadata": {}, "parallel_tool_calls": True, "tool_choice": "auto", "tools": [], "temperature": None,
        "top_p": None}


class Seq:
    def __init__(self) -> None:
        self.n = 0

    def __call__(self, name: str, **data: Any) -> bytes:
        self.n += 1
        return f"event: {name}\ndata: {json.dumps({'type': name, **data, 'sequence_number': self.n})}\n\n".encode()


def message_item(text: str, status: str = "completed", logprobs: list[Any] | None = None) -> dict[str, Any]:
    part = {"type": "output_text", "text": text, "annotations": [], "logprobs": logprobs or []}
    return {"id": "msg_1", "type": "message", "status": status, "role": "assistant",
            "content": [part] if text or status == "completed" else []}


def responses_turn(pieces: list[str], *, done_text: str | None = None, reasoning: list[str] | None = None,
                   logprobs: bool = False) -> list[bytes]:
    s = Seq()
    text = "".join(pieces) if done_text is None else done_text
    lp = (lambda t: [{"token": t, "logprob": 0.0, "bytes": [], "top_logprobs": []}]) if logprobs else (lambda t: [])
    frames = [s("response.created", response=RESP)]
    oi = 0
    if reasoning is not None:
        item = {"id": "rs_1", "type": "reasoning", "summary": []}
        frames += [s("response.output_item.added", output_index=0, item=item),
                   s("response.reasoning_summary_part.added", item_id="rs_1", output_index=0, summary_index=0,
                     part={"type": "summary_text", "text": ""}),
                   *[s("response.reasoning_summary_text.delta", item_id="rs_1", output_index=0, summary_index=0,
                       delta=r) for r in reasoning],
                   s("response.reasoning_summary_text.done", item_id="rs_1", output_index=0, summary_index=0,
                     text="".join(reasoning)),
                   s("response.output_item.done", output_index=0,
                     item={**item, "summary": [{"type": "summary_text", "text": "".join(reasoning)}]})]
        oi = 1
    where = {"item_id": "msg_1", "output_index": oi, "content_index": 0}
    frames += [s("response.output_item.added", output_index=oi, item=message_item("", "in_progress")),
               s("response.content_part.added", **where, part={"type": "output_text", "text": "", "annotations": []}),
               *[s("response.output_text.delta", **where, delta=p, logprobs=lp(p)) for p in pieces],
               s("response.output_text.done", **where, text=text, logprobs=lp(text)),
               s("response.content_part.done", **where,
                 part={"type": "output_text", "text": text, "annotations": [], "logprobs": lp(text)}),
               s("response.output_item.done", output_index=oi, item=message_item(text, logprobs=lp(text))),
               s("response.completed", response={**RESP, "status": "completed",
                                                 "output": [message_item(text, logprobs=lp(text))]})]
    return frames


RESPONSES_BODY = {"model": "m", "input": "hi"}


def oai(proxy: ProxyServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=proxy.url + "/v1", api_key="sk-test", max_retries=0)


def responses_sdk_stream(proxy: ProxyServer) -> tuple[str, Any]:
    dumps, final = [], None
    for event in oai(proxy).responses.create(**RESPONSES_BODY, stream=True):  # type: ignore[call-overload]
        dumps.append(event.model_dump_json(warnings=False))
        if event.type in ("response.completed", "response.incomplete"):
            final = event.response
    return "\n".join(dumps), final


@pytest.mark.parametrize("turn", [
    responses_turn(["Fine answer."], reasoning=["Planning: ", HEAD, TAIL, " done."]),
    responses_turn([], done_text=f"only in the done events: {SECRET}"),
    responses_turn(["Streamed one thing."], done_text=f"Streamed one thing. {SECRET}"),
], ids=["reasoning-summary-delta", "text-only-in-done", "done-differs-from-deltas"])
def test_responses_stream_text_beside_and_after_the_deltas_is_checked(proxy: ProxyServer, upstream: FakeUpstream,
                                                                      turn: list[bytes]) -> None:
    final = clean_raw_then_sdk(proxy, upstream, turn, "/v1/responses", {**RESPONSES_BODY, "stream": True},
                               responses_sdk_stream)
    assert final is not None and final.status == "incomplete"


def test_responses_redaction_is_repeated_by_every_done_event_without_logprobs(proxy: ProxyServer,
                                                                             upstream: FakeUpstream) -> None:
    turn = responses_turn(["Write to ", "jane.doe@", "acmecorp.io", " today, and thank you for your patience."],
                          logprobs=True)
    upstream.queue(Reply(raw_frames=turn))
    status, raw = raw_post(proxy, "/v1/responses", {**RESPONSES_BODY, "stream": True})
    assert status == 200
    assert_clean(raw, secret=EMAIL)
    assert b"acmecorp" not in raw and b"jane.doe" not in raw
    upstream.queue(Reply(raw_frames=turn))
    seen, final = responses_sdk_stream(proxy)
    assert_clean(seen, secret=EMAIL)
    assert final is not None and final.output_text.startswith("Write to [email]")


def test_responses_unknown_text_delta_event_fails_closed(proxy: ProxyServer, upstream: FakeUpstream) -> None:
    s = Seq()
    upstream.queue(Reply(raw_frames=[s("response.created", response=RESP),
                                     s("response.commentary_text.delta", output_index=0, delta=SECRET)]))
    status, raw = raw_post(proxy, "/v1/responses", {**RESPONSES_BODY, "stream": True})
    assert_clean(raw)
    assert status == 502 or b"response.failed" in raw


def responses_body(*items: dict[str, Any]) -> bytes:
    return json.dumps({**RESP, "status": "completed", "output": list(items),
                       "usage": {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2}}).encode()


@pytest.mark.parametrize("items", [
    [{"id": "rs_1", "type": "reasoning", "summary": [{"type": "summary_text", "text": f"plan {SECRET}"}]},
     message_item("fine")],
    [message_item(f"key {SECRET}")],
    [{"id": "ws_1", "type": "web_search_call", "status": "completed",
      "action": {"type": "search", "query": f"find {SECRET}"}}, message_item("fine")],
    [{**message_item("fine"), "content": [{"type": "output_text", "text": "fine", "logprobs": [], "annotations": [
        {"type": "url_citation", "url": f"https://x/{SECRET}", "title": "t", "start_index": 0, "end_index": 1}]}]}],
], ids=["reasoning-item", "message", "web_search_call", "annotation"])
def test_responses_unary_replacement_keeps_nothing_of_the_original(proxy: ProxyServer, upstream: FakeUpstream,
                                                                   items: list[dict[str, Any]]) -> None:
    upstream.queue(Reply(raw_body=responses_body(*items)))
    r = oai(proxy).responses.create(**RESPONSES_BODY)  # type: ignore[call-overload]
    assert_clean(r.model_dump_json(warnings=False))
    assert [i.type for i in r.output] == ["message"] and r.output_text == REPLACEMENT


def test_anthropic_a_delta_named_message_stop_is_read_by_its_type(proxy: ProxyServer, upstream: FakeUpstream) -> None:
    """The SDK types an event by ``data.type`` (only ``ping`` and ``error`` by name): so does the guard."""
    data = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": SECRET}}
    sneaky = f"event: message_stop\ndata: {json.dumps(data)}\n\n".encode()
    frames = [START, *text_block(0, "Hello ")[:2], sneaky, *text_block(0, " padding " * 5)[1:], *END]
    upstream.queue(Reply(raw_frames=frames))
    seen, _ = anthropic_sdk_stream(proxy)
    assert_clean(seen)
