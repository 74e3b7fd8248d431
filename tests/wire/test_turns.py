"""A conversation's next turn read from what it adds (``proxy.wire.conversation_delta``) gives the view the whole
decode gives, or declines.

Turn N is read from turn N-1's kept reading and the bytes inserted where its history list ends. A
parser differential here would arm the checks on another request than the one the upstream answers,
so every body is compared with the whole path (``test_quick_view._agrees``): conversations that grow
as agents grow them (the list at any position among the keys, any spacing), and bodies that are a
kept body with a fragment inserted or replaced anywhere (closing the list, adding a duplicate key,
opening a string, invalid UTF-8, a nested list, an item that is not an object).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.common import request_bodies, request_body
from proxy.wire import anthropic, gemini, openai_chat, openai_responses
from proxy.wire import conversation_delta as turns
from proxy.wire.base import JsonBody
from tests.wire.test_quick_view import _LIST_KEY as LIST_KEY
from tests.wire.test_quick_view import _ROLES, WIRES, _agrees, _message, _ordinary

TURNS = {"chat": openai_chat._TURNS, "anthropic": anthropic._TURNS, "responses": openai_responses._TURNS,
         "gemini": gemini._TURNS}


@pytest.fixture(autouse=True)
def _every_body_kept(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Small drawn bodies take the kept-body path too (grouped by their first bytes, which every
    drawn body's list ends after, and by bytes from 16 on); each test starts with nothing kept."""
    monkeypatch.setattr(turns, "MIN_BYTES", 0)
    monkeypatch.setattr(turns, "KEY_BYTES", 1)
    monkeypatch.setattr(turns, "DEEP_BYTES", 16)
    for kept in TURNS.values():
        kept.clear()
    yield
    for kept in TURNS.values():
        kept.clear()


def _next(api: str) -> dict[str, Any]:
    """A user message of ``api``: the next turn."""
    return {"role": "user", "parts": [{"text": "next"}]} if api == "gemini" else {"role": "user", "content": "next"}


def _dumps(body: dict[str, Any], spaced: bool) -> bytes:
    return json.dumps(body, separators=(", ", ": ") if spaced else (",", ":")).encode()


def _reordered(body: dict[str, Any], first: list[str]) -> dict[str, Any]:
    """``body`` with the keys in ``first`` written first (an SDK's own key order)."""
    return {**{k: body[k] for k in first if k in body}, **body}


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data())
@pytest.mark.parametrize("api", list(TURNS))
def test_a_growing_conversation_reads_each_turn_as_the_whole_decode_does(api: str, data: st.DataObject) -> None:
    base = data.draw(_ordinary(api))
    key = LIST_KEY[api]
    if not isinstance(base[key], list):
        return
    order = data.draw(st.permutations(list(base)))
    spaced = data.draw(st.booleans())
    messages = list(base[key])
    before = TURNS[api].extended
    answered = 0
    for _ in range(data.draw(st.integers(1, 4))):
        messages += data.draw(st.lists(_message(_ROLES[api], odd=False), min_size=1, max_size=3))
        answered += _agrees(WIRES[api], _dumps(_reordered({**base, key: list(messages)}, order), spaced))
    if answered >= 3:  # turns 2 and later of a readable conversation extend a kept one
        assert TURNS[api].extended > before


def _marked(message: dict[str, Any]) -> dict[str, Any]:
    """``message`` with a prompt-cache marker on it (its text unchanged), as Claude Code moves one
    onto the newest message every turn."""
    return {**message, "cache_control": {"type": "ephemeral"}}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data())
@pytest.mark.parametrize("api", list(TURNS))
def test_a_conversation_that_rewrites_or_drops_its_last_turns_is_read_as_the_whole_decode_does(
        api: str, data: st.DataObject) -> None:
    """Each turn appends items and may also move a cache marker from the previous newest item to the
    new one, rewrite one of the last items, or drop the last turn (a retry): every body agrees with the
    whole decode, and a rewrite of the previous turn's items is read from an earlier turn's anchor."""
    base = data.draw(_ordinary(api))
    key = LIST_KEY[api]
    if not isinstance(base[key], list):
        return
    base = _reordered(base, data.draw(st.permutations(list(base))))
    turns_sent: list[list[Any]] = [list(base[key])]
    for _ in range(data.draw(st.integers(2, 6))):
        messages = list(turns_sent[-1])
        change = data.draw(st.sampled_from(["append", "move-marker", "rewrite", "drop"]))
        if change == "drop" and len(turns_sent) > 1:
            turns_sent.pop()
            messages = list(turns_sent[-1])
        elif change == "move-marker" and messages:
            messages = [{k: v for k, v in m.items() if k != "cache_control"} for m in messages]
        elif change == "rewrite" and messages:
            at = data.draw(st.integers(max(0, len(messages) - 3), len(messages) - 1))
            messages[at] = data.draw(_message(_ROLES[api], odd=False))
        added = data.draw(st.lists(_message(_ROLES[api], odd=False), min_size=1, max_size=2))
        if change == "move-marker":
            added[-1] = _marked(added[-1])
        messages += added
        turns_sent.append(messages)
        _agrees(WIRES[api], _dumps({**base, key: messages}, False))


@pytest.mark.parametrize("api", list(TURNS))
def test_moving_a_cache_marker_onto_the_newest_message_is_read_from_the_turn_before(api: str) -> None:
    """Turn 3 takes the marker off turn 2's newest message and puts it on its own: it is read from
    turn 2's anchor (the body before turn 2's items is unchanged), and so is a retry of turn 2."""
    wire, kept, key = WIRES[api], TURNS[api], LIST_KEY[api]
    user = _next(api)
    reply = {"role": "model" if api == "gemini" else "assistant",
             **({"parts": [{"text": "ok"}]} if api == "gemini" else {"content": "ok"})}
    first = [{**user}, reply]
    second = [*first, _marked(user), reply]
    third = [*first, user, reply, _marked({**user, **({"parts": [{"text": "last"}]} if api == "gemini"
                                                      else {"content": "last"})})]
    before = kept.extended
    for messages in (first, second, third, second):
        assert _agrees(wire, _dumps({"model": "m", key: messages, "tools": []}, False))
    assert kept.extended - before == 3
    view = wire.quick_view(JsonBody(_dumps({"model": "m", key: third, "tools": []}, False)), stream=False)
    assert view is not None and view.last_user_text == "last"


_FRAGMENTS = [b',{"role":"system","content":"S2"}', b',{"role":"user","content":"U2"}', b"]", b"[", b'"', b"\\",
              b'],"messages":[{"role":"system","content":"E"}]', b',"model":"other"', b',"messages":[]', b",null",
              b",1", b'{"role":"user"}', b',{"role":"user","content":"a"}],"messages":[{"role":"user","content":"b"}',
              b" ", b",", b'},{"role":"system","content":"x"', b',{"role":"developer","content":[{"type":"text","text":"d"}]}',
              b',{"role":"user","content":"\xff"}', b',{"role":"user","content":"\\ud800"}', b',[{"role":"user"}]',
              b',{"role":"user","content":"a","role":"system"}', b"}", b"{", b':"x"',
              b'],"m":[null,{"role":"user","content":"b"}', b'],[null,{"role":"system","content":"c"}',
              b',{"role":"user","content":"a"}],"messages":[{"role":"system","content":"e"}',
              # A system prompt of another spelling or placement after the list (each wire's own: a
              # top-level ``system`` string or blocks, ``instructions``, Gemini's two spellings),
              # escapes that spell a ``]`` or a quote inside a string, and every JSON whitespace.
              b'],"system":"EVIL","zz":[null', b',"system":[{"type":"text","text":"EVIL"}]',
              b'],"instructions":"EVIL","zz":[null', b'],"systemInstruction":{"parts":[{"text":"EVIL"}]},"zz":[null',
              b'],"system_instruction":{"parts":[{"text":"EVIL"}]},"zz":[null',
              b',{"role":"user","content":"\\u005d,\\"system\\":\\"EVIL\\""}', b'\\u005d', b"\t\r\n ",
              b',{"role":"system","content":"S3"} ', b'\n,\n{"role":"system","content":"S4"}\n',
              b',{"role":"System","content":"S5"}']


def _fragments(api: str) -> list[bytes]:
    """The fragments, naming the API's own list (and a role of its own where they add one)."""
    key = LIST_KEY[api].encode()
    out = [f.replace(b'"messages"', b'"' + key + b'"') for f in _FRAGMENTS]
    return out + [f.replace(b'"system"', b'"model"') for f in out if b'"system"' in f] if api == "gemini" else out


def _spliced(raw: bytes, end: int, api: str, data: st.DataObject) -> bytes:
    """``raw`` with a drawn fragment inserted at a drawn offset (often where its list ends, at
    ``end``), or replacing a drawn span."""
    at = data.draw(st.one_of(st.integers(0, len(raw)), st.integers(max(0, end - 2), min(len(raw), end + 2))))
    cut = data.draw(st.one_of(st.just(0), st.integers(0, max(0, len(raw) - at))))
    fragment = data.draw(st.lists(st.sampled_from(_fragments(api)), min_size=1, max_size=3).map(b"".join))
    return raw[:at] + fragment + raw[at + cut:]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data())
@pytest.mark.parametrize("api", list(TURNS))
def test_a_body_spliced_into_a_kept_one_gets_the_same_view_or_the_whole_path(api: str, data: st.DataObject) -> None:
    base = data.draw(_ordinary(api))
    key = LIST_KEY[api]
    if not isinstance(base[key], list):
        return
    base = _reordered(base, data.draw(st.permutations(list(base))))
    first = _dumps(base, False)
    _agrees(WIRES[api], first)
    grown = _dumps({**base, key: [*base[key], _next(api)]}, False)
    end = turns._common_prefix(first, grown)
    if data.draw(st.booleans()):  # anchored: a proper second turn first
        _agrees(WIRES[api], grown)
        first, end = grown, turns._common_prefix(grown, first) + len(grown) - len(first)
    for _ in range(3):
        _agrees(WIRES[api], _spliced(first, end, api, data))


def test_the_agent_bench_request_is_read_from_its_kept_turn() -> None:
    """The bench's agent request again, and then with one more exchange appended, is read from the
    kept turn (the second decode only of what it adds) and agrees with the whole decode."""
    raw = request_body("bench-agent", stream=False)
    chat, kept = WIRES["chat"], TURNS["chat"]
    assert _agrees(chat, raw) and _agrees(chat, raw)
    body = json.loads(raw)
    for n in range(3):
        body["messages"] += [{"role": "assistant", "content": f"step {n}"}, {"role": "user", "content": f"go on {n}"}]
        assert _agrees(chat, json.dumps(body, separators=(",", ":")).encode())
        view = chat.quick_view(JsonBody(json.dumps(body, separators=(",", ":")).encode()), stream=False)
        assert view is not None and view.last_user_text == f"go on {n}"
    assert kept.extended >= 3


_BASES = [{"model": "m", "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "u"}]},
          {"messages": [{"role": "user", "content": [{"type": "text", "text": "u"}]}], "model": "m", "stream": True,
           "tools": [{"type": "function", "function": {"name": "f"}}]},
          {"model": "m", "messages": [{"role": "developer", "content": "D"}], "messages ": [], "x": [[1], {"a": []}]}]


def _base(api: str, n: int) -> dict[str, Any]:
    """``_BASES[n]`` in ``api``'s shape (its list's name; Gemini's parts and roles)."""
    body = json.loads(json.dumps(_BASES[n]).replace('"messages"', json.dumps(LIST_KEY[api])))
    if api == "gemini":
        body[LIST_KEY[api]] = [{"role": "model" if m["role"] != "user" else "user", "parts": [{"text": "t"}]}
                               for m in body[LIST_KEY[api]]]
    return body


@pytest.mark.parametrize("anchored", [False, True])
@pytest.mark.parametrize("n", range(len(_BASES)))
@pytest.mark.parametrize("api", list(TURNS))
def test_every_fragment_at_every_offset_near_the_anchor_gets_the_same_view_or_the_whole_path(
        api: str, n: int, anchored: bool) -> None:
    """Exhaustive near where the list ends: each fragment (and pairs of them) at each offset from
    six before to six after the end of the list, and an added item at every offset (before the
    list's last item among them), into a kept body with and without a proven anchor."""
    wire, kept, key, base = WIRES[api], TURNS[api], LIST_KEY[api], _base(api, n)
    first = _dumps(base, False)
    grown = _dumps({**base, key: [*base[key], _next(api)]}, False)
    body, end = (grown, turns._common_prefix(first, grown) + len(grown) - len(first)) if anchored \
        else (first, turns._common_prefix(first, grown))
    fragments = _fragments(api)
    answered, before = 0, kept.extended
    near = range(max(0, end - 6), min(len(body), end + 6) + 1)
    cases = [(f, at) for f in [*fragments, *(a + b for a in fragments[:8] for b in fragments[:8])] for at in near]
    # An item added at every offset (before the list's last one among them; spaced so that it differs
    # from the kept body at its first byte, as an insertion found by the common prefix does).
    cases += [(f, at) for f in fragments[:2] for f in (f, b" " + f, b"\n" + f) for at in range(len(body) + 1)]
    for fragment, at in cases:
        kept.clear()
        assert _agrees(wire, first)
        if anchored:
            assert _agrees(wire, grown)
        answered += _agrees(wire, body[:at] + fragment + body[at:])
    assert answered and kept.extended > before


def test_kept_bodies_stay_within_their_byte_budget() -> None:
    """The least recently used bodies go first once the kept ones pass the budget; what is left
    still reads as the whole decode does."""
    kept = turns.Turns(openai_chat._read_whole, openai_chat._fold, openai_chat._QuickMessage,
                       b'{"role":"guardproxy-probe"}', budget_bytes=2_000)
    bodies = [_dumps({"model": "m", "messages": [{"role": "user", "content": f"{n} " + "x" * 300}]}, False)
              for n in range(20)]
    for raw in bodies:
        assert kept.read(raw) is not None
        assert kept.used_bytes <= kept.budget_bytes
    assert 0 < len(kept) < len(bodies)


def test_a_growing_conversation_under_a_byte_budget_keeps_its_accounts_exact() -> None:
    """Each turn takes over the kept entry of the one before (in place, when its group stays the
    same): the bytes counted are always those of the bodies kept, within the budget, and every turn
    still reads as the whole decode does."""
    bodies = request_bodies("bench-agent-grow", stream=False)
    kept = turns.Turns(openai_chat._read_whole, openai_chat._fold, openai_chat._QuickMessage,
                       b'{"role":"guardproxy-probe"}', budget_bytes=3 * len(bodies[-1]))
    for n, raw in enumerate([*bodies, *bodies[:5], *bodies]):
        assert kept.read(raw) == openai_chat._read_whole(raw)[0]  # type: ignore[index]
        assert kept.used_bytes == sum(k.size for group in kept._groups.values() for k in group), n
        assert kept.used_bytes <= kept.budget_bytes
    assert kept.extended >= 2 * len(bodies) - 4


def test_the_growing_agent_bench_conversation_is_read_turn_by_turn() -> None:
    """``bench-agent-grow`` (the bench's conversation that grows turn by turn): every turn agrees
    with the whole decode, and every turn after the second is read from the one before it."""
    chat, kept = WIRES["chat"], TURNS["chat"]
    bodies = request_bodies("bench-agent-grow", stream=False)
    assert len(bodies) > 3 and all(b.startswith(bodies[0][:1000]) for b in bodies)
    before = kept.extended
    for raw in bodies:
        assert _agrees(chat, raw)
    assert kept.extended - before == len(bodies) - 1


def test_many_conversations_of_one_agent_at_once_are_each_read_from_their_own_last_turn() -> None:
    """40 conversations that share their first 1,000 bytes (one agent's prompt) start one after the
    other and then go on turn by turn in turn: each is kept in a group of its own history's bytes
    once anchored, so every later turn is read from its own last one (40 is more than a group's
    ``CANDIDATES``)."""
    chat, kept = WIRES["chat"], TURNS["chat"]
    prompt = {"role": "system", "content": "Be an agent. " * 80}
    conversations = [[prompt, {"role": "user", "content": f"task {n} " * 20}] for n in range(40)]
    before = kept.extended

    def turn(n: int, k: int) -> None:
        conversations[n] += [{"role": "assistant", "content": f"step {k} of {n}"},
                             {"role": "user", "content": f"go on with {n} after {k}"}]
        assert _agrees(chat, _dumps({"model": "m", "messages": conversations[n]}, False))

    for n in range(40):
        assert _agrees(chat, _dumps({"model": "m", "messages": conversations[n]}, False))
        turn(n, 1)
    for k in range(2, 5):
        for n in range(40):
            turn(n, k)
    assert kept.extended - before == 40 * 4
