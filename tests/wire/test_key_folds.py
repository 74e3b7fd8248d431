"""A key a case-insensitive parser reads as a field the proxy reads under another spelling is
refused (``proxy.wire.key_folds``, through ``one_reading.read_once``): at every level the proxy reads,
in ASCII case, Go's Unicode folds (``ſ``, the Kelvin sign) and ``\\u`` escapes spelling a key; keys
of the client's own maps are not; an agent's next turn is checked in what it adds."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from proxy.wire.base import JsonBody
from proxy.wire.key_folds import FOLDS, NAMES, FoldedKey, _fold, folded_key
from proxy.wire.one_reading import read_once, repeated_message
from tests.wire.test_one_reading_turns import TURNS, _assistant, _body, _user
from tests.wire.test_quick_view import WIRES

WIRE_OF = {"chat": "openai_chat", "anthropic": "anthropic", "responses": "openai_responses"}


def _read(api: str, body: str) -> str | None:
    return read_once(body.encode(), folds=FOLDS[WIRE_OF[api]])[0]


# A body per level the proxy reads; ``{K}`` is where the folding key goes, in place of ``{k}``.
LEVELS: list[tuple[str, str, str]] = [
    ("chat", "messages", '{"model":"m","{K}":[{"role":"user","content":"hi"}]}'),
    ("chat", "model", '{"{K}":"m","messages":[{"role":"user","content":"hi"}]}'),
    ("chat", "content", '{"model":"m","messages":[{"role":"user","content":"fine","{K}":"evil"}]}'),
    ("chat", "role", '{"model":"m","messages":[{"{K}":"system","content":"x"}]}'),
    ("chat", "text", '{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a","{K}":"b"}]}]}'),
    ("chat", "tool_calls", '{"model":"m","messages":[{"role":"assistant","{K}":[]}]}'),
    ("chat", "arguments", ('{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"c","type":"function",'
                           '"function":{"name":"Read","arguments":"{}","{K}":"{\\"file_path\\":\\"/etc\\"}"}}]}]}')),
    ("chat", "function", ('{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"c","type":"function",'
                          '"{K}":{"name":"Read","arguments":"{}"}}]}]}')),
    ("chat", "tool_call_id", '{"model":"m","messages":[{"role":"tool","{K}":"c","content":"x"}]}'),
    ("chat", "cached_content", '{"model":"m","messages":[],"extra_body":{"google":{"{K}":"cachedContents/a"}}}'),
    ("anthropic", "system", '{"model":"m","max_tokens":5,"{K}":"x","messages":[]}'),
    ("anthropic", "content", '{"model":"m","max_tokens":5,"messages":[{"role":"user","{K}":"x"}]}'),
    ("anthropic", "text", '{"model":"m","max_tokens":5,"system":[{"type":"text","{K}":"x"}],"messages":[]}'),
    ("anthropic", "text", ('{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"tool_result",'
                           '"tool_use_id":"t","content":[{"type":"text","text":"a","{K}":"b"}]}]}]}')),
    ("anthropic", "content", ('{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"tool_result",'
                              '"tool_use_id":"t","content":"a","{K}":"b"}]}]}')),
    ("anthropic", "input", ('{"model":"m","max_tokens":5,"messages":[{"role":"assistant","content":[{"type":"tool_use",'
                            '"id":"t","name":"Read","input":{},"{K}":{"file_path":"/etc/passwd"}}]}]}')),
    ("anthropic", "data", ('{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"document",'
                           '"source":{"type":"text","media_type":"text/plain","data":"a","{K}":"b"}}]}]}')),
    ("anthropic", "max_tokens", '{"model":"m","{K}":5,"messages":[]}'),
    ("responses", "instructions", '{"model":"m","{K}":"x","input":"hi"}'),
    ("responses", "previous_response_id", '{"model":"m","input":"hi","{K}":"resp_1"}'),
    ("responses", "input", '{"model":"m","{K}":[{"role":"user","content":"hi"}]}'),
    ("responses", "content", '{"model":"m","input":[{"type":"message","role":"user","content":"a","{K}":"b"}]}'),
    ("responses", "text", ('{"model":"m","input":[{"type":"message","role":"user","content":'
                           '[{"type":"input_text","text":"a","{K}":"b"}]}]}')),
    ("responses", "output", '{"model":"m","input":[{"type":"function_call_output","call_id":"c","{K}":"x"}]}'),
    ("responses", "text", ('{"model":"m","input":[{"type":"function_call_output","call_id":"c","output":'
                           '[{"type":"input_text","{K}":"x"}]}]}')),
    ("responses", "id", '{"model":"m","input":"hi","conversation":{"{K}":"conv_1"}}'),
    ("responses", "content", '{"items":[{"type":"message","role":"user","{K}":"x"}]}'),  # POST /v1/conversations
]


def _spellings(name: str) -> list[str]:
    """Keys that fold onto ``name`` without being it: ASCII case, Go's ``ſ`` and Kelvin sign (and the
    dotless/dotted i), as the upstream reads them once unescaped."""
    out = [name.upper(), name[0].upper() + name[1:], name[:-1] + name[-1].upper()]
    for plain, odd in (("s", "\u017f"), ("k", "\u212a"), ("i", "\u0131"), ("i", "\u0130")):
        if plain in name:
            out.append(name.replace(plain, odd, 1))
    return out


@pytest.mark.parametrize(("api", "name", "body"), LEVELS)
def test_a_key_that_folds_onto_a_field_is_refused_at_every_level_the_proxy_reads(api: str, name: str,
                                                                                 body: str) -> None:
    assert not isinstance(_read(api, body.replace("{K}", name)), FoldedKey)  # the field itself (or its repeat)
    for key in _spellings(name):
        found = _read(api, body.replace("{K}", key))
        assert isinstance(found, FoldedKey), key
        assert (str(found), found.name) == (key, name)
        assert f"'{key}'" in repeated_message(found) and f"'{name}'" in repeated_message(found)


@pytest.mark.parametrize(("api", "name", "body"), LEVELS[:6] + LEVELS[10:14] + LEVELS[18:22])
def test_a_key_spelled_with_escapes_is_read_as_the_upstream_unescapes_it(api: str, name: str, body: str) -> None:
    upper = "".join(f"\\u{ord(c):04X}" if c.isalpha() else c for c in name.upper())
    assert _read(api, body.replace("{K}", upper)) == name.upper()
    ſ_escaped = name.replace("s", "\\u017f") if "s" in name else name[0].upper() + name[1:]
    assert _read(api, body.replace("{K}", ſ_escaped)) is not None
    plain = "".join(f"\\u{ord(c):04x}" for c in name)  # an escaped spelling of the name itself: one reading
    assert not isinstance(_read(api, body.replace("{K}", plain)), FoldedKey)


def test_the_kelvin_sign_and_long_s_fold_as_go_folds_them() -> None:
    assert _read("anthropic", '{"model":"m","max_to\u212aens":5,"messages":[]}') == "max_to\u212aens"
    assert _read("chat", '{"model":"m","\u017ftream":true,"messages":[]}') == "\u017ftream"
    assert _read("chat", '{"model":"m","messages":[],"\\u017ftream":true}') == "\u017ftream"
    assert _read("chat", '{"model":"m","messages":[],"\\u212Aind":1}') is None  # folds onto no field


FREE_FORM = [
    ("chat", ('{"model":"m","tools":[{"type":"function","function":{"name":"t","parameters":{"type":"object",'
              '"properties":{"Content":{"type":"string"},"Messages":{"type":"string"}},"Required":["Content"]}}}],'
              '"messages":[{"role":"user","content":"hi"}],"metadata":{"Model":"x","ROLE":"y"}}')),
    ("chat", ('{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":'
              '{"name":"t","arguments":"{\\"Content\\":1}"}}]},{"role":"user","content":"Content: Role: \\"Text\\": x"}]}')),
    ("anthropic", ('{"model":"m","max_tokens":5,"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t",'
                   '"name":"TodoWrite","input":{"todos":[{"Content":"a","activeForm":"b","\u017ftatus":"c"}]}}]}],'
                   '"tools":[{"name":"TodoWrite","input_schema":{"type":"object","properties":{"Text":{}}}}],'
                   '"metadata":{"User_Id":"u"}}')),
    ("responses", ('{"model":"m","input":[{"type":"function_call","call_id":"c","name":"t","arguments":"{}"},'
                   '{"type":"local_shell_call","call_id":"d","action":{"type":"exec","command":["ls"],'
                   '"env":{"Content":"x","PATH":"/bin"}}}],"prompt":{"id":"p","variables":{"Text":"x","INPUT":"y"}},'
                   '"text":{"format":{"type":"json_schema","name":"n","schema":{"properties":{"Content":{}}}}}}')),
]


@pytest.mark.parametrize(("api", "body"), FREE_FORM)
def test_keys_of_the_clients_own_maps_are_not_refused(api: str, body: str) -> None:
    json.loads(body)
    assert _read(api, body) is None


def test_no_two_names_fold_alike_and_each_is_lower_case_ascii_snake_case() -> None:
    """Why an object whose keys are all ``NAMES`` needs no key-by-key look (``folded_key``'s fast path)."""
    assert len({_fold(n) for n in NAMES}) == len(NAMES)
    assert all(n.isascii() and n == n.lower() and n.replace("_", "").isalnum() for n in NAMES)


def test_every_field_the_readers_look_up_is_a_name() -> None:
    """The proxy's readers look these up at the levels walked: each is in ``NAMES`` (so a folding key
    beside it is refused, not skipped)."""
    read = {"model", "stream", "messages", "role", "content", "tool_calls", "tool_call_id", "function",
            "function_call", "name", "arguments", "custom", "input", "type", "text", "id", "tools",
            "extra_body", "google", "cached_content", "system", "tool_use_id", "is_error", "source", "data",
            "title", "context", "instructions", "previous_response_id", "conversation", "prompt", "store",
            "background", "call_id", "output", "summary", "server_label", "items", "refusal", "thinking"}
    assert read <= NAMES


def test_a_deeply_nested_body_is_walked_without_recursion() -> None:
    deep: Any = {"type": "text", "Text": "x"}
    for _ in range(5000):
        deep = {"type": "tool_result", "content": [deep]}
    body = {"model": "m", "messages": [{"role": "user", "content": [deep]}]}
    assert folded_key(body, FOLDS["anthropic"].top) == "Text"


# ------------------------------------------------------------------ an agent's next turn

FOLDING = {"chat": '{"role":"user","content":"fine","Content":"evil"}',
           "anthropic": '{"role":"user","content":[{"type":"text","text":"a","TEXT":"b"}]}',
           "responses": '{"type":"message","role":"user","content":"y","Content":"x"}'}


@pytest.fixture(autouse=True)
def _nothing_kept() -> Iterator[None]:
    for kept in TURNS.values():
        kept.clear()
    yield
    for kept in TURNS.values():
        kept.clear()


def _checked(api: str, raw: bytes) -> str | None:
    """What the edge does with a guarded body: the refused key, or None and the body read (kept)."""
    wire = WIRES[api]
    key, decoded = read_once(raw, added=wire.added_to_clean(raw), folds=FOLDS[WIRE_OF[api]])
    if key is None:
        wire.quick_view(JsonBody(raw, decoded, repeat_free=True), stream=False)
    return key


@pytest.mark.parametrize("api", list(WIRE_OF))
def test_a_folding_key_in_the_items_a_turn_adds_is_found_from_those_items(api: str) -> None:
    items = [_user(api, "hi")]
    assert _checked(api, _body(api, items, "k1")) is None
    for n in range(2, 4):
        items += [_assistant(api, f"answer {n}"), _user(api, f"Question {n}")]
        raw = _body(api, items, "k1")
        assert WIRES[api].added_to_clean(raw) is not None
        assert _checked(api, raw) is None
    bad = _body(api, [*items, _assistant(api, "ok"), FOLDING[api]], "k1")
    added = WIRES[api].added_to_clean(bad)
    assert added is not None and FOLDING[api].encode() in added  # checked in what the turn adds...
    key = _checked(api, bad)
    assert isinstance(key, FoldedKey)  # ...and found there
    assert key == read_once(bad, folds=FOLDS[WIRE_OF[api]])[0]  # the key the whole check names
    items += [_assistant(api, "ok"), _user(api, "go on")]  # the refused body was not kept
    raw = _body(api, items, "k1")
    assert WIRES[api].added_to_clean(raw) is not None
    assert _checked(api, raw) is None


@pytest.mark.parametrize("api", list(WIRE_OF))
def test_a_folding_key_in_the_unchanged_part_is_never_a_clean_base(api: str) -> None:
    first = [FOLDING[api], _user(api, "hi")]
    assert _checked(api, _body(api, first, "k2")) is not None
    first += [_assistant(api, "answer"), _user(api, "question")]
    raw = _body(api, first, "k2")
    assert WIRES[api].added_to_clean(raw) is None
    assert _checked(api, raw) is not None


def test_the_top_level_of_a_later_turn_is_its_kept_bodys() -> None:
    """A key at the top level of a body that extends a kept one is outside what it adds: that body
    is not an extension (its bytes before the anchor differ), so it is checked whole."""
    items = [_user("chat", "hi")]
    for n in range(1, 4):
        assert _checked("chat", _body("chat", items, "k3")) is None
        items += [_assistant("chat", f"a{n}"), _user("chat", f"q{n}")]
    raw = _body("chat", items, "k3").replace(b'"model":"m"', b'"Model":"m"', 1)
    assert WIRES["chat"].added_to_clean(raw) is None
    assert _checked("chat", raw) == "Model"
