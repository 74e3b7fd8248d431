"""The repeated-key check reads an agent's next turn by what it adds (``one_reading.read_once`` with
``WireFormat.added_to_clean``): exact, so a repeat in the added items is found, an insertion anywhere
but after the history list's last item (inside a string, into an object) is checked whole, and a
body that extends nothing is checked whole. (More in ``tests/wire/test_one_reading_turns.py``.)"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from proxy.wire import openai_chat
from proxy.wire.base import JsonBody
from proxy.wire.one_reading import read_once

SYSTEM = "You are a coding agent. " * 400  # past the size the extension path starts at
CHAT = openai_chat.OpenAIChat()


def body(n: int, extra: str = "") -> bytes:
    msgs = [{"role": "system", "content": SYSTEM}] + [
        {"role": "user" if i % 2 else "assistant", "content": f"turn {i}: {'x' * 50}"} for i in range(n)]
    text = json.dumps({"model": "m", "messages": msgs, "stream": True})
    return (text[:-len('], "stream": true}')] + extra + '], "stream": true}').encode()


@pytest.fixture(autouse=True)
def fresh() -> Iterator[None]:
    openai_chat._TURNS.clear()
    yield
    openai_chat._TURNS.clear()


def check(raw: bytes) -> str | None:
    """As the edge checks a chat body: from a kept clean turn when it extends one, then read (kept)."""
    key, decoded = read_once(raw, added=CHAT.added_to_clean(raw))
    if key is None:
        CHAT.quick_view(JsonBody(raw, decoded, repeat_free=True), stream=False)
    return key


def test_each_turn_is_read_by_what_it_adds() -> None:
    assert check(body(1)) is None
    for n in range(2, 8):
        assert CHAT.added_to_clean(body(n)) is not None
        assert check(body(n)) is None


def test_a_repeat_in_the_added_items_is_found() -> None:
    for n in range(1, 4):
        check(body(n))
    bad = body(3, ', {"role": "user", "content": "a", "content": "b"}')
    assert CHAT.added_to_clean(bad) is not None
    assert check(bad) == "content"


def test_an_insertion_inside_a_string_or_an_object_is_checked_whole() -> None:
    base = json.dumps({"model": "m", "pad": "p" * 9000, "k,": 0, "k": 1, "messages": [{"role": "user", "content": "hi"}]})
    raw = base.encode()
    assert check(raw) is None
    at = raw.index(b'"k"') + 2  # inside the key "k": splits it into "k," and ""
    crafted = raw[:at] + b',":1,"' + raw[at:]
    assert check(crafted) is not None  # '"k,"' repeated: found by the whole check
    at = raw.index(b'"role"')
    assert check(raw[:at] + b'"role":"system",' + raw[at:]) == "role"


def test_a_body_extending_nothing_is_checked_whole() -> None:
    assert check(body(2, ', {"role": "user", "content": "a", "content": "b"}')) == "content"
