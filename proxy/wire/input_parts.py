"""The texts a request carries into the model, per API, for the input guardrails (``proxy.input_guard``).

Each text is named by its *part* (``user``, ``tool_result``, ``system``: the policy's ``parts``) and
by its JSON path in the body, so a redaction can rewrite that one string in the raw bytes
(``proxy.wire.json_spans``). What the model is shown but the checks cannot read (images, audio,
files, screenshots) is listed in ``skipped`` by kind and place, never by content, so the proxy can
say so. The assistant's own earlier turns are output, checked when they were produced: not read here.
Adjacent text parts the model reads as one text (the text parts of one content list, an Anthropic
run of text blocks across consecutive user turns, a Gemini turn's text parts) share a ``group``, so
the checks can read them joined (``guardrails.input.joined``).

Shapes read (and only these; anything else in a part is left as it is):

- OpenAI chat: ``messages[].content`` of ``system``/``developer`` (system), ``user`` (user),
  ``tool``/``function`` (tool_result, named by the assistant's ``tool_calls`` of the same id), as a
  string or a list of ``text`` parts, and a system, developer or user message's ``name`` (a
  participant's name: the prompt carries it);
- Responses: ``instructions`` (system), ``input`` as a string (user), a stored prompt's ``variables``
  (user: strings or ``input_text``, filled into the prompt upstream), input items: messages by role,
  ``function_call_output``, ``custom_tool_call_output``, ``local_shell_call_output``,
  ``shell_call_output`` and ``mcp_call`` output (tool_result);
- Anthropic: ``system`` and ``system`` role messages (system); user messages' strings and ``text``, ``search_result`` and text ``document``
  blocks (user) and ``tool_result`` blocks (tool_result: a string or those blocks; images and
  base64/URL/file documents skipped);
- Gemini: ``systemInstruction`` (or ``system_instruction``) parts (system); ``contents[]`` parts
  other than the model's: ``text`` (user, thought parts too), ``functionResponse.response`` (every
  string in it, keys too); one object where a list is due is a list of it, as Gemini reads it.

Read as an upstream may read them, failing closed (``tests/edge/test_request_differential_fuzz.py``
found each): a part or block without ``type`` that carries a ``text`` string is a text part; a message
whose role is not the API's spelling is read as the role it folds onto (``System``), and one with an
unknown role or none as the user's; only the assistant's own turns, spelt exactly, are skipped.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

Part = Literal["user", "tool_result", "system"]
Path = tuple[str | int, ...]


@dataclass(slots=True)
class InputText:
    part: Part
    path: Path
    """Where the string is in the body (keys and list indexes)."""
    text: str
    tool: str = ""
    """For a tool result: the tool's name when the request names it ("" when it does not)."""
    group: int = 0
    """Texts of one group (adjacent texts of the same part, in body order) are read by the model as
    one text: the adjacent text parts of one message, which the provider concatenates."""


@dataclass(slots=True)
class InputTexts:
    texts: list[InputText]
    skipped: list[str]
    """What the model is shown that no check read, as ``kind@part`` (``image@tool_result``)."""


_MEDIA = {"image", "image_url", "input_image", "input_audio", "input_file", "file", "document", "audio",
          "inlineData", "inline_data", "fileData", "file_data", "computer_screenshot"}


def _kind(block: dict[str, Any], default: str = "") -> str:
    """A block's ``type`` when it is a string (any other value names no type the proxy knows). A block
    without one (or with null) is ``default``, or else a text part when it carries a ``text`` string:
    servers read ``{"text": ...}`` as one (vLLM infers a part's type from its keys)."""
    kind = block.get("type")
    if kind is None:
        return default or ("text" if isinstance(block.get("text"), str) else "")
    return kind if isinstance(kind, str) else ""


def read_role(value: Any, known: tuple[str, ...]) -> str | None:
    """The role a message is screened as: None only for the assistant's own turns, spelt exactly. A
    role in another case or fold (``System``, ``ſystem``) is the one it folds onto, and one the API
    does not name (or none) is the user's: a chat template renders whatever role it is given into the
    prompt, and an upstream that reads roles case-insensitively reads the fold. The codecs' readers of
    the system prompt (for the canary) take their system messages through this too (``is_system``),
    so the canary is armed with what the screen reads as system text."""
    if value == "assistant":
        return None
    if value in known:
        return str(value)
    folded = value.translate(_DOTTED_I).casefold() if isinstance(value, str) else ""
    return folded if folded in known else "user"


CHAT_ROLES = ("system", "developer", "user", "tool", "function")
RESPONSES_ROLES = ("user", "system", "developer")
ANTHROPIC_ROLES = ("user", "system")
SYSTEM_ROLES = ("system", "developer")


def is_system(value: Any, known: tuple[str, ...]) -> bool:
    """Whether a message of role ``value`` (in an API whose roles are ``known``) is read as system
    text, as the screen reads it (``read_role``): ``system``, or ``developer`` where the API names it,
    spelt so or folding onto one. The codecs compare the exact spellings first on their hot loops and
    call this only for a role that is none of them."""
    return read_role(value, known) in SYSTEM_ROLES


_DOTTED_I = str.maketrans({"\u0130": "i", "\u0131": "i"})
"""``ı``/``İ`` read as ``i`` before folding (as ``proxy.wire.key_folds`` does for keys)."""


KEY_TEXT = -1
"""The last element of the path of an object's key read as a text (``_walk``): no array index is
negative and no object key is an int, so the path names no value, and a redaction of it cannot be
spliced (``json_spans.splice`` refuses it: the request is not sent)."""


def _walk(value: Any, path: Path, depth: int = 0) -> Iterator[tuple[Path, str]]:
    """Every string in a JSON value (a Gemini ``functionResponse.response``), with its path: the
    values and the objects' keys, which the model reads as much as the values (a tool's result can
    carry a key or an instruction as a key)."""
    if isinstance(value, str):
        yield path, value
    elif depth < 64 and isinstance(value, dict):
        for key, item in value.items():
            yield (*path, key, KEY_TEXT), key
            yield from _walk(item, (*path, key), depth + 1)
    elif depth < 64 and isinstance(value, list):
        for i, item in enumerate(value):
            yield from _walk(item, (*path, i), depth + 1)


class _Collector:
    """Texts in body order. ``join``: the text continues the group of the text added before it (the
    next text part of the same run); otherwise it starts a group of its own. A run is broken only by
    what the model is shown between two texts (media, a tool result, another role's turn): a block
    the proxy does not know, or an empty text, breaks nothing, so a run is never cut short."""

    __slots__ = ("group", "parts", "skipped", "texts")

    def __init__(self, parts: frozenset[str]) -> None:
        self.texts: list[InputText] = []
        self.skipped: list[str] = []
        self.parts = parts
        self.group = 0

    def add(self, part: Part, path: Path, value: Any, tool: str = "", join: bool = False) -> None:
        if not join:
            self.group += 1
        if value and part in self.parts and isinstance(value, str):
            self.texts.append(InputText(part, path, value, tool, self.group))

    def content(self, part: Part, path: Path, content: Any, tool: str = "",
                text_types: tuple[str, ...] = ("text", "input_text", "output_text"), join: bool = False) -> bool:
        """A string, or a list of typed parts whose text parts are read (adjacent ones as one group)
        and media parts noted. Returns whether the content ended in text (a run the next may join)."""
        if isinstance(content, str):
            self.add(part, path, content, tool, join)
            return True
        if not isinstance(content, list):
            return join
        for i, block in enumerate(content):
            if isinstance(block, str):
                self.add(part, (*path, i), block, tool, join)
                join = True
                continue
            if not isinstance(block, dict):
                continue
            kind = _kind(block)
            if kind in text_types:
                self.add(part, (*path, i, "text"), block.get("text"), tool, join)
                join = True
            elif kind in _MEDIA or not kind and any(k in block for k in _MEDIA):
                self.skipped.append(f"{kind or 'media'}@{part}")
                join = False
        return join

    def result(self) -> InputTexts:
        return InputTexts(self.texts, self.skipped)


def _openai_chat(data: dict[str, Any], parts: frozenset[str]) -> InputTexts:
    out = _Collector(parts)
    messages = data.get("messages")
    if not isinstance(messages, list):
        return out.result()
    names: dict[str, str] = {}
    for i, m in enumerate(messages):
        if not isinstance(m, dict):
            continue
        role = read_role(m.get("role"), CHAT_ROLES)
        path: Path = ("messages", i, "content")
        if role is None:
            for call in m.get("tool_calls") or []:
                if isinstance(call, dict) and isinstance(call.get("function"), dict):
                    names[str(call.get("id"))] = str(call["function"].get("name", ""))
        elif role in ("system", "developer"):
            out.content("system", path, m.get("content"))
        elif role == "user":
            out.content("user", path, m.get("content"))
        elif role == "tool":
            out.content("tool_result", path, m.get("content"), names.get(str(m.get("tool_call_id")), ""))
        elif role == "function":
            out.content("tool_result", path, m.get("content"), str(m.get("name") or ""))
        if role in ("system", "developer", "user"):  # a participant's name goes into the prompt too
            out.add("user" if role == "user" else "system", ("messages", i, "name"), m.get("name"))
    return out.result()


_RESPONSES_OUTPUTS = {"function_call_output": "function_call", "custom_tool_call_output": "custom_tool_call",
                      "local_shell_call_output": "local_shell_call", "shell_call_output": "shell_call",
                      "computer_call_output": "computer_call"}


def _openai_conversation(data: dict[str, Any], parts: frozenset[str]) -> InputTexts:
    """A conversation being created (``POST /v1/conversations``): its ``items`` are Responses input
    items that later requests naming the conversation feed the model."""
    return _openai_responses(data, parts, "items")


def _openai_responses(data: dict[str, Any], parts: frozenset[str], key: str = "input") -> InputTexts:
    out = _Collector(parts)
    if key == "input":
        out.add("system", ("instructions",), data.get("instructions"))
        _prompt_variables(out, data.get("prompt"))
    items = data.get(key)
    if isinstance(items, str):
        out.add("user", (key,), items)
        return out.result()
    if not isinstance(items, list):
        return out.result()
    names: dict[str, str] = {}
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            continue
        kind = _kind(item, "message")
        if kind in ("function_call", "custom_tool_call"):
            names[str(item.get("call_id"))] = str(item.get("name", ""))
        elif kind in ("local_shell_call", "shell_call", "computer_call"):
            names[str(item.get("call_id"))] = kind
        elif kind == "message":
            role = read_role(item.get("role"), RESPONSES_ROLES)
            part: Part | None = "user" if role == "user" else "system" if role in ("system", "developer") else None
            if part is not None:
                out.content(part, (i, "content"), item.get("content"))
        elif kind in _RESPONSES_OUTPUTS:
            tool = names.get(str(item.get("call_id")), _RESPONSES_OUTPUTS[kind])
            output = item.get("output")
            if kind == "computer_call_output":
                out.skipped.append("computer_screenshot@tool_result")
            elif isinstance(output, (str, list)) and kind != "shell_call_output":
                out.content("tool_result", (i, "output"), output, tool)
            else:
                for path, text in _walk(output, (i, "output")):
                    out.add("tool_result", path, text, tool)
        elif kind == "mcp_call":
            out.add("tool_result", (i, "output"), item.get("output"), f"mcp__{item.get('server_label', '')}__"
                                                                       f"{item.get('name', '')}")
    out.texts = [InputText(t.part, (key, *t.path) if t.path[0] not in ("instructions", "prompt") else t.path,
                           t.text, t.tool, t.group) for t in out.texts]
    return out.result()


def _prompt_variables(out: _Collector, prompt: Any) -> None:
    """A stored prompt's ``variables`` (user): filled into the prompt upstream, as strings or
    ``input_text`` (media noted)."""
    variables = prompt.get("variables") if isinstance(prompt, dict) else None
    for name, value in variables.items() if isinstance(variables, dict) else ():
        at: Path = ("prompt", "variables", name)
        if not isinstance(value, dict):
            out.add("user", at, value)
        elif (kind := _kind(value)) in ("input_text", "text"):
            out.add("user", (*at, "text"), value.get("text"))
        elif kind in _MEDIA:
            out.skipped.append(f"{kind}@user")


def _anthropic(data: dict[str, Any], parts: frozenset[str]) -> InputTexts:
    out = _Collector(parts)
    out.content("system", ("system",), data.get("system"), text_types=("text",))
    messages = data.get("messages")
    if not isinstance(messages, list):
        return out.result()
    names: dict[str, str] = {}
    join = False
    """The user's text run goes on: the API combines consecutive user turns into one turn."""
    for i, m in enumerate(messages):
        if not isinstance(m, dict):
            continue
        content = m.get("content")
        role = read_role(m.get("role"), ANTHROPIC_ROLES)
        if role != "user":
            join = False
        if role is None:
            for block in content if isinstance(content, list) else []:
                if isinstance(block, dict) and block.get("type") in ("tool_use", "server_tool_use", "mcp_tool_use"):
                    names[str(block.get("id"))] = str(block.get("name", ""))
            continue
        if role == "system":  # mid-conversation system text (Claude Code): read as system prompt
            out.content("system", ("messages", i, "content"), content, text_types=("text",))
            continue
        if isinstance(content, str):
            out.add("user", ("messages", i, "content"), content, join=join)
            join = True
            continue
        for j, block in enumerate(content if isinstance(content, list) else []):
            if not isinstance(block, dict):
                continue
            path: Path = ("messages", i, "content", j)
            kind = _kind(block)
            if kind in ("tool_result", "mcp_tool_result"):
                tool = names.get(str(block.get("tool_use_id")), "")
                inner = block.get("content")
                if isinstance(inner, str):
                    out.add("tool_result", (*path, "content"), inner, tool)
                inner_join = False
                for k, sub in enumerate(inner if isinstance(inner, list) else []):
                    inner_join = _anthropic_block(out, "tool_result", (*path, "content", k), sub, tool, inner_join)
                join = False
            else:
                join = _anthropic_block(out, "user", path, block, join=join)
    return out.result()


def _anthropic_block(out: _Collector, part: Part, path: Path, block: Any, tool: str = "", join: bool = False) -> bool:
    """One content block of a user turn or a tool result. Besides ``text``, the model reads a
    ``search_result`` (its ``title``, ``source`` and ``content`` text blocks) and a ``document`` whose
    source is plain text (``source.data``) or content (``source.content``: a string or text blocks),
    with its ``title`` and ``context``; a document from base64, a URL or a file is media. A ``text``
    block joins the run of text blocks before it (``join``); returns whether the run goes on."""
    if not isinstance(block, dict):
        return join
    kind = _kind(block)
    if kind == "text":
        out.add(part, (*path, "text"), block.get("text"), tool, join)
        return True
    if kind == "search_result":
        for key in ("title", "source"):
            out.add(part, (*path, key), block.get(key), tool)
        out.content(part, (*path, "content"), block.get("content"), tool, text_types=("text",))
    elif kind == "document":
        for key in ("title", "context"):
            out.add(part, (*path, key), block.get(key), tool)
        source = block.get("source")
        source_kind = _kind(source) if isinstance(source, dict) else ""
        if isinstance(source, dict) and source_kind == "text":
            out.add(part, (*path, "source", "data"), source.get("data"), tool)
        elif isinstance(source, dict) and source_kind == "content":
            out.content(part, (*path, "source", "content"), source.get("content"), tool, text_types=("text",))
        else:
            out.skipped.append(f"document@{part}")
    elif kind in _MEDIA:
        out.skipped.append(f"{kind}@{part}")
    else:
        return join  # a block the proxy does not read (cache markers, thinking echoes): the run goes on
    return False


_GEMINI_MEDIA = ("inlineData", "inline_data", "fileData", "file_data")


def _listed(value: Any, path: Path) -> list[tuple[Path, Any]]:
    """A Gemini list's items with their paths. One object where the list is due is read as a list of
    it, as Gemini's parser reads it (Google's REST examples send ``"parts": {"text": ...}``)."""
    if isinstance(value, list):
        return [((*path, i), item) for i, item in enumerate(value)]
    return [(path, value)] if isinstance(value, dict) else []


def _gemini(data: dict[str, Any], parts: frozenset[str]) -> InputTexts:
    """A part flagged ``thought`` in a turn that is not the model's is read too: nothing says the
    upstream leaves it out of the prompt."""
    out = _Collector(parts)
    for key in ("systemInstruction", "system_instruction"):
        system = data.get(key)
        if isinstance(system, str):
            out.add("system", (key,), system)
        elif isinstance(system, dict):
            join = False
            for at, p in _listed(system.get("parts"), (key, "parts")):
                if isinstance(p, dict) and "text" in p:
                    out.add("system", (*at, "text"), p.get("text"), join=join)
                    join = True
    join = False
    """Consecutive user turns: the API asks for turns that alternate, and where it takes two in a row
    the proxy cannot tell how the model reads them, so their texts run on (fails closed)."""
    for at, c in _listed(data.get("contents"), ("contents",)):
        if not isinstance(c, dict) or c.get("role") == "model":
            join = False
            continue
        for path, p in _listed(c.get("parts"), (*at, "parts")):
            if not isinstance(p, dict):
                continue
            if "text" in p:
                out.add("user", (*path, "text"), p.get("text"), join=join)
                join = True
            if any(k in p for k in ("functionResponse", "function_response", *_GEMINI_MEDIA)):
                join = False
            for key in ("functionResponse", "function_response"):
                fr = p.get(key)
                if isinstance(fr, dict):
                    name = str(fr.get("name", ""))
                    for sub, text in _walk(fr.get("response"), (*path, key, "response")):
                        out.add("tool_result", sub, text, name)
                    if fr.get("parts"):
                        out.skipped.append("media@tool_result")
            for key in _GEMINI_MEDIA:
                if key in p:
                    out.skipped.append(f"{key}@user")
    return out.result()


READERS = {"openai_chat": _openai_chat, "openai_responses": _openai_responses, "anthropic": _anthropic,
           "gemini": _gemini, "openai_conversation": _openai_conversation}


ALL_PARTS = frozenset({"user", "tool_result", "system"})


def input_texts(wire: str, data: dict[str, Any], parts: frozenset[str] = ALL_PARTS) -> InputTexts:
    """The texts of a request body (decoded) in the API ``wire``, in body order, of the ``parts``
    asked for (media are noted whatever the part)."""
    return READERS[wire](data, parts)
