"""A burst read is checked in slices cut at line ends (proxy.guarded_turn.read_slices)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from proxy.guarded_turn import READ_SLICE, read_slices


def test_a_small_read_is_one_slice() -> None:
    chunk = b"data: {}\n\n" * 10
    assert read_slices(chunk) == [chunk]


def test_a_burst_is_cut_after_line_ends_into_bounded_slices() -> None:
    frame = b'data: {"choices":[{"index":0,"delta":{"content":"word "}}]}\n\n'
    chunk = frame * 1000
    pieces = read_slices(chunk)
    assert len(pieces) > 1 and b"".join(pieces) == chunk
    assert all(p.endswith(b"\n") and len(p) <= READ_SLICE for p in pieces[:-1])


def test_one_large_frame_without_line_ends_stays_whole() -> None:
    chunk = b"data: " + b"x" * (4 * READ_SLICE)
    assert read_slices(chunk) == [chunk]


@given(st.lists(st.sampled_from([b"\n", b"\r\n", b"a" * 100, b"b" * 5000, b"data: x\n\n"]), max_size=80))
def test_slices_rejoin_to_the_read(parts: list[bytes]) -> None:
    chunk = b"".join(parts)
    pieces = read_slices(chunk)
    assert b"".join(pieces) == chunk and (all(pieces) or pieces == [b""])
