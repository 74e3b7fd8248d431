"""Incremental Server-Sent Events framing that keeps every frame's exact bytes.

Frames are cut exactly where the WHATWG event-stream algorithm dispatches: at the first blank line,
where a line ends in CRLF, LF or CR, mixed freely (the official SDKs split the same way: openai's
and anthropic's decoders on CR, LF and CRLF, google-genai's too). A blank line is there exactly where
the bytes hold ``\n\n``, ``\n\r`` or ``\r\r`` (two line ends in a row; ``\r\n\r\n`` and
``\n\r\n`` included): a splitter that knew only ``\n\n``, ``\r\n\r\n`` and ``\r\r`` glued the
events around a ``\n\r\n`` into one frame whose data no longer parsed, while the client saw two.

Feeding the same bytes in any chunking yields the same frames, and concatenating the frames' ``raw``
yields the input back byte for byte. Cost: each byte is scanned a bounded number of times (the scan
resumes where the last one stopped).
"""

from __future__ import annotations

from dataclasses import dataclass

_TERMINATORS = (b"\n\n", b"\n\r", b"\r\r")
"""Two line ends in a row, i.e. a blank line; after a CR, an LF right behind belongs to it."""
_LONGEST_TERMINATOR = 3
_FIELDS = frozenset({"data", "event", "id", "retry", ""})
"""The fields the standard knows; the empty name is a comment."""


@dataclass(frozen=True, slots=True)
class SSEFrame:
    raw: bytes
    event: str | None
    data: str
    has_data: bool
    foreign: bool = False
    """A line that is neither a field the standard knows (``data``, ``event``, ``id``, ``retry``) nor
    a comment: SSE clients ignore it, but some clients read such lines (google-genai parses bare JSON
    lines as chunks), so a codec must not relay it unread."""
    labels: tuple[str, ...] = ()
    """What the frame shows besides its data and event name: ``id`` values, ``retry`` values that are
    not a number, comment text. SDKs drop them, but curl and clients that print the stream show them:
    codecs check them whole (``proxy.wire.base.label_events``)."""


def parse_fields(raw: bytes) -> SSEFrame:
    """Parse one frame's fields (``event``, ``data``); comments and unknown fields are ignored."""
    # Fast path for the common frame, a single ``data: ...`` line and its blank line: no full decode
    # and split of the frame (this runs once per streamed delta).
    if raw.startswith(b"data: "):
        end = raw.find(b"\n")
        if end != -1 and raw[end:] == b"\n\n" and b"\r" not in raw:
            return SSEFrame(raw=raw, event=None, data=raw[6:end].decode("utf-8", errors="replace"),
                            has_data=True)
        if end != -1 and raw[end - 1:] == b"\r\n\r\n" and raw.count(b"\r") == 2:
            return SSEFrame(raw=raw, event=None, data=raw[6:end - 1].decode("utf-8", errors="replace"),
                            has_data=True)
    elif raw.startswith(b"event: ") and b"\r" not in raw:
        nl = raw.find(b"\n")
        if nl != -1 and raw[nl + 1:nl + 7] == b"data: ":
            end = raw.find(b"\n", nl + 1)
            if end != -1 and raw[end:] == b"\n\n":
                return SSEFrame(raw=raw, event=raw[7:nl].decode("utf-8", errors="replace"),
                                data=raw[nl + 7:end].decode("utf-8", errors="replace"), has_data=True)
    event: str | None = None
    data_lines: list[str] = []
    labels: list[str] = []
    foreign = False
    text = raw.decode("utf-8", errors="replace")
    for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        if not line:
            continue
        name, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        # A byte-order mark before the first field: WHATWG clients drop it, Python SDKs keep it (and
        # then ignore the field). Reading the field is the side that checks more.
        name = name.removeprefix("\ufeff")
        if name == "data":
            data_lines.append(value)
        elif name == "event":
            event = value or None  # an empty name is the default type, as the SDKs read it
        elif name not in _FIELDS:
            foreign = True
        elif value and not (name == "retry" and value.isdigit()):
            labels.append(value)  # a comment's text (empty name), an id, a retry that is no number
    return SSEFrame(raw=raw, event=event, data="\n".join(data_lines), has_data=bool(data_lines),
                    foreign=foreign, labels=tuple(labels))


class SSESplitter:
    """Feed bytes, get complete frames (raw bytes including their terminating blank line)."""

    __slots__ = ("_scan_from", "held")

    def __init__(self) -> None:
        self.held = bytearray()
        """Bytes of an unfinished frame (read them, never write): empty, the next feed starts a frame."""
        self._scan_from = 0

    def feed(self, data: bytes) -> list[bytes]:
        buf = self.held
        if b"\r" not in data and b"\r" not in buf:
            # No CR: the only blank line is "\n\n", and bytes.split finds each, leftmost first, in C
            # (what the scan below does three finds per frame for). The bytes held hold none.
            parts = (bytes(buf) + data if buf else data).split(b"\n\n")
            rest = parts.pop()
            buf.clear()
            buf += rest
            self._scan_from = max(0, len(rest) - (_LONGEST_TERMINATOR - 1))
            return [part + b"\n\n" for part in parts]
        self.held += data
        frames: list[bytes] = []
        start = 0
        pos = self._scan_from
        # The next occurrence of each terminator, searched again only once the scan has passed it:
        # a read holding many frames costs O(bytes), not O(frames x bytes).
        nxt = [buf.find(term, pos) for term in _TERMINATORS]
        while True:
            best, best_len = -1, 0
            for i, term in enumerate(_TERMINATORS):
                if nxt[i] != -1 and nxt[i] < pos:
                    nxt[i] = buf.find(term, pos)
                if nxt[i] != -1 and (best == -1 or nxt[i] < best):
                    best, best_len = nxt[i], len(term)
            if best == -1:
                break
            end = best + best_len
            if buf[end - 1] == 0x0D:  # the blank line ends in CR: an LF right behind is part of it
                if end == len(buf):
                    break  # wait for the next byte (so the frame keeps its whole terminator)
                if buf[end] == 0x0A:
                    end += 1
            frames.append(bytes(buf[start:end]))
            start = pos = end
        if start:
            del buf[:start]
        # Resume the next scan just before the tail, so a terminator split across feeds is found.
        self._scan_from = max(0, len(buf) - (_LONGEST_TERMINATOR - 1))
        return frames

    def flush(self) -> bytes:
        """Bytes left after the last complete frame (an unterminated final frame), then reset."""
        rest = bytes(self.held)
        self.held.clear()
        self._scan_from = 0
        return rest
