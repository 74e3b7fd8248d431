"""The canary's notion of 'same text' (``normalise``), and the planted token watched through it.

``normalise`` drops invisible characters, applies NFKC, maps look-alike letters to the ASCII letter
they imitate (``guardrails.text.confusables``), folds case and collapses whitespace runs to one
space. ASCII text is only lowercased (and its whitespace collapsed): nearly every delta.

``squeeze`` is ``normalise`` with only letters kept (no digits, no punctuation, no spaces): the view in which a prompt spelled
out (``y o u  a r e``, one letter per line, ``you_are``, ``y.o.u``), run together (``youare``) or
with markup around each word or letter (``**you** **are**``, ``"you" "are"``, ``- you\n- are``)
reads as the prompt itself does.

``TokenWatch`` finds the planted ``gp-canary-...`` marker in an answer both as it is and normalised,
so a copy in look-alike letters (Cyrillic ``а с е``), in capitals or with invisible characters
between its letters is a leak too; ``token_in`` is the same verdict over a complete text.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from guardrails.text.confusables import skeleton_table
from guardrails.text.invisible import INVISIBLE

WS_RUN = re.compile(r"\s+")
_RAW_PER_TOKEN_CHAR = 16
"""How far back (raw characters per normalised one) a pending token prefix is looked for: invisible
characters between a copy's letters make the raw text longer than the normalised one."""


def normalise(text: str) -> str:
    """Invisible characters dropped, NFKC, look-alikes to their prototypes, case folding and
    whitespace runs to one space."""
    if text.isascii():
        folded = text.lower()
        if folded.isprintable() and "  " not in folded:
            return folded  # no whitespace but single spaces: nothing to collapse (most deltas)
    else:
        folded = unicodedata.normalize("NFKC", text.translate(INVISIBLE)).translate(skeleton_table()).casefold()
    return WS_RUN.sub(" ", folded)


_NOT_ALPHA_ASCII = bytes(c for c in range(128) if not chr(c).isalpha())
_NOT_ALPHA = re.compile(r"[\W\d_]+")


def squeeze(text: str) -> str:
    """``normalise``, then only letters kept (digits go too: a numbered list puts them between the
    words). ASCII: one C pass (a token-sized delta, a word with or without its leading space: a
    slice and ``lower``)."""
    if text.isascii():
        if text.isalpha():
            return text.lower()
        if text[:1] == " " and text[1:].isalpha():
            return text[1:].lower()
        return text.encode("ascii").lower().translate(None, _NOT_ALPHA_ASCII).decode("ascii")
    return _NOT_ALPHA.sub("", normalise(text))


def token_in(token: str, pieces: Sequence[str]) -> bool:
    """Whether ``TokenWatch`` fed ``pieces`` finds ``token``: in the joined text as it is, or in the
    pieces normalised one by one and joined (as the watch normalises each delta on its own)."""
    joined = pieces[0] if len(pieces) == 1 else "".join(pieces)
    return token in joined or token in "".join(map(normalise, pieces))


class TokenWatch:
    """One stream's watch for the token: the last ``len(token) - 1`` normalised characters."""

    __slots__ = ("_tail", "token")

    def __init__(self, token: str) -> None:
        self.token = token  # lowercase ASCII (``make_canary_token``): its own normalised form
        self._tail = ""

    def found(self, accumulated: str, delta: str) -> bool:
        """Whether the token ends in ``delta`` (raw or normalised). O(len(delta) + len(token))."""
        token = self.token
        if accumulated.find(token, max(0, len(accumulated) - len(delta) - len(token) + 1)) != -1:
            return True
        if not delta:
            return False
        seen = self._tail + normalise(delta)
        self._tail = seen[1 - len(token):]
        return token in seen

    def horizon(self, text: str, horizon: int) -> int:
        """``horizon``, or the start of a tail of ``text`` that may begin the token if earlier: a raw
        tail that is a prefix of it, or the raw characters that normalise to a normalised one."""
        token = self.token
        at = text.find(token[0], max(0, len(text) - len(token) + 1))
        while at != -1 and at < horizon:
            if token.startswith(text[at:]):
                return at
            at = text.find(token[0], at + 1)
        pending = self._pending()
        if pending:
            horizon = min(horizon, len(text) - self._raw_chars(text, pending))
        return horizon

    def _pending(self) -> int:
        """Normalised characters at the end of the tail that are a prefix of the token."""
        tail, token = self._tail, self.token
        at = tail.find(token[0])
        while at != -1:
            if token.startswith(tail[at:]):
                return len(tail) - at
            at = tail.find(token[0], at + 1)
        return 0

    @staticmethod
    def _raw_chars(text: str, normalised: int) -> int:
        """The fewest raw characters at the end of ``text`` that normalise to at least ``normalised``
        characters (a binary search; capped, then the cap: holds more, never less within it)."""
        lo, hi = normalised, min(len(text), _RAW_PER_TOKEN_CHAR * normalised)
        if hi <= lo or len(normalise(text[-lo:])) >= normalised:
            return min(lo, len(text))
        while lo < hi:
            mid = (lo + hi) // 2
            if len(normalise(text[-mid:])) >= normalised:
                hi = mid
            else:
                lo = mid + 1
        return lo
