"""Incremental Server-Sent Events framing that keeps every frame's exact bytes.

The splitter never relies on how the network chunked the stream: frames are cut only at blank
lines (``\\n\\n``, ``\\r\\n\\r\\n`` or ``\\r\\r``), so feeding the same bytes in any chunking yields
the same frames, and concatenating the frames' ``raw`` yields the input back byte for byte.
Cost: each byte is scanned a bounded number of times (the scan resumes where the last one stopped).
"""

from __future__ import annotations

from dataclasses import dataclass

_TERMINATORS = (b"\n\n", b"\r\n\r\n", b"\r\r")
_LONGEST_TERMINATOR = 4


@dataclass(frozen=True, slots=True)
class SSEFrame:
    raw: bytes
    event: str | None
    data: str
    has_data: bool


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
    text = raw.decode("utf-8", errors="replace")
    for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        if not line or line.startswith(":"):
            continue
        name, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if name == "data":
            data_lines.append(value)
        elif name == "event":
            event = value
    return SSEFrame(raw=raw, event=event, data="\n".join(data_lines), has_data=bool(data_lines))


class SSESplitter:
    """Feed bytes, get complete frames (raw bytes including their terminating blank line)."""

    __slots__ = ("_buf", "_scan_from")

    def __init__(self) -> None:
        self._buf = bytearray()
        self._scan_from = 0

    def feed(self, data: bytes) -> list[bytes]:
        self._buf += data
        frames: list[bytes] = []
        buf = self._buf
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
            # A lone "\r\r" at the very end may still become "\r\n\r\n"-like CRLF framing: wait.
            if best_len == 2 and buf[best:end] == b"\r\r" and end == len(buf):
                break
            frames.append(bytes(buf[start:end]))
            start = pos = end
        if start:
            del buf[:start]
        # Resume the next scan just before the tail, so a terminator split across feeds is found.
        self._scan_from = max(0, len(buf) - (_LONGEST_TERMINATOR - 1))
        return frames

    def flush(self) -> bytes:
        """Bytes left after the last complete frame (an unterminated final frame), then reset."""
        rest = bytes(self._buf)
        self._buf.clear()
        self._scan_from = 0
        return rest
