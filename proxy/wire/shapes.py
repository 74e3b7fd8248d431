"""Every field of the objects a decoder reads, so that what no decoder reads is still checked (#10).

A codec reads the fields that carry output (text, tool arguments) and knows the ones that carry none
(ids, enums, numbers, usage). A field outside both, at any depth (an extra string inside a chat tool
call, an Anthropic delta, a Responses event or item, a Gemini content or function call), or an item
that is not an object in a list of objects (a string among Anthropic's content blocks), is still
shown by a client that prints the object: curl, agents that log raw JSON, SDK objects that keep
unknown fields (``model_dump``). ``unread`` finds every such field with its strings, for the codec to
check: in a streamed object as a lane of its own per field path (``lane_events``: a value split over
several chunks is checked as one text, as a client that concatenates them would show it), in a whole
object checked whole (``whole_events``). Replacement rebuilds the answer from known fields only, so
an unread field never survives it.

Cost: the fields of an object are compared with its shape in one set operation (C speed); only
fields whose values have a shape of their own are descended into. A clean chat chunk is three such
comparisons. The strings of an unread field are gathered only when there is one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from guardrails.datamodel import Event, StreamError, TextDelta, WholeText


@dataclass(frozen=True, slots=True)
class Shape:
    """The fields an API defines for one object."""

    keys: frozenset[str]
    children: dict[str, Shape | ByType] = field(default_factory=dict)
    """Fields whose value (an object, or a list of objects) has a shape of its own."""


@dataclass(frozen=True, slots=True)
class ByType:
    """Objects discriminated by ``type``; a type missing here is the codec's to decode (it either
    checks every string of such an object or fails closed)."""

    shapes: dict[str, Shape]


def obj(*keys: str, **children: Shape | ByType) -> Shape:
    """A shape with ``keys`` (read, or carrying no text) and ``children`` (descended into)."""
    return Shape(frozenset(keys) | frozenset(children), children)


def by_type(**shapes: Shape) -> ByType:
    return ByType(shapes)


Unread = list[tuple[str, str, str]]
"""(field path, field names, the text of its value) per unread field. The names are the field's own and
those of any object inside its value; the text is the value's strings and numbers. Apart, so that a
value streamed over several chunks reads as one text in its lane, as a client that concatenates it
shows it (the names between its pieces would otherwise cut a credential in two)."""


def unread(value: Any, shape: Shape | ByType, path: str = "") -> Unread:
    """Every field of ``value`` (an object or a list of objects) outside ``shape``, at any depth,
    with its path under ``path``. List items are told apart by their ``index`` when they have one
    (choices, candidates, blocks), else they share a path (their values then read as one text)."""
    found = _walk_object(value, shape) if type(value) is dict else _walk(value, shape)
    return [(path + p, name, text) for p, name, text in found] if found else []


def plain(value: dict[str, Any], shape: Shape | None) -> bool:
    """True when ``value`` holds nothing to walk: no field outside ``shape``, and no child but strings
    and empty values. The codecs' hot path (a text delta event), a fraction of ``unread``'s cost."""
    if shape is None or not shape.keys.issuperset(value):
        return False
    for key in shape.children:
        v = value.get(key)
        if v and type(v) is not str:
            return False
    return True


def _walk(value: Any, shape: Shape | ByType) -> Unread | None:
    """Paths are built only on the way back from a find: a clean object costs no string work."""
    if type(value) is dict:
        return _walk_object(value, shape)
    if type(value) is not list:
        return None
    out: Unread | None = None
    for item in value:
        if type(item) is dict:
            if found := _walk_object(item, shape):
                index = item.get("index")
                at = f"[{index}]" if type(index) is int else ""
                out = (out or []) + [(at + p, name, text) for p, name, text in found]
        else:
            # Not an object where the API puts objects (a string, a number, a nested list): no decoder
            # reads it, and an SDK that builds its objects without validating keeps it.
            entry = _field("[]", item, "[]")
            if entry[1] != "[]" or entry[2]:  # something a client would print
                out = (out or []) + [entry]
    return out


def _walk_object(value: dict[str, Any], shape: Shape | ByType) -> Unread | None:
    if type(shape) is ByType:
        found_shape = shape.shapes.get(value.get("type"))  # type: ignore[arg-type]
        if found_shape is None:
            return None
        shape = found_shape
    keys, children = shape.keys, shape.children  # type: ignore[union-attr]
    out: Unread | None = None
    if not keys.issuperset(value):
        out = [_field(k, v, f".{k}") for k, v in value.items() if k not in keys]
    if not children:
        return out
    # Only the fields that have a child shape are visited, picked without a Python-level loop, in
    # the order of whichever is shorter: the object's fields or the shape's children (a delta has one).
    both = filter(children.__contains__, value) if len(value) <= len(children) else filter(value.__contains__, children)
    for key in both:
        v = value[key]
        if type(v) is not str and v \
                and (found := _walk_object(v, children[key]) if type(v) is dict else _walk(v, children[key])):
            out = (out or []) + [(f".{key}{p}", name, text) for p, name, text in found]
    return out


def _field(name: str, value: Any, path: str) -> tuple[str, str, str]:
    """One unread entry: ``path``, ``name`` with the names inside ``value``, and its strings."""
    names, strings = [name], list[str]()
    _gather(value, names, strings)
    return path, "\n".join(names), "\n".join(strings)


def texts(value: Any) -> list[str]:
    """Every string a client could print in ``value``: its strings and numbers, then the names of its
    fields (for a check of the whole)."""
    names, strings = list[str](), list[str]()
    _gather(value, names, strings)
    return strings + names


def _gather(value: Any, names: list[str], strings: list[str]) -> None:
    """The names of the fields inside ``value`` into ``names``, its strings and numbers into ``strings``
    (apart)."""
    if isinstance(value, str):
        if value:
            strings.append(value)
    elif isinstance(value, dict):
        for k, v in value.items():
            names.append(k)
            _gather(v, names, strings)
    elif isinstance(value, list):
        for v in value:
            _gather(v, names, strings)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        strings.append(str(value))


def lane_events(found: Unread, c: int = 0) -> list[Event]:
    """Unread fields of a streamed object: each field path is a lane of its own (``extra:<path>``),
    and the fields' names are checked whole."""
    if not found:
        return []
    events: list[Event] = [TextDelta(text, c, f"extra:{path}") for path, _, text in found if text]
    return [WholeText("\n".join(name for _, name, _ in found), c, "extra"), *events]


def whole_events(found: Unread, c: int = 0) -> list[Event]:
    """Unread fields of a whole object (a body, a ``done`` item), checked whole in one text."""
    if not found:
        return []
    return [WholeText("\n".join(f"{name}\n{text}" for _, name, text in found), c, "extra")]


def error_event(chunk: dict[str, Any], message: str, top: frozenset[str], inner: frozenset[str],
                nested: str | None = "error") -> StreamError:
    """The ``StreamError`` of an error object ``chunk``: ``bare`` when its fields are all in ``top``
    and those of ``chunk[nested]`` (an object, when present) in ``inner``; ``others``, its strings
    but ``message`` (where an upstream could put text the client would show)."""
    inside = chunk.get(nested) if nested is not None else None
    bare = top.issuperset(chunk) and (not isinstance(inside, dict) or inner.issuperset(inside))
    others = texts(chunk)
    if message in others:
        others.remove(message)
    return StreamError(message, bare, tuple(others))


def error_body(body: bytes) -> StreamError | None:
    """An error answer's body as the four APIs shape it (``{"error": {"message": ...}}``, Anthropic's
    with ``"type": "error"`` beside it): its message and its other strings; None when the body is
    not such an object (read by ``loads``; an error body is not checked for repeated keys)."""
    from proxy.wire.base import loads

    try:
        value = loads(body)
    except ValueError:
        return None
    if not isinstance(value, dict) or not isinstance(err := value.get("error"), dict):
        return None
    message = err.get("message")
    return error_event(value, message if isinstance(message, str) else "", frozenset(), frozenset())
