"""SSE framing: cutting never depends on how the bytes were chunked, and the fast field parser
agrees with the general one on every frame."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from proxy.sse import SSEFrame, SSESplitter, parse_fields

PIECES = [b"data: ", b"event: ", b"data:", b"x", b"{}", b"\n", b"\r", b"\r\n", b":", b" ", b"\xc3\xa9", b"id: 1"]


def general(raw: bytes) -> SSEFrame:
    event, lines = None, []
    for line in raw.decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        if not line or line.startswith(":"):
            continue
        name, sep, value = line.partition(":")
        value = value[1:] if sep and value.startswith(" ") else value
        if name == "data":
            lines.append(value)
        elif name == "event":
            event = value
    return SSEFrame(raw, event, "\n".join(lines), bool(lines))


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
    split, got, i, k = SSESplitter(), [], 0, 0
    while i < len(data):
        n = cuts[k % len(cuts)]
        got += split.feed(data[i:i + n])
        i, k = i + n, k + 1
    got.append(split.flush())
    assert got == want
    assert b"".join(got) == data
