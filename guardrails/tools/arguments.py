"""Tool-call arguments read the way the most lenient client reads them (pure).

The anthropic SDK accumulates streamed ``input_json_delta`` fragments with ``jiter`` in partial mode:
a truncated object (``{"file_path": "/etc/cron.d/x", "content": "ab``) and an object followed by
trailing data (``{...} garbage``, ``{...}{...}``) both come out as the first object, recovered. The
agent then acts on that object, so the proxy judges the same object. ``jiter`` in
``trailing-strings`` mode is a superset of that reading (it also keeps an unterminated string value).

States recorded as the ``args`` observation:

- ``ok``: strict JSON object;
- ``recovered``: not strict JSON (or JSON text inside a JSON string), but a lenient reader recovers an
  object (judged as that object);
- ``raw_patch``: the whole input is an ``apply_patch`` envelope (Codex freeform tool);
- ``raw_text``: freeform text (a ``custom`` tool), judged through the tool's ``command`` or ``patch``
  role when it has one;
- ``invalid_json``: nothing a client could act on can be recovered: blocked (``unparseable_arguments``).
"""

from __future__ import annotations

import json
from typing import Any

import jiter

MAX_ARGUMENT_DEPTH = 64
"""Deeper JSON is not judged (``invalid_json``); the message checks cap nesting on their own."""


def _depth_ok(text: str) -> bool:
    """A cheap upper bound of the nesting depth (brackets in strings count too: conservative)."""
    depth = 0
    for ch in text:
        if ch in "[{":
            depth += 1
            if depth > MAX_ARGUMENT_DEPTH:
                return False
        elif ch in "]}":
            depth -= 1
    return True


def parse_arguments(arguments: str) -> tuple[Any, str]:
    """(value, state): the strict JSON value, else the value a lenient client recovers, else None."""
    if not arguments.strip():
        return {}, "ok"
    if not _depth_ok(arguments):
        return None, "invalid_json"
    try:
        value = json.loads(arguments)
    except (json.JSONDecodeError, RecursionError):
        pass
    else:
        if isinstance(value, str) and value.lstrip().startswith("{"):
            inner, _ = parse_arguments(value)  # double-encoded: a client may decode twice
            if isinstance(inner, dict):
                return inner, "recovered"
        return value, "ok"
    try:
        value = jiter.from_json(arguments.encode("utf-8", "surrogatepass"), partial_mode="trailing-strings")
    except (ValueError, UnicodeEncodeError):
        return None, "invalid_json"
    return value, "recovered"


def string_values(value: object, limit: int = 100_000) -> list[str]:
    """Every string in a JSON value, keys included, decoded (``\\u0041KIA`` -> ``AKIA``). Iterative."""
    out: list[str] = []
    stack = [value]
    while stack and len(out) < limit:
        cur = stack.pop()
        if isinstance(cur, str):
            out.append(cur)
        elif isinstance(cur, dict):
            for k, v in cur.items():
                out.append(str(k))
                stack.append(v)
        elif isinstance(cur, list):
            stack.extend(cur)
    return out


def decoded_text(arguments: str) -> str:
    """The decoded string values of arguments, one per line, for the text checks (secrets and the
    like): JSON escapes must not hide what the tool will receive. "" when nothing decodes or when
    the decoded text adds nothing to the raw text."""
    value, state = parse_arguments(arguments)
    if state == "invalid_json" or value is None:
        return ""
    strings = string_values(value)
    if "\\" not in arguments and state == "ok":
        return ""  # no escapes: the raw text already shows every value as the tool receives it
    return "\n".join(strings)
