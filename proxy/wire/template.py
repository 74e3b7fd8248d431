"""``TextTemplate``: a stream's text frames decoded from their bytes alone, once one has been read.

A streamed answer is hundreds of frames that differ only in one string: in a chat stream every
chunk is ``data: {"id":...,"choices":[{"index":0,"delta":{"content":"<text>"},...}]}`` and the
bytes around ``<text>`` repeat exactly. The codec decodes a frame in full (SSE fields, JSON, the
API's shape, the duplicate-key test: 10-20 µs); once a frame that carried nothing but one text
delta has been decoded, its bytes before and after the text's JSON string are kept, and a later
frame with the same bytes around a string free of escapes decodes to the same event with that text
(about 1 µs). What that decode would have read differently, the template cannot match:

- The bytes around the string are identical, and the string holds no ``"``, ``\\`` or control
  character, so it is the same JSON document with another value in the same string: the same keys,
  the same nesting, the same SSE fields and the same single blank line at its end (the splitter
  cuts the same frame), and no escape the codec could read differently.
- The string's bytes must be valid UTF-8 (strict): the full decode would replace invalid bytes,
  the template refuses them and the frame takes the full decode.
- Which string is the text is not assumed from the key: when a template is learnt, a probe frame
  with another text in that string goes through the codec's full decode and must come out as the
  same event with the probe's text. A probe decodes a frame of the shape just decoded, so it changes
  no codec state a text frame does not (the codec only learns from frames whose decode is pure).

A frame that misses the template takes the full decode, and may teach a new template. Streams whose
frames never repeat (a per-chunk sequence number, random padding) stop learning after ``MAX_LEARNS``.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from guardrails.datamodel import Frame, TextDelta

MAX_LEARNS = 8
"""Templates learnt per stream before it stops trying: each costs a second full decode (the probe),
which a stream whose frames never repeat would otherwise pay on every frame."""

_UNSAFE = re.compile(rb'["\\\x00-\x1f]')
"""What may not stand in a template's string: its end, an escape, a raw control character (bad JSON,
and a line end would change the SSE framing)."""

Decode = Callable[[bytes], Frame]


class TextTemplate:
    """The bytes around the text of one learnt frame, and the lane its text belongs to."""

    __slots__ = ("_cut", "_end", "channel", "choice", "prefix", "suffix")

    def __init__(self, prefix: bytes, suffix: bytes, choice: int, channel: str) -> None:
        self.prefix, self.suffix = prefix, suffix
        self._cut, self._end = len(prefix), -len(suffix)  # (a suffix holds the string's closing quote)
        self.choice, self.channel = choice, channel

    def match(self, raw: bytes) -> Frame | None:
        """``raw`` decoded, when it is this template with another text in its string; else None."""
        if not raw.startswith(self.prefix) or not raw.endswith(self.suffix):
            return None
        middle = raw[self._cut:self._end]  # empty too when the prefix and the suffix overlap
        if not middle or _UNSAFE.search(middle) is not None:
            return None
        try:
            text = middle.decode()
        except UnicodeDecodeError:
            return None
        return Frame(raw, (TextDelta(text, self.choice, self.channel),))


    def match_run(self, raws: list[bytes]) -> list[Frame]:
        """``match`` of each of ``raws`` in turn, up to the first that misses: the frames of the
        leading raws that are this template (one call for a read's worth of frames)."""
        prefix, suffix, cut, end = self.prefix, self.suffix, self._cut, self._end
        unsafe, choice, channel = _UNSAFE.search, self.choice, self.channel
        out: list[Frame] = []
        for raw in raws:
            if not raw.startswith(prefix) or not raw.endswith(suffix):
                break
            middle = raw[cut:end]
            if not middle or unsafe(middle) is not None:
                break
            try:
                text = middle.decode()
            except UnicodeDecodeError:
                break
            out.append(Frame(raw, (TextDelta(text, choice, channel),)))
        return out


class Templates:
    """One stream's current template, and what it costs to learn one."""

    __slots__ = ("_key", "_learns", "current")

    def __init__(self, field: str) -> None:
        self._key = re.compile(rb'"' + re.escape(field.encode()) + rb'"[ \t]*:[ \t]*"')
        """The text field's key and the opening quote of its string value."""
        self._learns = 0
        self.current: TextTemplate | None = None

    def learn(self, raw: bytes, frame: Frame, decode: Decode) -> None:
        """Keep ``raw``'s shape when ``frame`` (its full decode) is one text delta found where the
        key's string stands; ``decode`` is the codec's full decode, run once more on a probe."""
        if self._learns >= MAX_LEARNS or frame.last or frame.unreadable or len(frame.events) != 1:
            return
        event = frame.events[0]
        if type(event) is not TextDelta or not event.text:
            return
        template = _template_of(raw, self._key, event)
        if template is None:
            return
        self._learns += 1
        probe_text = "g" if event.text != "g" else "p"
        probe = template.prefix + probe_text.encode() + template.suffix
        try:
            probed = decode(probe)
        except (LookupError, TypeError, ValueError, AttributeError):
            return
        if probed == Frame(probe, (TextDelta(probe_text, event.choice, event.channel),)):
            self.current = template


def _template_of(raw: bytes, key: re.Pattern[bytes], event: TextDelta) -> TextTemplate | None:
    """The template around the one string under ``key`` in ``raw`` when that string is ``event``'s text
    unescaped, and ``raw`` is framed plainly (no CR, its only blank line at its end)."""
    if b"\r" in raw or raw.find(b"\n\n") != len(raw) - 2:
        return None
    found = key.findall(raw)
    if len(found) != 1:
        return None
    start = raw.find(found[0]) + len(found[0])
    end = raw.find(b'"', start)
    if end < 0 or _UNSAFE.search(raw, start, end) is not None:
        return None
    try:
        if raw[start:end].decode() != event.text:
            return None
    except UnicodeDecodeError:
        return None
    return TextTemplate(raw[:start], raw[end:], event.choice, event.channel)
