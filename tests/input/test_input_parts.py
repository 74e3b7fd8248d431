"""Which texts each API carries into the model, as the input guardrails read them: the part, the
tool a result belongs to (the audit's ``source``, the taint's name), and the media no check reads."""

from __future__ import annotations

import json

from proxy.wire.input_parts import input_texts


def _found(wire: str, body: dict[str, object]) -> tuple[list[tuple[str, str, str]], list[str]]:
    got = input_texts(wire, body)
    return [(t.part, t.text, t.tool) for t in got.texts], got.skipped


def test_chat() -> None:
    body = {"messages": [
        {"role": "system", "content": "S"}, {"role": "developer", "content": [{"type": "text", "text": "D"}]},
        {"role": "user", "content": [{"type": "text", "text": "U"}, {"type": "image_url", "image_url": {"url": "x"}}]},
        {"role": "assistant", "content": "A", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "web_fetch", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "R"},
        {"role": "function", "name": "legacy", "content": "L"}]}
    assert _found("openai_chat", body) == ([("system", "S", ""), ("system", "D", ""), ("user", "U", ""),
                                            ("tool_result", "R", "web_fetch"), ("tool_result", "L", "legacy")],
                                           ["image_url@user"])


def test_responses() -> None:
    body = {"instructions": "I", "input": [
        {"role": "developer", "content": "D"},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "U"},
                                                         {"type": "input_image", "image_url": "x"}]},
        {"type": "function_call", "call_id": "c1", "name": "web_fetch", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "R"},
        {"type": "custom_tool_call_output", "call_id": "c9", "output": [{"type": "input_text", "text": "C"}]},
        {"type": "mcp_call", "server_label": "gh", "name": "search", "output": "M"},
        {"type": "computer_call_output", "call_id": "c3", "output": {"type": "computer_screenshot"}},
        {"role": "assistant", "content": [{"type": "output_text", "text": "A"}]}]}
    assert _found("openai_responses", body) == (
        [("system", "I", ""), ("system", "D", ""), ("user", "U", ""), ("tool_result", "R", "web_fetch"),
         ("tool_result", "C", "custom_tool_call"), ("tool_result", "M", "mcp__gh__search")],
        ["input_image@user", "computer_screenshot@tool_result"])
    assert _found("openai_responses", {"input": "just text"}) == ([("user", "just text", "")], [])


def test_anthropic() -> None:
    body = {"system": [{"type": "text", "text": "S"}], "messages": [
        {"role": "user", "content": "U"},
        {"role": "assistant", "content": [{"type": "text", "text": "A"},
                                          {"type": "tool_use", "id": "t1", "name": "WebFetch", "input": {}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": [
                {"type": "text", "text": "R"}, {"type": "image", "source": {"type": "base64", "data": "x"}}]},
            {"type": "text", "text": "U2"}]}]}
    assert _found("anthropic", body) == ([("system", "S", ""), ("user", "U", ""), ("tool_result", "R", "WebFetch"),
                                          ("user", "U2", "")], ["image@tool_result"])


def test_gemini() -> None:
    body = {"systemInstruction": {"parts": [{"text": "S"}]}, "contents": [
        {"role": "user", "parts": [{"text": "U"}, {"inlineData": {"mimeType": "image/png", "data": "x"}}]},
        {"role": "model", "parts": [{"functionCall": {"name": "web_fetch", "args": {}}}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "web_fetch",
                                                         "response": {"output": "R", "meta": {"notes": ["N"]}}}}]},
        {"role": "user", "parts": [{"function_response": {"name": "snake", "response": {"content": "K"}}}]}]}
    found, skipped = _found("gemini", body)
    assert found == [("system", "S", ""), ("user", "U", ""), ("tool_result", "output", "web_fetch"),
                     ("tool_result", "R", "web_fetch"), ("tool_result", "meta", "web_fetch"),
                     ("tool_result", "notes", "web_fetch"), ("tool_result", "N", "web_fetch"),
                     ("tool_result", "content", "snake"), ("tool_result", "K", "snake")]
    assert skipped == ["inlineData@user"]


def test_only_the_parts_asked_for_are_collected() -> None:
    body = {"messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}]}
    got = input_texts("openai_chat", body, frozenset({"user"}))
    assert [t.text for t in got.texts] == ["U"]
    assert json.dumps(body)  # the body itself is not touched


def _groups(wire: str, body: dict[str, object]) -> list[list[str]]:
    """The texts by group: the runs the model reads as one text."""
    out: list[list[str]] = []
    last = None
    for t in input_texts(wire, body).texts:
        if t.group != last:
            out.append([])
            last = t.group
        out[-1].append(t.text)
    return out


def test_adjacent_text_parts_form_a_group_until_something_else_is_shown() -> None:
    chat = {"messages": [{"role": "user", "content": [
        {"type": "text", "text": "a"}, {"type": "text", "text": "b"}, {"type": "image_url", "image_url": {"url": "x"}},
        {"type": "text", "text": "c"}, {"type": "unknown"}, {"type": "text", "text": ""}, {"type": "text", "text": "d"}]},
        {"role": "user", "content": [{"type": "text", "text": "e"}]}]}
    assert _groups("openai_chat", chat) == [["a", "b"], ["c", "d"], ["e"]]
    anthropic = {"system": [{"type": "text", "text": "s1"}, {"type": "text", "text": "s2"}], "messages": [
        {"role": "user", "content": "u1"},
        {"role": "user", "content": [{"type": "text", "text": "u2", "cache_control": {"type": "ephemeral"}},
                                     {"type": "tool_result", "tool_use_id": "t", "content": [
                                         {"type": "text", "text": "r1"}, {"type": "text", "text": "r2"}]},
                                     {"type": "text", "text": "u3"}]},
        {"role": "assistant", "content": "ok"}, {"role": "user", "content": "u4"}]}
    assert _groups("anthropic", anthropic) == [["s1", "s2"], ["u1", "u2"], ["r1", "r2"], ["u3"], ["u4"]]
    gemini = {"systemInstruction": {"parts": [{"text": "s1"}, {"text": "s2"}]}, "contents": [
        {"role": "user", "parts": [{"text": "a"}, {"text": "b"}, {"inlineData": {"data": "x"}}, {"text": "c"}]},
        {"role": "user", "parts": [{"text": "d"}]}]}
    assert _groups("gemini", gemini) == [["s1", "s2"], ["a", "b"], ["c", "d"]]
    gemini["contents"].insert(1, {"role": "model", "parts": [{"text": "m"}]})
    assert _groups("gemini", gemini) == [["s1", "s2"], ["a", "b"], ["c"], ["d"]]
    responses = {"input": [{"role": "user", "content": [{"type": "input_text", "text": "a"},
                                                        {"type": "input_text", "text": "b"}]},
                           {"type": "function_call_output", "call_id": "c", "output": [
                               {"type": "input_text", "text": "r1"}, {"type": "input_text", "text": "r2"}]}]}
    assert _groups("openai_responses", responses) == [["a", "b"], ["r1", "r2"]]
