"""SSE framing: cutting never depends on how the bytes were chunked, the fast field parser agrees
with the general one on every frame, and the events the proxy reads from a byte stream are the ones
the official SDKs' own decoders (openai, anthropic) and the WHATWG algorithm read from it, whatever
mix of CRLF, LF and CR ends its lines."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from proxy.wire.sse import SSEFrame, SSESplitter, parse_fields
from tests.stream_support import cut_by

PIECES = [b"data: ", b"event: ", b"data:", b"x", b"{}", b"\n", b"\r", b"\r\n", b":", b" ", b"\xc3\xa9", b"id: 1",
          b"retry: 5", b"\xef\xbb\xbfdata: ", b"bogus: 1", b"{\"k\": 1}"]
_FIELDS = ("data", "event", "id", "retry", "")  # "": a comment


def general(raw: bytes) -> SSEFrame:
    event, lines, foreign = None, [], False
    labels: list[str] = []
    for line in raw.decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        if not line:
            continue
        name, sep, value = line.partition(":")
        value = value[1:] if sep and value.startswith(" ") else value
        name = name.removeprefix("\ufeff")
        if name == "data":
            lines.append(value)
        elif name == "event":
            event = value or None
        elif name not in _FIELDS:
            foreign = True
        elif value and not (name == "retry" and value.isdigit()):
            labels.append(value)
    return SSEFrame(raw, event, "\n".join(lines), bool(lines), foreign, tuple(labels))


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(PIECES), min_size=1, max_size=10))
def test_fast_field_parser_agrees_with_the_general_one(parts: list[bytes]) -> None:
    raw = b"".join(parts)
    assert parse_fields(raw) == general(raw)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=60), st.lists(st.integers(1, 9), min_size=1, max_size=40))
def test_frames_do_not_depend_on_chunking(parts: list[bytes], cuts: list[int]) -> None:
    data = b"".join(parts)
    whole = SSESplitter()
    want = whole.feed(data) + [whole.flush()]
    split, got = SSESplitter(), []
    for chunk in cut_by(data, cuts):
        got += split.feed(chunk)
    got.append(split.flush())
    assert got == want
    assert b"".join(got) == data


# ------------------------------------------------------------------------- as the clients read it
LINE_ENDS = [b"\n", b"\r\n", b"\r"]
LINES = [b"data: a", b"data: {\"t\": \"secret\"}", b"data:b", b"event: e", b"event: message_stop", b": ping",
         b"id: 7", b"data: \xc3\xa9", b"data", b"event"]


@st.composite
def streams(draw: st.DrawFn) -> bytes:
    """Lines (some blank) each ended by any of the three line ends: every mix the standard allows."""
    out = b""
    for _ in range(draw(st.integers(1, 25))):
        line = draw(st.sampled_from([*LINES, b"", b""]))
        out += line + draw(st.sampled_from(LINE_ENDS))
    return out


def whatwg_events(data: bytes) -> list[tuple[str | None, str]]:
    """The event-stream interpretation of the HTML standard, written from its text: lines end at
    CRLF, LF or CR; a blank line dispatches the buffered data (nothing when there is none)."""
    text = data.decode("utf-8", "replace")
    lines, cur, i = [], "", 0
    while i < len(text):
        c = text[i]
        if c in "\r\n":
            lines.append(cur)
            cur = ""
            i += 2 if c == "\r" and text[i + 1:i + 2] == "\n" else 1
        else:
            cur += c
            i += 1
    events, event, buf = [], None, []
    for line in lines:
        if not line:
            if buf:
                events.append((event, "\n".join(buf)))
            event, buf = None, []
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            buf.append(value)
        elif name == "event":
            event = value or None  # an empty type is the default one
    return events


def proxy_events(chunks: list[bytes]) -> list[tuple[str | None, str]]:
    """What the proxy reads from complete frames (an unterminated tail dispatches nothing for the
    clients; the codecs still decode it). A frame whose blank line ends in CR waits for the next
    byte, so at the end of the stream it comes out of ``flush``."""
    split = SSESplitter()
    frames = [parse_fields(raw) for chunk in chunks for raw in split.feed(chunk)]
    rest = split.flush()
    if rest.endswith((b"\n\r", b"\r\r")):
        frames.append(parse_fields(rest))
    return [(f.event, f.data) for f in frames if f.has_data]


def sdk_events(decoder: object, chunks: list[bytes]) -> list[tuple[str | None, str]]:
    return [(e.event, e.data) for e in decoder.iter_bytes(iter(chunks))  # type: ignore[attr-defined]
            if e.data or e.event]


@settings(max_examples=1500, deadline=None)
@given(streams(), st.lists(st.integers(1, 7), min_size=1, max_size=20))
def test_the_proxy_reads_the_events_the_sdks_and_the_standard_read(data: bytes, cuts: list[int]) -> None:
    from anthropic._streaming import SSEDecoder as AnthropicDecoder
    from openai._streaming import SSEDecoder as OpenAIDecoder

    chunks = cut_by(data, cuts)
    ours = proxy_events(chunks)
    assert ours == whatwg_events(data)
    with_data = [e for e in sdk_events(OpenAIDecoder(), chunks) if e[1]]
    assert [e for e in ours if e[1]] == with_data
    # The anthropic decoder joins each network read's lines itself: fed whole, it reads the same.
    assert [e for e in ours if e[1]] == [e for e in sdk_events(AnthropicDecoder(), [data]) if e[1]]


def test_a_blank_line_ended_by_crlf_after_lf_ends_the_event() -> None:
    data = b'data: {"a": 1}\n\r\ndata: {"b": 2}\n\n'
    assert proxy_events([data]) == [(None, '{"a": 1}'), (None, '{"b": 2}')]
    assert SSESplitter().feed(data) == [b'data: {"a": 1}\n\r\n', b'data: {"b": 2}\n\n']


def test_a_line_that_is_no_field_is_marked_foreign() -> None:
    assert parse_fields(b'{"candidates": []}\n\n').foreign
    assert parse_fields(b"Data: x\n\n").foreign
    assert not parse_fields(b": keep-alive\nid: 1\nretry: 9\nevent: e\ndata: x\n\n").foreign


class _ScanningSplitter:
    """The splitter as it was before its no-CR path: the three terminators scanned for, every read."""

    def __init__(self) -> None:
        self._buf = bytearray()
        self._scan_from = 0

    def feed(self, data: bytes) -> list[bytes]:
        self._buf += data
        buf, frames, start, pos = self._buf, [], 0, self._scan_from
        while True:
            hits = [(at, len(t)) for t in (b"\n\n", b"\n\r", b"\r\r") if (at := buf.find(t, pos)) != -1]
            if not hits:
                break
            best, size = min(hits)
            end = best + size
            if buf[end - 1] == 0x0D:
                if end == len(buf):
                    break
                if buf[end] == 0x0A:
                    end += 1
            frames.append(bytes(buf[start:end]))
            start = pos = end
        del buf[:start]
        self._scan_from = max(0, len(buf) - 2)
        return frames


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from([*PIECES, b"\n\n", b"data: x\n\n", b"\n\n\n"]), max_size=60),
       st.lists(st.integers(1, 40), min_size=1, max_size=40), st.booleans())
def test_the_split_without_cr_cuts_where_the_scan_cut(parts: list[bytes], cuts: list[int], no_cr: bool) -> None:
    """Reads without a CR take ``bytes.split``; reads with one (or after one) the scan: every mix of
    them cuts the same frames, and leaves the same bytes, as the scan alone."""
    data = b"".join(parts)
    if no_cr:
        data = data.replace(b"\r", b"")
    new, old = SSESplitter(), _ScanningSplitter()
    for chunk in cut_by(data, cuts):
        assert new.feed(chunk) == old.feed(chunk)
    assert new.flush() == bytes(old._buf)
