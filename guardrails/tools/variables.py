"""Shell variables set to literal text earlier in the same command line (``F=/etc/shadow; cat $F``).

The walk is linear and does not know which branch runs (``[ -f a ] && F=a || F=b``), so a variable
keeps every literal value it was given (at most ``MAX_VALUES``): a word that uses it stands for each
of them, and each is checked. In the word's text the alternatives are spelled between private marks
(``ALT_OPEN a ALT_SEP b ALT_CLOSE``), which ``expand`` turns back into every combination; a word that
holds them is never taken for a program name (``_Walker.argv`` treats it as dynamic).

A variable given a value that is not a literal (``F=$(pwd)``, ``read F``, ``for f in *.py``, ``+=``,
a nameref) is unknown from then on, as any variable set outside the line: a word using it is not a
literal, and is not followed (see README "Tool calls").
"""

from __future__ import annotations

import itertools
import re

MAX_VALUES = 8
"""Literal values kept per variable; one more makes it unknown."""
MAX_EXPANSIONS = 32
"""Combinations ``expand`` returns for one word (the first ones, in order)."""
ALT_OPEN, ALT_SEP, ALT_CLOSE = "\x01", "\x02", "\x03"
_ALTERNATIVES = re.compile("\x01([^\x01\x03]*)\x03")
_SPLITS = re.compile(r"[\s*?\[]")
NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class Variables:
    """The literal values given to each variable so far in one command line."""

    __slots__ = ("_values", "ifs_changed")

    def __init__(self) -> None:
        self._values: dict[str, tuple[str, ...] | None] = {}
        self.ifs_changed = False

    def assign(self, name: str, value: str | None) -> None:
        """``name=value`` (None: not a literal); a further value is kept beside the earlier ones."""
        if name == "IFS":
            self.ifs_changed = True
        known = self._values.get(name, ())
        if value is None or known is None:
            self._values[name] = None
            return
        values = known if value in known else (*known, value)
        self._values[name] = values if len(values) <= MAX_VALUES else None

    def forget(self, name: str) -> None:
        """``read name``, ``unset name``: no longer a known value."""
        if NAME.match(name):
            self._values[name] = None

    def __contains__(self, name: str) -> bool:
        """Whether the line assigned ``name`` (to a literal or not)."""
        return name in self._values

    def value(self, name: str, *, quoted: bool) -> str | None:
        """The word text ``$name`` stands for, or None when it is unknown (or, unquoted, when bash would
        split or glob it: ``X="a b"; cat $X`` is two words)."""
        values = self._values.get(name)
        if not values:
            return None
        if not quoted and (self.ifs_changed or any(_SPLITS.search(v) for v in values)):
            return None
        if len(values) == 1:
            return values[0]
        return ALT_OPEN + ALT_SEP.join(values) + ALT_CLOSE


def has_alternatives(text: str) -> bool:
    return ALT_OPEN in text


def expand(text: str) -> list[str]:
    """Every spelling ``text`` stands for (one per combination of its variables' values)."""
    if ALT_OPEN not in text:
        return [text]
    pieces = _ALTERNATIVES.split(text)  # literal, alternatives, literal, alternatives, ..., literal
    choices = [p.split(ALT_SEP) if n % 2 else [p] for n, p in enumerate(pieces)]
    return ["".join(c) for c in itertools.islice(itertools.product(*choices), MAX_EXPANSIONS)]
