"""``proxy.wire.json_spans.splice`` and ``proxy.wire.input_parts`` on arbitrary bodies: the texts are
found whatever the body holds (never an exception), and rewriting any of them changes exactly those
strings: the body decodes to the same value with only those strings replaced, and every byte outside
their literals is the client's."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from proxy.wire.input_parts import READERS, input_texts
from proxy.wire.json_spans import Path, SpliceError, splice, value_at

_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12) | st.sampled_from(
    ["\U000e0041\U000e0042", "é\\\"/\n\t", "AKIAQ7XR4K2MZT9BWP3N"])
_leaf = st.none() | st.booleans() | st.integers() | _text
_json = st.recursive(_leaf, lambda kids: st.lists(kids, max_size=4) | st.dictionaries(
    st.sampled_from(["role", "content", "text", "type", "tool_result", "parts", "messages", "contents", "input",
                     "output", "functionResponse", "response", "system", "instructions", "name", "call_id"]),
    kids, max_size=4), max_leaves=30)
_roles = st.sampled_from(["user", "system", "tool", "assistant", "model", "developer"])
_message = st.fixed_dictionaries({"role": _roles, "content": _json})
_bodies = st.fixed_dictionaries({"messages": st.lists(_message, max_size=4), "input": _json, "contents": _json,
                                 "system": _json, "instructions": _json})


def _spell(value: Any, ascii_only: bool, spaced: bool) -> bytes:
    return json.dumps(value, ensure_ascii=ascii_only, indent=1 if spaced else None).encode()


@settings(max_examples=300, derandomize=True)
@given(_bodies, st.booleans(), st.booleans())
def test_every_text_found_can_be_rewritten_and_nothing_else_changes(body: dict[str, Any], ascii_only: bool,
                                                                    spaced: bool) -> None:
    raw = _spell(body, ascii_only, spaced)
    for wire in READERS:
        found = input_texts(wire, body)
        for t in found.texts:
            assert value_at(body, t.path) == t.text
        wanted: dict[Path, str] = {t.path: f"<{n}>" for n, t in enumerate(found.texts)}
        try:
            out = splice(raw, wanted)
        except SpliceError:
            assert len(wanted) != len({t.path for t in found.texts})  # only for a path found twice
            continue
        expected = json.loads(raw)
        for path, new in wanted.items():
            *head, last = path
            value_at(expected, tuple(head))[last] = new
        assert json.loads(out) == expected
        if not wanted:
            assert out is raw


def test_splice_refuses_a_duplicate_key_on_the_rewritten_path() -> None:
    raw = b'{"messages": [{"role": "user", "content": "a", "content": "b"}]}'
    try:
        splice(raw, {("messages", 0, "content"): "x"})
    except SpliceError:
        return
    raise AssertionError("a duplicate key on a rewritten path must be refused")
