"""Reading a judge's reply the way a person would.

A judge model at temperature 0 is told to answer PASS or VIOLATION, and often does more: it explains
("VIOLATION\\n\\nThe reply contradicts the user..."), labels ("Verdict: VIOLATION"), or decorates
("**PASS**."). A person reads the first word of the first line, or a labelled verdict anywhere.
What is still ambiguous (no verdict word, or two readings that disagree) is *unreadable*, and the
policy's ``on_unreadable`` decides what that means; it is never silently a pass by this module.

Cost: one pass over at most ``MAX_READ_CHARS`` of the reply (the reply is the judge's, but a judge
can be talked into echoing the answer it judges, so it is bounded like untrusted text).
"""

from __future__ import annotations

import re
from typing import Literal

Verdict = Literal["pass", "violation"]

MAX_READ_CHARS = 4000
"""A verdict is in the first line or a labelled line near the top; beyond this is commentary."""

_WORDS: dict[str, Verdict] = {"PASS": "pass", "VIOLATION": "violation"}
_FIRST_WORD = re.compile(r"[^\W_]+")
_LABEL_WORDS = r"(?:verdict|decision|answer|result|judg(?:e)?ment|classification)"
_HEADING = re.compile(r"^[ \t>#*_`\-]*(?:final[ \t]+)?" + _LABEL_WORDS + r"[ \t*_`:]*$", re.IGNORECASE)
_LABELLED = re.compile(
    r"^[ \t>#*_`\-]*(?:final[ \t]+)?" + _LABEL_WORDS + r"[ \t*_`]*[:=\-][ \t*_`\"'“”]*(PASS|VIOLATION)\b",
    re.IGNORECASE | re.MULTILINE,
)


def _first_line_verdict(text: str) -> Verdict | None:
    for line in text.splitlines():
        match = _FIRST_WORD.search(line)
        if match is None or _HEADING.match(line):
            continue  # a line of only marks ("---", "**") is decoration; "## Verdict" announces it
        verdict = _WORDS.get(match.group(0).upper())
        # "PASS VIOLATION" or "PASS (no VIOLATION)" on the verdict line: a person would ask again.
        words = {w.upper() for w in _FIRST_WORD.findall(line)}
        return verdict if verdict is not None and len(words & _WORDS.keys()) == 1 else None
    return None


def read_verdict(reply: str) -> Verdict | None:
    """``pass``, ``violation``, or None when a person could not tell (see the module docstring)."""
    text = reply[:MAX_READ_CHARS]
    readings = {_WORDS[m.group(1).upper()] for m in _LABELLED.finditer(text)}
    first = _first_line_verdict(text)
    if first is not None:
        readings.add(first)
    return readings.pop() if len(readings) == 1 else None


def parse_verdict(reply: str) -> bool | None:
    """True for VIOLATION, False for PASS, None when unreadable (kept for existing callers)."""
    verdict = read_verdict(reply)
    return None if verdict is None else verdict == "violation"
