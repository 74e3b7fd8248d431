"""The repeated-key check reads an agent's next turn by what it adds (``one_reading._Extensions``):
exact, so a repeat in the added items is found, an insertion anywhere but after a list's last item
(inside a string, into an object) is checked whole, and a body that extends nothing is checked whole."""

from __future__ import annotations

import json

import pytest

from proxy.edge import one_reading
from proxy.edge.one_reading import _Extensions, read_once

SYSTEM = "You are a coding agent. " * 400  # past the size the extension path starts at


def body(n: int, extra: str = "") -> bytes:
    msgs = [{"role": "system", "content": SYSTEM}] + [
        {"role": "user" if i % 2 else "assistant", "content": f"turn {i}: {'x' * 50}"} for i in range(n)]
    text = json.dumps({"model": "m", "messages": msgs, "stream": True})
    return (text[:-len('], "stream": true}')] + extra + '], "stream": true}').encode()


@pytest.fixture(autouse=True)
def fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(one_reading, "_EXTENSIONS", _Extensions())


def test_each_turn_is_read_by_what_it_adds() -> None:
    for n in range(1, 8):
        assert read_once(body(n))[0] is None
    ext = one_reading._EXTENSIONS
    assert any(e[1] is not None for g in ext._groups.values() for e in g)  # anchors proven


def test_a_repeat_in_the_added_items_is_found() -> None:
    for n in range(1, 4):
        read_once(body(n))
    bad = body(3, ', {"role": "user", "content": "a", "content": "b"}')
    assert read_once(bad)[0] == "content"


def test_an_insertion_inside_a_string_or_an_object_is_checked_whole() -> None:
    base = json.dumps({"model": "m", "pad": "p" * 9000, "k,": 0, "k": 1, "messages": [{"role": "user", "content": "hi"}]})
    raw = base.encode()
    assert read_once(raw)[0] is None
    at = raw.index(b'"k"') + 2  # inside the key "k": splits it into "k," and ""
    crafted = raw[:at] + b',":1,"' + raw[at:]
    assert read_once(crafted)[0] is not None  # '"k,"' repeated: found by the whole check
    at = raw.index(b'"role"')
    assert read_once(raw[:at] + b'"role":"system",' + raw[at:])[0] == "role"


def test_a_body_extending_nothing_is_checked_whole() -> None:
    assert read_once(body(2, ', {"role": "user", "content": "a", "content": "b"}'))[0] == "content"
