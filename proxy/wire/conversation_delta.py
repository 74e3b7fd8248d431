"""Turn N of a conversation read from what it adds to turn N-1, exactly.

A coding agent resends its whole conversation on every turn: the same system prompt and tools, and a
history list that only grows. The body of turn N is the body of turn N-1 with the new items inserted
where its history list ends (wherever that list sits among the other keys). ``Turns`` keeps what a
quick view read of recent bodies (``S``: the model, the system prompt's texts, the last user text...)
and reads a body that extends one of them by decoding only the inserted items: an agent's 66 KB turn
costs two ``memcmp`` and the decode of one turn's messages instead of a scan of 66 KB.

Why this is exact, not a guess. Let P be a kept body, fully read, and ``a`` an offset in it where the
history list can take one more item: the JSON parser, having read ``P[:a]``, is inside the list that
the whole decode keeps (the last of duplicate keys), right after an item, and ``P[a:]`` closes that
list. A body N = ``P[:a] + X + P[a:]``, where X alone is a sequence of ``,item`` (``_decode_items``:
any X that would close the list, open a key, or leave a string open fails that check), then parses
as P does with X's items appended to that list and every other field the same: the parser reads
``P[:a]`` into the same state, X's items into the list, and is back in the state it had at ``a`` in
P, from which ``P[a:]`` reads as before. So N's reading is P's reading folded
over X's items, and N's own anchor is ``a + len(X)``. The same holds from any earlier anchor b of P
(the end of an earlier turn, with the reading of the items before it): a body ``P[:b] + Y + P[a:]``
reads as the items before b and then Y's, which is how a client that rewrites its last turns'
items (Claude Code moves its prompt-cache marker onto the newest message) or drops them (a retry of
an earlier turn) is read from what changed.

The first anchor of a conversation is found when its second body arrives: ``a`` is where the two
bodies first differ, when only whitespace and a ``]`` follow it, and it is proven by decoding P with
a probe item inserted there: P's kept list must come out one item longer, ending with the probe (the
``]`` then closes the kept list right after the probe; an offset inside a string, a nested list, a
dropped duplicate list or before the last item all fail this). Turn 2 thus pays one more decode;
every later turn pays only for what it adds.

The same argument makes the repeated-key check (``proxy.wire.one_reading``) incremental. A kept
body is marked clean only when the caller proved it repeats no key in any object (``read(raw,
clean=True)``: the edge checks every guarded body before it is read, and refuses one that repeats).
Let N = ``P[:b] + X + P[a:]`` with P clean and b <= a proven anchors of P, and ``[null`` + X + ``]``
one JSON value (so X is a sequence of ``,value``: its first ``[`` is closed by its last ``]``). By the
argument above, the objects N's parser reads are P's objects outside the list items P holds between b
and a, each with the same pairs (the objects that enclose the list keep their keys: only the list's
items changed), and the objects inside X's values. P's repeat none, so N repeats a key exactly when
X's values do, which is what ``[null`` + X + ``]`` alone shows (``added_to_clean`` returns X). A key
repeated in the unchanged part cannot pass: P holds that part and was proven clean; a body that
repeats a key is refused, never read, so never kept. A body that extends no kept clean one gets the
whole check.

Exact byte comparisons decide every reuse (no digest an attacker could collide). A lookup compares
the body with at most ``CANDIDATES`` kept bodies per group, most recent first: the groups of the
bytes it holds before the offsets kept bodies with anchors are grouped at (``_deep_key``: bytes of
their own history), then that of its first ``KEY_BYTES`` (a conversation's first turn). A mismatch usually stops within the first messages. Kept bodies are bounded by
``budget_bytes`` (least recently used out first). Bodies under ``MIN_BYTES`` are read whole: their
decode costs less than the bookkeeping.

Kept bodies are shared by all clients of a process (as the prompt-index cache is). What one client
can learn from another's is a timing difference (tens of microseconds) that says whether a body it
sends extends a kept one, which takes sending that conversation's exact bytes up to an anchor: a
confirmation of what it already has, not a way to read it. Nothing kept is logged.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, NamedTuple, TypeVar

import msgspec

S = TypeVar("S")
T = TypeVar("T")

MIN_BYTES = 8192
"""Bodies shorter than this are read whole (a 8 KB decode costs about 5 us, the lookup 1-2)."""
KEY_BYTES = 256
"""Kept bodies are grouped by their first bytes (an agent's conversations share them: the model,
the start of the system prompt)."""
MARKS = 8
"""Anchors of earlier turns kept per body: a client that rewrites its last turns' items (moving a
prompt-cache marker onto the newest message) is re-read from the anchor before the first one."""
DEEP_BYTES = 4096
"""Kept bodies with anchors are grouped by the bytes before a multiple of this (``_deep_key``)."""
CANDIDATES = 16
"""Kept bodies per group, compared most recent first."""
BUDGET_BYTES = 32 * 1024 * 1024
_CHUNK = 4096
_CLOSES_A_LIST = re.compile(rb"[ \t\r\n]*\]")
"""JSON whitespace, then the end of a list: what follows an anchor."""


class Reading(NamedTuple):
    """What a quick view reads of a chat, Anthropic or Responses body: its top-level fields, and its
    history list folded so far (the ``S`` those wires keep in ``Turns``). Immutable, as a kept one is
    shared by the requests read from it; a tuple because one or two are made per request (a frozen
    dataclass's ``__init__`` sets each field through ``object.__setattr__``)."""

    model: str
    stream: bool | None
    system: tuple[str, ...]
    """The system prompt's texts, in order (a top-level field's first, then each system message's)."""
    last_user_text: str
    kept: bool = True
    """Whether every system text is kept as it is (chat: ``_system_text``): a reading with a larger
    one is not kept either, its body is read whole every time."""
    held: tuple[str, ...] = ()
    """``RequestView.held``: top-level fields, the same for every turn read from a kept one."""
    stored: bool = True
    """Responses: ``store`` is not false (the upstream keeps the answer with its input items)."""


@dataclass(slots=True, eq=False)
class _Kept(Generic[S]):
    state: S
    count: int
    """Items in the body's history list."""
    head: bytes | memoryview
    """The body up to its anchor (the whole body while the anchor is not known yet). Once anchored,
    a view of the body it was read from (``body``): keeping it costs no copy of an agent's 66 KB."""
    tail: bytes
    """The body from its anchor on (empty while the anchor is not known)."""
    anchored: bool
    tried: bool = False
    """Whether a later body was tried as its extension while it had no anchor (tried once only)."""
    marks: tuple[tuple[int, S, int], ...] = ()
    """Proven anchors of this body and of the turns before it, oldest first, the last at
    ``len(head)``: (offset, the reading of the items before it, their count)."""
    point: int = 0
    """The offset it is grouped at (``_deep_key``), 0 when grouped by its first bytes."""
    clean: bool = False
    """Whether its body was proven to repeat no key in any object (``Turns.added_to_clean``)."""

    @property
    def size(self) -> int:
        return len(self.head) + len(self.tail) + 200

    @property
    def body(self) -> bytes:
        """The bytes ``head`` views (itself while not anchored), for comparisons of parts of it:
        a slice of a view compares with ``bytes`` item by item, a hundred times slower."""
        head = self.head
        return head.obj if type(head) is memoryview else head  # type: ignore[return-value]


class Turns(Generic[S]):
    """Quick readings of recent bodies of one API, by the bytes they begin with. Event loop only.

    ``whole(raw)``: the quick decode of a whole body, as (reading, items of its history list), or
    None when it declines. ``fold(reading, items)``: the reading extended by more items of the list
    (None when they are not what the quick view reads: the caller then reads the body whole).
    ``item``: the msgspec type of one item; ``probe``: the JSON of an item no client sends;
    ``keeps(reading)``: whether a reading may be kept (a format's own bounds)."""

    def __init__(self, whole: Callable[[bytes], tuple[S, Sequence[Any]] | None],
                 fold: Callable[[S, Sequence[Any]], S | None], item: Any, probe: bytes,
                 keeps: Callable[[S], bool] = lambda _: True, budget_bytes: int = BUDGET_BYTES) -> None:
        self._whole, self._fold, self._keeps = whole, fold, keeps
        self._items = msgspec.json.Decoder(list[list[item | None]])
        self._probe, self._probe_item = probe, msgspec.json.decode(probe, type=item)
        self.budget_bytes = budget_bytes
        self.used_bytes = 0
        self.extended = 0
        """Bodies read from a kept one (a counter, for tests and the bench)."""
        self._groups: OrderedDict[bytes, list[_Kept[S]]] = OrderedDict()
        self._points: dict[int, int] = {}
        self._last: tuple[bytes, list[_Kept[S]], _Kept[S], tuple[tuple[int, S, int], int], bytes | memoryview] | None = None
        """The last match ``added_to_clean`` found (the body, its kept body's group, the kept body, the
        match, the kept body's ``head`` then): ``read`` of that same body object next (the edge reads
        it right after checking it) reuses it while the kept body is unchanged and still kept,
        instead of looking it up again."""
        """Offsets that kept bodies with anchors are grouped at (``_deep_key``), with how many are."""

    def read(self, raw: bytes, *, clean: bool = False) -> S | None:
        """The reading of ``raw``, from a kept body it extends when there is one. ``clean``: the caller
        proved ``raw`` repeats no key in any object (``proxy.wire.one_reading``); only such a body is
        kept as clean, the base that ``added_to_clean`` reads later bodies from."""
        if len(raw) < MIN_BYTES:
            found = self._whole(raw)
            return None if found is None else found[0]
        last, self._last = self._last, None
        if last is not None and last[0] is raw and last[2].head is last[4] and last[2] in last[1]:
            # the match ``added_to_clean`` just found for this body, its kept body unchanged since
            state = self._extend(last[1], last[2], raw, clean, last[3])
            if state is not None:
                return state
        state = self._find(raw, lambda group, kept: self._extend(group, kept, raw, clean))
        if state is not None:
            return state
        found = self._whole(raw)
        if found is not None and self._keeps(found[0]):
            self._keep(raw[:KEY_BYTES], _Kept(found[0], len(found[1]), raw, b"", False, clean=clean))
        return None if found is None else found[0]

    def added_to_clean(self, raw: bytes) -> bytes | None:
        """What ``raw`` adds to a kept clean body it extends (``P[:b] + X + P[a:]`` at proven anchors
        b <= a of a kept ``P``: X, a sequence of ``,item`` if ``raw`` is JSON at all; empty for ``P``
        itself), or None when it extends none. ``raw`` then repeats a key in some object exactly when
        X's items do (see ``proxy.wire.one_reading``). May prove a kept body's anchor (as ``read``
        would next)."""
        if len(raw) < MIN_BYTES:
            return None
        return self._find(raw, lambda group, kept: self._added(group, kept, raw))

    def _added(self, group: list[_Kept[S]], kept: _Kept[S], raw: bytes) -> bytes | None:
        if not kept.clean:
            return None
        found = self._match(kept, raw)
        if found is None:
            return None
        self._last = (raw, group, kept, found, kept.head)
        return raw[found[0][0]:found[1]]

    def _find(self, raw: bytes, visit: Callable[[list[_Kept[S]], _Kept[S]], T | None]) -> T | None:
        """The first answer of ``visit`` over the kept bodies ``raw`` may extend: the groups at each
        offset kept bodies are grouped at, deepest first, then its first bytes' group (each key made
        only when the groups before it did not answer)."""
        for at in sorted(self._points, reverse=True):
            if at <= len(raw) and (found := self._from_group(_deep_key(raw, at), visit)) is not None:
                return found
        return self._from_group(raw[:KEY_BYTES], visit)

    def _from_group(self, group_key: bytes, visit: Callable[[list[_Kept[S]], _Kept[S]], T | None]) -> T | None:
        group = self._groups.get(group_key)
        if group is not None:
            self._groups.move_to_end(group_key)
            for kept in reversed(group):
                found = visit(group, kept)
                if found is not None:
                    return found
        return None

    def _match(self, kept: _Kept[S], raw: bytes) -> tuple[tuple[int, S, int], int] | None:
        """(the anchor of ``kept`` that ``raw`` extends from, where what it adds ends), or None: ``raw``
        is ``kept``'s body up to that anchor, then what it adds, then ``kept``'s tail. ``kept`` itself
        unanchored: its whole body, nothing added."""
        if not kept.anchored:
            if raw == kept.head:
                return (len(raw), kept.state, kept.count), len(raw)  # the same body again (a retry)
            if kept.tried or not self._anchor(kept, raw):
                return None
        tail, head, marks = kept.tail, kept.head, kept.marks
        end = len(raw) - len(tail)
        if not raw.endswith(tail):
            return None
        mark = marks[-1] if end >= len(head) and raw.startswith(head) else self._mark(kept, raw, end)
        return None if mark is None else (mark, end)

    def _extend(self, group: list[_Kept[S]], kept: _Kept[S], raw: bytes, clean: bool,
                found: tuple[tuple[int, S, int], int] | None = None) -> S | None:
        # (one function for an agent's every turn, an append, with few calls: this runs once per
        # request on caches the upstream's wait left cold, where each call costs microseconds)
        if found is None:
            found = self._match(kept, raw)
        if found is None:
            return None
        mark, end = found
        at, before, count = mark
        head, marks = kept.head, kept.marks
        added = raw[at:end]
        if at == len(head) and not added:
            return kept.state
        items = self._decode_items(added)
        state = None if items is None else self._fold(before, items)
        if state is None or items is None:
            return None
        self.extended += 1
        if not self._keeps(state):
            group.remove(kept)
            self._forget(kept)
            return state
        count += len(items)
        # (marks are in offset order: after an append, ``at`` is the last one's and all stay)
        earlier = marks if mark is marks[-1] else [m for m in marks if m[0] <= at]
        marks = (*earlier[1 - MARKS:], (end, state, count))
        point = marks[0][0] // DEEP_BYTES * DEEP_BYTES
        if point == kept.point and (point or at >= KEY_BYTES):
            # Its group's key is bytes before ``at``, which ``raw`` shares: the entry becomes the new
            # body's in place, the most recent of its group (an agent's every turn, most often).
            self.used_bytes += end - len(head)
            kept.state, kept.count, kept.head, kept.marks = state, count, memoryview(raw)[:end], marks
            kept.clean = clean
            if group[-1] is not kept:
                group.remove(kept)
                group.append(kept)
            self._evict()
            return state
        group.remove(kept)
        self._forget(kept)
        self._keep(_deep_key(raw, point) if point else raw[:KEY_BYTES],
                   _Kept(state, count, memoryview(raw)[:end], kept.tail, True, marks=marks, point=point,
                         clean=clean))
        return state

    def _mark(self, kept: _Kept[S], raw: bytes, end: int) -> tuple[int, S, int] | None:
        """For a ``raw`` that does not append to ``kept`` (``_extend`` tries that first): the latest
        of ``kept``'s anchors that ``raw`` shares the bytes before (an edit of the last turns' items:
        the anchor before the first edited one), if ``raw`` ends before it."""
        body, marks = kept.body, kept.marks
        oldest = marks[0][0]
        if end < oldest or raw[max(0, oldest - _CHUNK):oldest] != body[max(0, oldest - _CHUNK):oldest]:
            return None  # another conversation (it differs before the oldest anchor, almost always here)
        limit = min(_common_prefix(raw, body), len(kept.head), end)
        return next((m for m in reversed(marks) if m[0] <= limit), None)

    def _anchor(self, kept: _Kept[S], raw: bytes) -> bool:
        """Find and prove the anchor of an unanchored body from a body that may extend it (once: a
        body whose anchor cannot be proven this way is not tried again)."""
        body = kept.body
        if len(raw) <= len(body):
            return False
        at = _common_prefix(body, raw)
        if not raw.endswith(body[at:]):
            return False
        # One comparison that gets this far per kept body, whatever it proves: a body that changes it
        # elsewhere than where its list ends (a client moving its cache marker onto the newest message
        # on every turn) is not compared again by each later lookup (the check's and the read's), each
        # a prefix scan of a whole turn.
        kept.tried = True
        if not _CLOSES_A_LIST.match(body, at):
            return False  # the next turn's items would not be the list's last ones
        found = self._whole(body[:at] + b"," + self._probe + body[at:])
        if found is None or len(found[1]) != kept.count + 1 or found[1][-1] != self._probe_item:
            return False
        kept.head, kept.tail, kept.anchored = memoryview(body)[:at], body[at:], True
        kept.marks = ((at, kept.state, kept.count),)
        return True

    def _decode_items(self, added: bytes) -> list[Any] | None:
        """The items of ``,item,item...``, or None when ``added`` is anything else. Decoded as
        ``[[null`` + added + ``]]``, a list in a list (the items as deep as in a body's history list):
        that text holds one value, so its last ``]`` closes its first ``[``; a fragment that closed the
        inner list early would leave a second item in the outer one (or trailing text), and one that
        stays inside it is a sequence of ``,value``. UTF-8 is checked as ``quick_decoder`` does
        (msgspec does not check the strings it skips)."""
        if not added.isascii():
            try:
                added.decode("utf-8")
            except UnicodeDecodeError:
                return None
        try:
            outer: list[list[Any]] = self._items.decode(b"[[null" + added + b"]]")
        except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
            return None
        items = outer[0]
        if len(outer) != 1 or items[0] is not None or items.count(None) != 1:  # (the null of ``[[null``)
            return None
        return items[1:]

    def _keep(self, key: bytes, kept: _Kept[S]) -> None:
        group = self._groups.setdefault(key, [])
        self._groups.move_to_end(key)
        group.append(kept)
        self.used_bytes += kept.size
        if kept.point:
            self._points[kept.point] = self._points.get(kept.point, 0) + 1
        if len(group) > CANDIDATES:
            self._forget(group.pop(0))
        self._evict()

    def _evict(self) -> None:
        """Least recently used kept bodies out until the kept ones fit ``budget_bytes``."""
        while self.used_bytes > self.budget_bytes and self._groups:
            oldest_key, oldest = next(iter(self._groups.items()))
            if oldest:
                self._forget(oldest.pop(0))
            if not oldest:
                del self._groups[oldest_key]

    def _forget(self, kept: _Kept[S]) -> None:
        """Account for ``kept`` leaving its group."""
        self.used_bytes -= kept.size
        if kept.point:
            left = self._points[kept.point] - 1
            if left:
                self._points[kept.point] = left
            else:
                del self._points[kept.point]

    def clear(self) -> None:
        self._last = None
        self._groups.clear()
        self._points.clear()
        self.used_bytes = 0

    def __len__(self) -> int:
        return sum(len(g) for g in self._groups.values())


def _deep_key(raw: bytes, at: int) -> bytes:
    """The group key of the 64 bytes before offset ``at``. A kept body with anchors is grouped at the
    last multiple of ``DEEP_BYTES`` before its oldest anchor: bytes of its own history (shared by
    every body read from it), so conversations of one agent, which begin alike, fall in groups of
    their own. A lookup tries each offset some kept body is grouped at (a few: bodies of similar
    length share them)."""
    return at.to_bytes(8, "big") + raw[max(0, at - 64):at]


def _common_prefix(a: bytes, b: bytes) -> int:
    """Length of the longest common prefix of ``a`` and ``b`` (C-speed compares of 4 KB chunks,
    then a bisection inside the first chunk that differs)."""
    n = min(len(a), len(b))
    at = 0
    while at + _CHUNK <= n and a[at:at + _CHUNK] == b[at:at + _CHUNK]:
        at += _CHUNK
    lo, hi = at, min(at + _CHUNK, n)
    while lo < hi:  # a[:lo] == b[:lo]; the first difference is before hi (or there is none)
        mid = (lo + hi + 1) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo
