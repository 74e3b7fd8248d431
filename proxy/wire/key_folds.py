"""One reading of a key's case: a request key that a case-insensitive parser reads as a field the
proxy reads under another spelling is refused (``folded_key``, called by ``one_reading.read_once``).

Go's ``encoding/json`` (Ollama's and LocalAI's OpenAI-compatible APIs, most Go gateways) matches an
object key to a struct field exactly first, and failing that by ``foldName``: ASCII letters folded
to one case, every other character to the smallest of its ``unicode.SimpleFold`` orbit, so ``ſ``
(U+017F) reads as ``s`` and the Kelvin sign (U+212A) as ``k``; of keys that land on one field the
last wins. The proxy reads keys byte for byte. So ``{"messages": [benign], "Messages": [evil]}``,
a message's ``"Content"`` beside its ``"content"``, or a lone ``"ſystem"`` is one request to the
proxy's input guardrails and canary and another to such an upstream. No client's serializer writes
an API field in another case (the OpenAI and Anthropic APIs name every field in lower-case ASCII
``snake_case``), so such a body is refused with the API's 400 before anything goes upstream.

What is refused: at a level the proxy reads (``KeyFolds``: the body, each message or input item,
each content part or block and what a ``tool_result`` contains, tool calls and their ``function``,
tool definitions), a key that is not one of ``NAMES`` byte for byte but folds onto one. The fold is
wider than Go's on purpose (``_fold``): Unicode full case folding (so Go's ``ſ`` and ``K``, and the
ligatures a full folding splits), and ``ı``/``İ`` to ``i`` (their simple upper- and lower-case
mappings are ASCII: a parser comparing characters by those mappings matches them). Keys
of maps the client names itself (a tool call's ``input``/``arguments``, a schema's ``properties``,
``metadata``, a prompt's ``variables``) are never looked at: the walk descends only through the
fields each level lists.

Cost, and why this is sound. The walk runs on the object the repeated-key check already decoded (no
second decode). Per object its keys are looked up in ``NAMES``: an object whose every key is a name
byte for byte has no key that folds onto one without being it (no two names fold alike:
``tests/wire/test_key_folds.py``), so it needs nothing more; only an object with another key has its
keys folded. On a 66 KB agent turn read whole (a conversation's first) the walk costs about 1.2x a
msgspec decode of the body, 0.5x what the repeated-key check costs; a byte-level prefilter (skip the
walk unless some key-shaped string holds an upper-case letter, a ``\\u`` escape or the lead byte of
``ſ``/``K``: a ``bytes.translate`` pass and a search) was measured and not kept: it costs 1.5x a
decode on that body, more than the walk it would save, and on a Claude Code body (``activeForm`` in
its tool inputs) it finds a candidate and the walk runs anyway (``python -m bench.one_reading``).

An agent's later turn is checked in what it adds only, by the argument ``repeated_in_items`` makes
(``proxy.wire.conversation_delta``): a body ``P[:b] + X + P[a:]`` that extends a kept body P holds
P's objects outside the replaced items with their keys unchanged, at the same levels, and X's values
as items of P's history list. P was checked when it was first seen (a refused body is never kept),
so the body has a folding key at a read level exactly when X's values have one at the item level
(``KeyFolds.items``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Self

Level = dict[str, "Level"]
"""The fields of an object the walk descends through, each to the level of its value (an object, or
each object of a list); every key of an object at a level is checked, descended or not."""

_CHAT_FUNCTION: Level = {}
_CHAT_CALL: Level = {"function": _CHAT_FUNCTION, "custom": _CHAT_FUNCTION}
_CHAT_PART: Level = {}
_CHAT_MESSAGE: Level = {"content": _CHAT_PART, "tool_calls": _CHAT_CALL, "function_call": _CHAT_FUNCTION}
_CHAT_EXTRA: Level = {"google": {}}
_CHAT: Level = {"messages": _CHAT_MESSAGE, "tools": _CHAT_CALL, "extra_body": _CHAT_EXTRA}

_RESPONSES_PART: Level = {}
_RESPONSES_ITEM: Level = {"content": _RESPONSES_PART, "output": _RESPONSES_PART, "summary": _RESPONSES_PART}
_RESPONSES: Level = {"input": _RESPONSES_ITEM, "items": _RESPONSES_ITEM, "tools": {}, "prompt": {},
                     "conversation": {}}
"""A Responses request, or a conversation being created (its ``items``: ``POST /v1/conversations``)."""

_ANTHROPIC_BLOCK: Level = {}
_ANTHROPIC_SOURCE: Level = {"content": _ANTHROPIC_BLOCK}
_ANTHROPIC_BLOCK.update(content=_ANTHROPIC_BLOCK, source=_ANTHROPIC_SOURCE)
"""A content block; its ``content`` (a ``tool_result``'s, a ``search_result``'s) holds blocks."""
_ANTHROPIC_MESSAGE: Level = {"content": _ANTHROPIC_BLOCK}
_ANTHROPIC: Level = {"messages": _ANTHROPIC_MESSAGE, "system": _ANTHROPIC_BLOCK, "tools": {}}


@dataclass(frozen=True, slots=True)
class KeyFolds:
    """The levels of one API's request body the proxy reads."""

    top: Level
    items: Level
    """The level of the history list's items: what an agent's next turn adds."""
    maps: tuple[tuple[tuple[str, ...], Level], ...] = ()
    """Maps the client names (their keys are its own: never looked at) whose values are at a level the
    proxy reads, by their path in the body: a Responses stored prompt's ``variables``, whose values
    are texts or ``input_text`` parts filled into the prompt."""

    def folded(self, body: Any) -> FoldedKey | None:
        """``folded_key`` of a whole body: its levels from ``top``, then the values of its ``maps``
        (looked at only when the body has such a map)."""
        found = folded_key(body, self.top)
        for path, level in self.maps:
            value = body
            for key in path:
                value = value.get(key) if type(value) is dict else None
            if found is None and type(value) is dict:
                found = folded_key(list(value.values()), level)
        return found


FOLDS: dict[str, KeyFolds] = {
    "openai_chat": KeyFolds(_CHAT, _CHAT_MESSAGE),
    "openai_responses": KeyFolds(_RESPONSES, _RESPONSES_ITEM, ((("prompt", "variables"), _RESPONSES_PART),)),
    "anthropic": KeyFolds(_ANTHROPIC, _ANTHROPIC_MESSAGE),
}
"""By wire name. Gemini is not here: its upstream reads proto JSON, which matches names exactly
(``one_reading`` refuses its two spellings of one field)."""

_NAME_LIST = """
    model messages stream stream_options temperature top_p top_k n stop max_tokens max_completion_tokens
    presence_penalty frequency_penalty logit_bias logprobs top_logprobs user tools tool_choice
    parallel_tool_calls response_format seed service_tier store metadata modalities audio prediction
    reasoning_effort web_search_options functions function_call extra_body prompt_cache_key
    prompt_cache_retention safety_identifier verbosity google cached_content thinking_config
    role content name tool_calls tool_call_id refusal reasoning reasoning_content thinking
    type text image_url input_audio file url detail index id function custom arguments input description
    parameters strict format
    instructions previous_response_id conversation prompt background include max_output_tokens
    max_tool_calls truncation items version variables status call_id output summary encrypted_content
    action server_label error approval_request_id approve reason result queries results
    pending_safety_checks acknowledged_safety_checks max_output_length operation code container_id
    outputs file_id file_data file_url filename annotations phase
    system stop_sequences container mcp_servers context_management source tool_use_id is_error
    cache_control citations signature data title context server_name caller error_code page_age
    retrieved_at return_code stdout stderr media_type input_schema max_uses allowed_domains
    blocked_domains user_location display_width_px display_height_px display_number input_examples
    defer_loading allowed_callers
"""
NAMES = frozenset(_NAME_LIST.split())
"""The field names of the levels walked, in the three APIs (their documented request fields, and
every name the proxy's readers look up there). Lower-case ASCII ``snake_case`` each: a name missing
here only costs its objects the key-by-key fold; it is never refused (it folds onto itself)."""

_DOTTED_I = str.maketrans({"\u0130": "i", "\u0131": "i"})


def _fold(key: str) -> str:
    """What ``key`` reads as to a case-insensitive parser, for comparing with ``NAMES``: full Unicode
    case folding (ASCII letters, ``ſ``, ``K``, ligatures) after ``ı``/``İ`` become ``i``."""
    return key.translate(_DOTTED_I).casefold()


_FOLDED = {_fold(name): name for name in NAMES}
"""Each name by its fold (``tests/wire/test_key_folds.py`` checks that no two names fold alike)."""


class FoldedKey(str):
    """A key of the request body that folds onto the field ``name`` without being it."""

    name: str

    def __new__(cls, key: str, name: str) -> Self:
        self = super().__new__(cls, key)
        self.name = name
        return self


def folded_key(value: Any, level: Level) -> FoldedKey | None:
    """The first key, at ``level`` of ``value`` or below it, that is not one of ``NAMES`` but folds
    onto one; None when there is none (or ``value`` is not an object or list). Per object, its keys
    are looked up in ``NAMES`` (a handful each); only an object with another key has its keys folded.
    Iterative: a body nested as deep as the decoder allows cannot exhaust the stack."""
    names, stack = NAMES, [(value, level)]
    while stack:
        obj, at = stack.pop()
        if type(obj) is list:
            for item in obj:
                if type(item) is dict or type(item) is list:
                    stack.append((item, at))
            continue
        if type(obj) is not dict:
            continue
        for key in obj:
            if key not in names:
                found = _first_folded(obj)
                if found is not None:
                    return found
                break
        for field, below in at.items():
            sub = obj.get(field)
            if type(sub) is dict or type(sub) is list:
                stack.append((sub, below))
    return None


def _first_folded(obj: dict[str, Any]) -> FoldedKey | None:
    for key in obj:
        if key not in NAMES:
            name = _FOLDED.get(_fold(key))
            if name is not None:
                return FoldedKey(key, name)
    return None


def folded_message(key: FoldedKey) -> str:
    """The 400's text (the key is the client's own, shown only when short and printable)."""
    shown = str(key) if len(key) <= 80 and key.isprintable() else "a key"
    return (f"the request body has the key '{shown}', which a case-insensitive JSON parser (Go's encoding/json, "
            f"behind many OpenAI-compatible servers) reads as the field '{key.name}' and guardproxy does not: "
            f"spell it '{key.name}'")
