"""The repeated-key check of an agent's next turn reads only what the turn adds (``proxy.wire.one_reading``
with ``proxy.wire.conversation_delta``), and refuses exactly what the whole check refuses.

A body that extends a recent body proven repeat-free is checked in its added items only. So: a key
repeated inside those items is still refused with the API's 400 before anything goes upstream (each
API with kept turns; Gemini also for a field's two spellings), also after clean turns were kept; a key
repeated in the unchanged part cannot pass (that body was refused when first seen, and a refused
body is never kept as clean); a body read without the check is not a clean base.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from proxy.wire import anthropic, conversation_delta, gemini, openai_chat, openai_responses
from proxy.wire.base import JsonBody
from proxy.wire.one_reading import read_once, repeated_in_items
from tests.edge.test_gateway_one_reading import CANARY_POLICY
from tests.fakes.faulty import assert_http_error, headers_for
from tests.fakes.proxy import ProxyServer
from tests.fakes.upstream import FakeUpstream, Reply
from tests.wire.test_quick_view import WIRES, _whole

TURNS = {"chat": openai_chat._TURNS, "anthropic": anthropic._TURNS, "responses": openai_responses._TURNS,
         "gemini": gemini._TURNS}
PATHS = {"chat": "/v1/chat/completions", "anthropic": "/v1/messages", "responses": "/v1/responses",
         "gemini": "/v1beta/models/m:generateContent"}
BIG = "You are a careful coding agent. " * 400
"""A system prompt over ``conversation_delta.MIN_BYTES``: the body takes the kept-turns path."""


def _body(api: str, items: list[str], tag: str) -> bytes:
    """A request of ``api`` whose history list holds ``items`` (raw JSON texts, so a key may repeat),
    with the list among other keys, as SDKs write it; ``tag`` makes the conversation unique."""
    listed = ",".join(items)
    if api == "chat":
        text = (f'{{"model":"m","messages":[{{"role":"system","content":"{tag} {BIG}"}},{listed}],'
                '"tools":[],"stream":false}')
    elif api == "anthropic":
        text = f'{{"model":"m","max_tokens":50,"system":"{tag} {BIG}","messages":[{listed}],"tools":[]}}'
    elif api == "responses":
        text = f'{{"model":"m","instructions":"{tag} {BIG}","input":[{listed}],"tools":[]}}'
    else:
        text = (f'{{"systemInstruction":{{"parts":[{{"text":"{tag} {BIG}"}}]}},"contents":[{listed}],'
                '"generationConfig":{"temperature":0}}')
    return text.encode()


def _user(api: str, text: str) -> str:
    if api == "gemini":
        return f'{{"role":"user","parts":[{{"text":"{text}"}}]}}'
    return f'{{"role":"user","content":"{text}"}}'


def _assistant(api: str, text: str) -> str:
    if api == "gemini":
        return f'{{"role":"model","parts":[{{"text":"{text}"}}]}}'
    return f'{{"role":"assistant","content":"{text}"}}'


REPEATS = {
    "chat": ['{"role":"user","content":"a","content":"b"}',
             ('{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function",'
              '"function":{"name":"read","arguments":"{}","name":"write"}}]}')],
    "anthropic": ['{"role":"user","content":[{"type":"text","text":"a","text":"b"}]}',
                  '{"role":"user","role":"assistant","content":"b"}'],
    "responses": ['{"type":"message","role":"user","content":"a","content":"b"}',
                  '{"type":"message","role":"user","content":[{"type":"input_text","text":"a","text":"b"}]}'],
    "gemini": ['{"role":"user","parts":[{"text":"a","text":"b"}]}',
               ('{"role":"model","parts":[{"functionCall":{"name":"Read","args":{"file_path":"/w/a"}},'
                '"function_call":{"name":"Read","args":{"file_path":"/etc/passwd"}}}]}'),
               '{"role":"model","parts":[{"functionCall":{"name":"Read","args":{},"args":{"file_path":"/w"}}}]}'],
}
"""Items that repeat a key in one object (Gemini: also both spellings of one field)."""


@pytest.fixture(autouse=True)
def _nothing_kept() -> Iterator[None]:
    for kept in TURNS.values():
        kept.clear()
    yield
    for kept in TURNS.values():
        kept.clear()


def _checked(api: str, raw: bytes) -> str | None:
    """What the edge does with a guarded body (``Exchange._refused_repeats``, then the quick view):
    the repeated key, or None and the body read (kept as clean)."""
    wire = WIRES[api]
    key, decoded = read_once(raw, spellings=api == "gemini", added=wire.added_to_clean(raw))
    if key is None:
        wire.quick_view(JsonBody(raw, decoded, repeat_free=True), stream=False)
    return key


@pytest.mark.parametrize("api", list(TURNS))
def test_a_repeat_in_the_items_a_turn_adds_is_found_from_those_items(api: str) -> None:
    items = [_user(api, "hi")]
    assert _checked(api, _body(api, items, "t1")) is None
    for n in range(2, 5):  # clean turns, each kept and extended from
        items += [_assistant(api, f"answer {n}"), _user(api, f"question {n}")]
        raw = _body(api, items, "t1")
        assert WIRES[api].added_to_clean(raw) is not None
        assert _checked(api, raw) is None
    for repeat in REPEATS[api]:
        bad = _body(api, [*items, _assistant(api, "ok"), repeat], "t1")
        added = WIRES[api].added_to_clean(bad)
        assert added is not None and repeat.encode() in added  # the turn's items only are checked...
        key, _ = read_once(bad, spellings=api == "gemini", added=added)
        assert key is not None  # ...and the repeat is found there
        assert key == read_once(bad, spellings=api == "gemini")[0]  # the key the whole check names
        assert _checked(api, bad) is not None
    # the refused bodies were not kept: a clean next turn still extends the last clean one
    items += [_assistant(api, "ok"), _user(api, "go on")]
    raw = _body(api, items, "t1")
    assert WIRES[api].added_to_clean(raw) is not None
    assert _checked(api, raw) is None


@pytest.mark.parametrize("api", list(TURNS))
def test_an_edited_last_turn_is_checked_in_what_it_rewrites(api: str) -> None:
    """``P[:b] + Y + P[a:]``: the client rewrote its last item (a cache marker moved): Y is checked."""
    items = [_user(api, "hi"), _assistant(api, "one"), _user(api, "two")]
    for n in (1, 2, 3):
        assert _checked(api, _body(api, items[:n], "t2")) is None
    edited = _body(api, [*items[:2], REPEATS[api][0]], "t2")
    added = WIRES[api].added_to_clean(edited)
    assert added is not None and REPEATS[api][0].encode() in added
    assert _checked(api, edited) is not None


@pytest.mark.parametrize("api", list(TURNS))
def test_a_repeat_in_the_unchanged_part_is_never_a_clean_base(api: str) -> None:
    first = [REPEATS[api][0], _user(api, "hi")]
    assert _checked(api, _body(api, first, "t3")) is not None  # refused when first seen: not kept
    for n in range(2, 4):
        first += [_assistant(api, f"answer {n}"), _user(api, f"question {n}")]
        raw = _body(api, first, "t3")
        assert WIRES[api].added_to_clean(raw) is None  # nothing clean to extend: the whole check
        assert _checked(api, raw) is not None


@pytest.mark.parametrize("api", list(TURNS))
def test_a_body_read_without_the_check_is_no_clean_base(api: str) -> None:
    """A reading kept by a caller that did not prove the body repeat-free (``JsonBody`` without
    ``repeat_free``) is not extended from: a repeat in it is found by the whole check."""
    items = [REPEATS[api][0], _user(api, "hi")]
    for n in range(1, 4):
        WIRES[api].quick_view(JsonBody(_body(api, items, "t4")), stream=False)
        items += [_assistant(api, f"answer {n}"), _user(api, f"question {n}")]
    raw = _body(api, items, "t4")
    assert WIRES[api].added_to_clean(raw) is None
    assert _checked(api, raw) is not None


@pytest.mark.parametrize(("added", "proven"), [
    (b"", True), (b',{"a":1}', True), (b' , {"a":1} ,2', True),
    (b'],"messages":[{"a":1}', False),  # closes the list: not a sequence of values
    (b',{"a":"', False), (b',{"a":1}]', False), (b'{"a":1}', False), (b',\xff', False),
])
def test_only_a_sequence_of_values_is_checked_on_its_own(added: bytes, proven: bool) -> None:
    assert repeated_in_items(added)[0] is proven


def test_an_escaped_colon_or_a_snake_spelling_in_the_added_items_is_read_by_pairs() -> None:
    assert repeated_in_items(b',{"a\\u003a":1,"a\\u003a":2}') == (True, "a:")
    assert repeated_in_items(b',{"t":"x\\u003ay"}') == (True, None)
    assert repeated_in_items(b',{"functionCall":{},"function_call":{}}', spellings=True)[1] is not None
    assert repeated_in_items(b',{"function_call":{"args":{"file_path":1,"filePath":2}}}', spellings=True) == (True, None)


# ------------------------------------------------------------------ through the proxy


@pytest.fixture(scope="module")
def proxy(upstream_server: FakeUpstream) -> Iterator[ProxyServer]:
    with ProxyServer(upstream_server.url, CANARY_POLICY) as p:
        yield p


def _post(proxy: ProxyServer, api: str, raw: bytes) -> httpx.Response:
    return httpx.post(proxy.url + PATHS[api], content=raw,
                      headers={"content-type": "application/json", **headers_for(api)}, timeout=15)


@pytest.mark.parametrize("api", list(TURNS))
def test_through_the_proxy_a_turn_adding_a_repeated_key_is_refused_before_it_goes_upstream(
        proxy: ProxyServer, upstream: FakeUpstream, api: str) -> None:
    items = [_user(api, "hi")]
    for n in range(3):  # clean turns: each relayed byte for byte (and kept as clean)
        raw = _body(api, items, "p1")
        upstream.queue(Reply(text="fine"))
        r = _post(proxy, api, raw)
        assert r.status_code == 200, r.text
        assert upstream.seen[-1].raw == raw
        items += [_assistant(api, f"answer {n}"), _user(api, f"question {n}")]
    for repeat in REPEATS[api]:
        bad = _body(api, [*items, repeat], "p1")
        assert WIRES[api].added_to_clean(bad) is not None  # checked from the kept clean turn
        upstream.reset()
        r = _post(proxy, api, bad)
        assert r.status_code == 400, r.text
        err = assert_http_error(api, 400, r.content)
        assert "twice" in err["message"] or "both" in err["message"]
        assert upstream.seen == []
    upstream.queue(Reply(text="fine"))
    assert _post(proxy, api, _body(api, items, "p1")).status_code == 200


@pytest.mark.parametrize("api", list(TURNS))
def test_through_the_proxy_a_repeat_in_the_unchanged_part_stays_refused(
        proxy: ProxyServer, upstream: FakeUpstream, api: str) -> None:
    items = [_user(api, "hi"), REPEATS[api][0]]
    for n in range(3):
        r = _post(proxy, api, _body(api, items, "p2"))
        assert r.status_code == 400, r.text
        assert upstream.seen == []
        items += [_assistant(api, f"answer {n}"), _user(api, f"question {n}")]


def _reads_as_whole(api: str, raw: bytes) -> bool:
    """Read as the edge reads a checked body; whether the quick view answered as the whole decode."""
    quick = WIRES[api].quick_view(JsonBody(raw, repeat_free=True), stream=False)
    whole = _whole(WIRES[api], raw)
    assert quick is not None and whole is not None
    return (quick.model, quick.stream, quick.system_prompt, quick.last_user_text, list(quick.history)) == whole


@pytest.mark.parametrize("api", list(TURNS))
def test_a_read_right_after_the_check_reuses_its_match_only_while_the_kept_body_is_unchanged(api: str) -> None:
    """``read`` reuses the match ``added_to_clean`` found for the same body; another turn read in
    between (the kept body updated in place) sends it back to a lookup: every reading is the whole
    decode's."""
    items = [_user(api, "hi"), _assistant(api, "one"), _user(api, "two")]
    for n in (1, 3):
        assert _checked(api, _body(api, items[:n], "t5")) is None
    a = _body(api, [*items, _assistant(api, "a"), _user(api, "more a")], "t5")
    b = _body(api, [*items, _assistant(api, "b"), _user(api, "more b")], "t5")
    c = _body(api, [*items, _assistant(api, "b"), _user(api, "more b"), _user(api, "c")], "t5")
    before = TURNS[api].extended
    assert WIRES[api].added_to_clean(a) is not None
    assert _reads_as_whole(api, a)  # read from the check's match
    assert TURNS[api]._last is None  # (used once)
    assert WIRES[api].added_to_clean(c) is not None
    assert WIRES[api].quick_view(JsonBody(b, repeat_free=True), stream=False) is not None  # replaces the kept body
    assert _reads_as_whole(api, c)  # its match went stale: looked up again, read from b's turn
    assert TURNS[api].extended == before + 3
    turns = TURNS[api]
    d = _body(api, [*items, _assistant(api, "b"), _user(api, "more b"), _user(api, "d")], "t5")
    assert WIRES[api].added_to_clean(d) is not None
    turns.budget_bytes = 0
    turns._evict()  # the kept body leaves between the check and the read
    turns.budget_bytes = conversation_delta.BUDGET_BYTES
    assert _reads_as_whole(api, d)  # read whole (and kept), not into the body that left
    assert turns.used_bytes == sum(k.size for group in turns._groups.values() for k in group) > 0
