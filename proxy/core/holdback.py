"""``HeldFrames``: the frames one ``StreamGuard`` holds back, in a compact form.

The first ``KEPT_AS_PUSHED`` held frames are kept as pushed (a live stream holds one or two, and
hands the same objects on). Past them, a frame that carries nothing but answer text of choice 0
(the bulk of every stream) is held as its raw bytes alone, which the garbage collector does not
track, and becomes a ``Frame`` again when it is released: ``Frame(raw, (TextDelta(text),))``,
equal to the one pushed (its text is the guard's accumulated text between its offsets, kept in an
array). Any other frame (finish, tool calls, an error, another lane's text, the terminator) is kept
as pushed.

Why: a message check (judge, webhook) buffers the whole message until its verdict. Held as objects,
each frame was five tracked containers (the frame, its events tuple, the delta, the hold record and
its redaction list): 300,000 one-character deltas made 1.5 million objects that every full garbage
collection walked (190-330 ms loop stalls, ``bench/stalls.py``), at about 800 bytes a delta. Held
compactly, a text frame costs its raw bytes, one bytes header and 8-16 bytes of offsets.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from collections.abc import Callable, Iterable

from guardrails.datamodel import ANSWER, Frame, TextDelta

KEPT_AS_PUSHED = 32
"""Held frames kept as objects before the compact form starts: rebuilding a frame on release costs
about 2 µs (two frozen dataclasses), which a short live hold need not pay."""

Retext = Callable[[Frame, str], bytes]
Waits = Callable[[Iterable[float]], None]
"""Told, on each release, how long each released frame was held (NaN for a frame that carries no
text: the receiver leaves those out). One call per release, not per frame."""
_NO_TEXT = float("nan")
NO_WAIT = (0.0,)
"""The hold of a text frame released as it arrived."""


class HeldFrames:
    """Frames in arrival order, each with the offset in the accumulated text where it ends."""

    __slots__ = ("_arrived", "_compacted", "_ends", "_first", "_frames", "_on_release", "_redactions", "_start",
                 "_terminal", "compact")

    def __init__(self, on_release: Waits | None = None) -> None:
        self._frames: list[Frame | bytes] = []
        """Each frame as pushed, or the raw bytes of a text frame held compactly."""
        self._ends = array("q")
        """End of each frame in the accumulated text (the next frame starts there)."""
        self._on_release = on_release
        self._arrived: array[float] | None = array("d") if on_release is not None else None
        """When each frame arrived (``_NO_TEXT`` for one without text), with ``on_release``."""
        self._redactions: dict[int, list[tuple[int, int, str]]] = {}
        """Spans relative to the frame's start, with the mask that stands there instead, by
        sequence number."""
        self._first = 0
        """Sequence number of the first held frame."""
        self._start = 0
        """Where the first held frame starts in the accumulated text."""
        self._terminal = -1
        """Sequence number of the first frame that waits for ``take_all`` (the finish), or -1."""
        self._compacted = 0
        """Frames held compactly now."""
        self.compact = True
        """False: every frame is kept as pushed (``ChoiceGuard`` keys lane rewrites by frame identity)."""

    def __len__(self) -> int:
        return len(self._frames)

    def push(self, frame: Frame, start: int, end: int, terminal: bool, arrived: float) -> None:
        frames = self._frames
        held = len(frames)
        if not held:
            self._start = start
        if terminal:
            if self._terminal < 0:
                self._terminal = self._first + held
            frames.append(frame)
        elif held >= KEPT_AS_PUSHED and self.compact and _plain_text(frame):
            frames.append(frame.raw)
            self._compacted += 1
        else:
            frames.append(frame)
        self._ends.append(end)
        if self._arrived is not None:
            self._arrived.append(arrived if end > start else _NO_TEXT)

    def push_release(self, frame: Frame, start: int, end: int, now: float, limit: int, text: str,
                     retext: Retext | None) -> list[Frame]:
        """``push`` of a frame that is not terminal, then ``take`` of the frames that end at or before
        ``limit`` (none when it is negative): a live stream's text frame, in one call. With nothing
        held and all of it before ``limit``, the frame goes out as it came, never queued. Only while
        no terminal frame is held (the guard's live path ends with the first one)."""
        frames = self._frames
        held = len(frames)
        if not held:
            if end <= limit:
                if self._on_release is not None and end > start:
                    self._on_release(NO_WAIT)
                return [frame]
            self._start = start
        elif held == 1 and self._ends[0] <= limit < end and not self._redactions and not self._compacted:
            # The steady state of a live stream: the frame held since the last delta goes, this one
            # stays (what the general path below does, in place).
            out = [frames[0]]
            frames[0] = frame
            ends = self._ends
            self._start = ends[0]
            ends[0] = end
            arrived = self._arrived
            if arrived is not None and self._on_release is not None:
                self._on_release((now - arrived[0],))
                arrived[0] = now if end > start else _NO_TEXT
            self._first += 1
            return out  # type: ignore[return-value]  # nothing compacted: a Frame
        if held >= KEPT_AS_PUSHED and self.compact and _plain_text(frame):
            frames.append(frame.raw)
            self._compacted += 1
        else:
            frames.append(frame)
        ends, arrived = self._ends, self._arrived
        ends.append(end)
        if arrived is not None:
            arrived.append(now if end > start else _NO_TEXT)
        if limit < 0:
            return []
        count = bisect_right(ends, limit)  # (no terminal frame is held: see the docstring)
        if not count:
            return []
        if self._compacted or self._redactions:
            return self.take(count, text, retext, now)
        # ``take``, inline: nothing to rebuild, and no terminal frame among the first ``count``.
        out = frames[:count]
        del frames[:count]
        self._start = ends[count - 1]
        del ends[:count]
        if arrived is not None and self._on_release is not None:
            self._on_release(map(now.__sub__, arrived[:count]))
            del arrived[:count]
        self._first += count
        return out  # type: ignore[return-value]  # nothing compacted: every item is a Frame

    def bounds(self) -> tuple[int, list[int]]:
        """Where the first held frame starts in the accumulated text, and where each one ends."""
        return self._start, self._ends.tolist()

    def releasable(self, limit: int) -> int:
        """How many of the first frames end at or before ``limit``, stopping before a terminal one."""
        n = len(self._frames) if self._terminal < 0 else self._terminal - self._first
        return bisect_right(self._ends, limit, 0, n)

    def take(self, count: int, text: str, retext: Retext | None, now: float) -> list[Frame]:
        """The first ``count`` frames as they go out (``retext`` rewrites a redacted one); no longer held.
        ``on_release`` is told how long each was held (until ``now``)."""
        if not count:
            return []
        frames, ends = self._frames, self._ends
        out = frames[:count]
        del frames[:count]
        if self._compacted or self._redactions:
            start = self._start
            for i in range(count):
                item, end = out[i], ends[i]
                if isinstance(item, bytes):
                    frame = Frame(item, (TextDelta(text[start:end]),))
                    self._compacted -= 1
                else:
                    frame = item
                if self._redactions:
                    frame = self._redacted(frame, self._first + i, text[start:end], retext)
                out[i] = frame
                start = end
        self._start = ends[count - 1]
        del ends[:count]
        arrived, on_release = self._arrived, self._on_release
        if arrived is not None and on_release is not None:
            on_release(map(now.__sub__, arrived[:count]))
            del arrived[:count]
        self._first += count
        if 0 <= self._terminal < self._first:
            self._terminal = -1
        return out  # type: ignore[return-value]  # every bytes item was rebuilt above

    def take_all(self, count: int, text: str, retext: Retext | None, now: float) -> list[Frame]:
        """The first ``count`` frames, terminal or not (the message has been vetted)."""
        self._terminal = -1
        return self.take(count, text, retext, now)

    def frames(self, text: str) -> list[Frame]:
        """The held frames as pushed, oldest first (redactions apply on release); from now on
        frames are kept as pushed (``compact`` off): the caller may key on their identity."""
        self.compact = False
        frames, start = self._frames, self._start
        for i, end in enumerate(self._ends):
            item = frames[i]
            if isinstance(item, bytes):
                frames[i] = Frame(item, (TextDelta(text[start:end]),))
            start = end
        self._compacted = 0
        return list(frames)  # type: ignore[arg-type]  # no bytes left

    def clear(self) -> None:
        self._first += len(self._frames)
        self._frames.clear()
        del self._ends[:]
        if self._arrived is not None:
            del self._arrived[:]
        self._redactions.clear()
        self._terminal, self._compacted = -1, 0

    def redact(self, start: int, end: int, mask: str) -> None:
        """Mask ``[start, end)`` of the accumulated text in the held frames it overlaps (the mask
        stands in the first of them; the rest of the span is removed)."""
        first, lo_frame = True, self._start
        for i, hi_frame in enumerate(self._ends):
            lo, hi = max(start, lo_frame), min(end, hi_frame)
            if lo < hi:
                self._redactions.setdefault(self._first + i, []).append(
                    (lo - lo_frame, hi - lo_frame, mask if first else ""))
                first = False
            lo_frame = hi_frame

    def _redacted(self, frame: Frame, seq: int, text: str, retext: Retext | None) -> Frame:
        spans = self._redactions.pop(seq, None)
        if not spans or retext is None:
            return frame
        for rs, re_, mask in sorted(spans, reverse=True):
            text = text[:rs] + mask + text[re_:]
        return Frame(retext(frame, text), (TextDelta(text),))


def _plain_text(frame: Frame) -> bool:
    """Whether ``frame`` is rebuilt exactly from its raw bytes and its text: one answer delta of
    choice 0 and nothing else."""
    events = frame.events
    if len(events) != 1 or frame.last or frame.unreadable:
        return False
    e = events[0]
    return type(e) is TextDelta and e.choice == 0 and e.channel == ANSWER
