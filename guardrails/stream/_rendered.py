"""What a Markdown or HTML view shows of a stream's text: the view the ``secrets`` check reads.

A model can split a key with markup the client's renderer removes (``ghp_**abc**def...``,
``AKIA`IOSF`ODNN...``, ``sk_live_<b>abc</b>...``) or spell its characters as HTML character
references (``&#103;hp_...``, ``ghp&lowbar;...``, ``&#x61;``): the reader sees the whole key. The
view, grown delta by delta:

- *removed between key characters* (a letter, digit or one of ``_+/=.-`` before, a letter,
  digit, ``_`` or ``-`` after, in this same reading): runs of ``*`` (emphasis), of backticks
  (code spans), of two or more ``~`` (strikethrough), HTML tags (``<b>``, ``</span>``, ``<wbr>``, ``<i class="x">``) and comments,
  and character references that stand for an invisible character (``&#8203;``, ``&shy;``,
  ``&ZeroWidthSpace;``). Between two such characters Markdown emphasis and code spans join what
  they touch; elsewhere the markup is kept as it is (``**kwargs``, ``f(*args)``, `` `code` ``, a
  generic type ``List<String> x``), so ordinary code reads as before;
- *replaced wherever they stand*: a character reference (named with its ``;``, decimal or hex with
  or without it, as an HTML parser reads it) or a Markdown backslash escape (``\\_``) that stands
  for one character a key can hold (``A-Z a-z 0-9 _ + / = . - ~ : @``; look-alikes read as ASCII).
  ``&amp;``, ``&lt;``, ``&quot;`` stand for characters no key holds, so they are kept.

Not read: a key spread over a link (``[ghp_abc](u)def``), over lines, or over the content of a
hidden element (``<span hidden>``); Markdown's rule that emphasis inside a code span or block
shows as written (the view removes it there too: a key so written shows split, and the check
only sees more).

Cost per delta: one C search for ``& < * ` ~ \\`` over the new text, and each construct read once;
a construct that may still be growing at the end of the text (``&#10``, ``<span cla``, ``**``
before its next character) waits, held back (``consumed``), and is read again on the next delta;
a run of constructs is resumed where it stopped. Bounded: a run of markup ends by ``RUN_MAX``
characters from its start (what follows is read afresh), so the waiting tail never exceeds it and
the work per character is bounded too (``tests/checks/test_secrets_markup.py`` counts it: about 7
regex steps per character on code, at most ~260 on hostile runs).

Offsets: ``raw_start``/``raw_end``/``raw_horizon`` map a character of the view to the text the
view was made from (a removed run lies between two view characters; a replaced character covers
its whole reference).
"""

from __future__ import annotations

import html
import re
from bisect import bisect_right
from html.entities import html5

from guardrails.text.invisible import INVISIBLE, read_table

RUN_MAX = 256
"""The longest run of markup (constructs back to back) the view reads; a longer one is text. Tags
with a few attributes and short comments fit; the bound keeps the held tail and its re-reading
per delta small."""
_REF_MAX = 40
SPECIAL = re.compile(r"[&<*`~\\]")
"""A character that may start markup; a text without one reads as it is."""
_WORD = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_KEY = _WORD | frozenset("+/=.")
"""What may come before removed markup: a key's character. What comes after it must be a letter,
a digit, ``_`` or ``-`` (``_WORD``): after a closing mark, ``.`` or ``/`` is a sentence's or a
path's far more often than a key's (``version `2025-06-30.basil`.``)."""
_DECODED = _KEY | frozenset("~:@")
_ESCAPED = frozenset("_+/=.-~:@")
"""What a Markdown backslash escape may stand for here: ASCII punctuation a key holds (``\\n`` is
no escape in Markdown, and in code it is a newline)."""
_REF = re.compile(r"&(?:#[xX]([0-9a-fA-F]{1,8});?|#([0-9]{1,8});?|([A-Za-z][A-Za-z0-9]{1,31});)")
_REF_PARTIAL = re.compile(r"&(?:#(?:[xX][0-9a-fA-F]{0,8}|[0-9]{0,8})|[A-Za-z][A-Za-z0-9]{0,31})?")
_TAG = re.compile(r"<(?:!--.*?-->|/?[A-Za-z][A-Za-z0-9-]*(?:[ \t\r\n/][^<>]*)?>)", re.DOTALL)
_TAG_PARTIAL = re.compile(r"<(?:!(?:-(?:-.*)?)?|/?(?:[A-Za-z][A-Za-z0-9-]*(?:[ \t\r\n/][^<>]*)?)?)", re.DOTALL)
_RUNS = {"*": re.compile(r"\*+"), "`": re.compile(r"`+"), "~": re.compile(r"~+")}

_PENDING = -1
"""What a reading returns when the text ends before the construct at hand is decided."""


def _decoded(ref: re.Match[str]) -> str:
    """What a character reference stands for, as an HTML parser reads it ('' when unknown)."""
    if ref.group(3) is not None:
        return html5.get(ref.group(3) + ";", "")
    return html.unescape(ref.group() if ref.group().endswith(";") else ref.group() + ";")


class RenderedText:
    """One stream's text as a Markdown or HTML view shows it (``text``), grown by ``feed``.

    The map is a list of the pieces read: ``(view start, view length, raw start, raw length)``, a
    removed run (view length 0) or a replaced character (view length 1); between pieces the view
    and the raw text go character for character."""

    __slots__ = ("_base", "_out", "_pieces", "_resume", "_starts", "consumed", "pieces_read", "text")

    def __init__(self) -> None:
        self.text = ""
        self.consumed = 0
        """How much of the raw text the view holds; the rest may still be markup."""
        self.pieces_read = 0
        """Pieces of markup read so far (0: the view is the raw text so far)."""
        self._pieces: list[tuple[int, int, int, int]] = []
        self._starts: list[int] = []
        self._base = (0, 0)
        """Before the first piece kept, the view at ``_base[0]`` is the raw text at ``_base[1]``."""
        self._out: list[str] = []
        self._resume = (-1, -1)
        """A run of markup that waited for more text: where it starts, and where its first construct
        not yet read starts."""

    def feed(self, raw: str, *, final: bool = False) -> str:
        """Read ``raw`` (the whole raw text so far) from ``consumed`` as far as it is decided (to
        its end when ``final``); returns the view's new characters."""
        pos, end = self.consumed, len(raw)
        if SPECIAL.search(raw, pos) is None:  # (most deltas, even in markup: nothing to read in what is new)
            shown = raw[pos:]
            text, self.text = self.text, ""  # (as ``_emit``)
            text += shown
            self.text, self.consumed = text, end
            return shown
        out = self._out
        while pos < end:
            found = SPECIAL.search(raw, pos)
            if found is None:
                self._emit(raw[pos:])
                pos = end
                break
            if found.start() > pos:
                self._emit(raw[pos:found.start()])
                pos = found.start()
            step = self._markup(raw, pos, final)
            if step == _PENDING:
                break
            pos = step
        self.consumed = pos
        added = "".join(out)
        out.clear()
        return added

    def _emit(self, shown: str) -> None:
        self._out.append(shown)
        text, self.text = self.text, ""  # detached: CPython grows the one-owner string in place
        text += shown
        self.text = text

    def _markup(self, raw: str, pos: int, final: bool) -> int:
        """Read the construct at ``pos`` (a special character); the offset after it, or ``_PENDING``."""
        shown = self._shown_run(raw, pos)
        if shown is not None:
            return shown
        replaced = self._replaced(raw, pos, final)
        if replaced == _PENDING:
            return _PENDING
        if isinstance(replaced, tuple):
            char, after = replaced
            self._piece(pos, after, char)
            return after
        run_end = self._run(raw, pos, final)
        if run_end == _PENDING:
            return _PENDING
        if run_end is None:
            self._emit(raw[pos])
            return pos + 1
        following = self._next_char(raw, run_end, final)
        if following == _PENDING:
            return _PENDING
        if self.text[-1:] in _KEY and following in _WORD:
            self._piece(pos, run_end, "")
        else:
            self._emit(raw[pos:run_end])
        return run_end

    def _shown_run(self, raw: str, pos: int) -> int | None:
        """A run of ``*``, backticks or ``~`` at ``pos`` after what no key holds (a space, most often:
        Markdown's opening marks) is shown as written whatever follows it, so it is read as text at
        once (the offset after it; None for any other construct). What a run of constructs would
        hold after it is read next, after a character no key holds either: shown as written too, or
        replaced (a reference) as it would be. Saves ``_run`` and ``_next_char`` on about half of
        Markdown's marks."""
        lead = raw[pos]
        if lead not in _RUNS or self.text[-1:] in _KEY:
            return None
        run = _RUNS[lead].match(raw, pos)
        assert run is not None
        self._emit(run.group())
        return run.end()

    def _piece(self, raw_start: int, raw_end: int, char: str) -> None:
        view_at = len(self.text)
        self._pieces.append((view_at, len(char), raw_start, raw_end - raw_start))
        self._starts.append(view_at)
        self.pieces_read += 1
        if char:
            self._emit(char)

    @staticmethod
    def _replaced(raw: str, pos: int, final: bool) -> tuple[str, int] | int | None:
        """A character reference or backslash escape at ``pos`` that stands for a key's character:
        (that character, the offset after it); None when there is none; ``_PENDING``."""
        lead = raw[pos]
        if lead == "\\":
            if pos + 1 == len(raw):
                return None if final else _PENDING
            escaped = raw[pos + 1]
            return (escaped, pos + 2) if escaped in _ESCAPED else None
        if lead != "&":
            return None
        stop = min(len(raw), pos + _REF_MAX)
        ref = _REF.match(raw, pos, stop)
        if not final and (ref is None or (ref.end() == len(raw) and not ref.group().endswith(";"))):
            partial = _REF_PARTIAL.match(raw, pos, stop)
            if partial is not None and partial.end() == len(raw):
                return _PENDING  # the reference may go on (more digits, its ``;``)
        if ref is None:
            return None
        char = _decoded(ref)
        if len(char) == 1:
            if ord(char) in INVISIBLE:
                return None  # (an invisible one is removed between key characters: ``_run``)
            char = char.translate(read_table())
            if char in _DECODED:
                return char, ref.end()
        return None

    def _run(self, raw: str, pos: int, final: bool) -> int | None:
        """The end of a run of removable markup starting at ``pos`` (constructs back to back, the
        last ending by ``pos + RUN_MAX``); None when there is none at ``pos``; ``_PENDING``. A run
        still growing at the end of the text is resumed where it stopped (``_resume``), so each of
        its constructs is read once however many deltas it takes to arrive."""
        resume = self._resume
        at = resume[1] if resume[0] == pos else pos
        limit = pos + RUN_MAX
        while at < len(raw):
            step = self._construct(raw, at, limit, final)
            if step == _PENDING:
                self._resume = (pos, at)
                return _PENDING
            if step is None:
                break
            at = step
        self._resume = (pos, at)
        return None if at == pos else at

    @staticmethod
    def _construct(raw: str, pos: int, limit: int, final: bool) -> int | None:
        """The end of one removable construct at ``pos`` that ends by ``limit``, None, or ``_PENDING``."""
        lead = raw[pos]
        stop = min(len(raw), limit)
        if pos >= stop:
            return None
        waits = not final and len(raw) < limit  # more text may still complete or grow it
        if lead in _RUNS:
            run = _RUNS[lead].match(raw, pos, stop)
            assert run is not None
            if run.end() == len(raw) and waits:
                return _PENDING  # the run may go on
            if lead == "~" and run.end() - pos < 2:
                return None  # one ``~`` is text (and a key's character)
            return run.end()
        if lead == "<":
            tag = _TAG.match(raw, pos, stop)
            if tag is not None:
                return tag.end()
            partial = _TAG_PARTIAL.match(raw, pos, stop)
            if waits and partial is not None and partial.end() == len(raw):
                return _PENDING
            return None
        if lead == "&":
            ref = _REF.match(raw, pos, min(stop, pos + _REF_MAX))
            if ref is None:
                partial = _REF_PARTIAL.match(raw, pos, min(stop, pos + _REF_MAX))
                return _PENDING if waits and partial is not None and partial.end() == len(raw) else None
            if not ref.group().endswith(";") and ref.end() == len(raw) and waits:
                return _PENDING
            char = _decoded(ref)
            return ref.end() if len(char) == 1 and ord(char) in INVISIBLE else None
        return None

    def _next_char(self, raw: str, pos: int, final: bool) -> str | int:
        """The view's character that the raw text at ``pos`` starts ('' at the end when ``final``)."""
        if pos == len(raw):
            return "" if final else _PENDING
        if SPECIAL.match(raw, pos) is None:
            return raw[pos]
        replaced = self._replaced(raw, pos, final)
        if replaced == _PENDING:
            return _PENDING
        if replaced is not None:
            assert isinstance(replaced, tuple)
            return replaced[0]
        return raw[pos]

    # -- offsets ---------------------------------------------------------------------------------
    def _piece_at(self, view: int) -> tuple[int, int, int, int] | None:
        i = bisect_right(self._starts, view)
        return self._pieces[i - 1] if i else None

    def raw_start(self, view: int) -> int:
        """Where the view's character ``view`` begins in the raw text (``view == len(text)``: where
        the next one would)."""
        piece = self._piece_at(view)
        if piece is None:
            return self._base[1] + view - self._base[0]
        at, length, raw_at, raw_length = piece
        if view < at + length:
            return raw_at
        return raw_at + raw_length + view - at - length

    def raw_end(self, view: int) -> int:
        """Where the view's character ``view`` ends in the raw text."""
        piece = self._piece_at(view)
        if piece is not None and view < piece[0] + piece[1]:
            return piece[2] + piece[3]
        return self.raw_start(view) + 1

    def raw_span(self, start: int, end: int) -> tuple[int, int]:
        """The raw span of the view's ``[start, end)``: markup between its characters inside it."""
        first = self.raw_start(start)
        return first, (self.raw_end(end - 1) if end > start else first)

    def raw_horizon(self, view: int) -> int:
        """A horizon in the raw text: just after the view's character before ``view`` (markup
        between it and ``view`` is held with ``view``): ``raw_end(view - 1)``, with one search of
        the pieces (the check asks on every delta)."""
        if view <= 0:
            return 0
        last = view - 1
        i = bisect_right(self._starts, last)
        if not i:
            return self._base[1] + last - self._base[0] + 1
        at, length, raw_at, raw_length = self._pieces[i - 1]
        return raw_at + raw_length + (last - at - length + 1 if last >= at + length else 0)

    def forget_before(self, view: int) -> None:
        """No later question asks about a view offset below ``view - 1``: pieces before it go."""
        starts = self._starts
        if len(starts) <= 64:
            return
        i = bisect_right(starts, view - 2)
        if i > 1:
            at, length, raw_at, raw_length = self._pieces[i - 2]
            self._base = (at + length, raw_at + raw_length)
            del starts[:i - 1]
            del self._pieces[:i - 1]


def render(text: str) -> str:
    """``text`` as the view shows it, whole."""
    if SPECIAL.search(text) is None:
        return text
    view = RenderedText()
    view.feed(text, final=True)
    return view.text
