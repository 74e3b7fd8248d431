"""Paths named by a Codex ``apply_patch`` envelope (pure).

The envelope is::

    *** Begin Patch
    *** Add File: path        (a new file; its lines follow, each prefixed with "+")
    *** Update File: path     (hunks follow; may be followed by "*** Move to: new/path")
    *** Delete File: path
    *** End Patch

``parse_patch`` reads only the header lines. ``added_text`` gives the lines a patch adds to each file,
for one purpose: the hosts a package or VCS settings file names (``guardrails.tools.sources``); only
those hosts reach the observations, never the text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

PatchOp = Literal["add", "update", "delete", "move_to"]

BEGIN = "*** Begin Patch"
# The path is the rest of the line, stripped in code: a ``(.+?)\s*$`` tail is quadratic on a line
# of spaces (8 KB froze the loop for 2 s).
_HEADER = re.compile(r"\s*\*\*\* (Add File|Update File|Delete File|Move to):")
_OPS: dict[str, PatchOp] = {
    "Add File": "add",
    "Update File": "update",
    "Delete File": "delete",
    "Move to": "move_to",
}


@dataclass(frozen=True, slots=True)
class PatchTarget:
    op: PatchOp
    path: str


def parse_patch(text: str) -> list[PatchTarget]:
    """Every file the patch touches, in order. Tolerant: headers outside the envelope still count, and
    so do headers with leading whitespace (Codex trims each line before matching), because a lenient
    applier would act on them and a guard must not be stricter than the tool."""
    targets: list[PatchTarget] = []
    for line in text.splitlines():
        m = _HEADER.match(line)
        path = line[m.end():].strip() if m else ""
        if m and path:
            targets.append(PatchTarget(_OPS[m.group(1)], path))
    return targets


def find_patch(text: str) -> str | None:
    """The patch envelope inside ``text`` (a shell heredoc, an argv item), or None."""
    start = text.find(BEGIN)
    return text[start:] if start >= 0 else None


def added_text(text: str) -> list[tuple[PatchTarget, str | None]]:
    """Each target with the lines the patch adds to it (``+`` lines, the ``+`` dropped); None for a
    ``Move to`` target, whose content is the moved file's, not in the patch. One pass over the lines."""
    out: list[tuple[PatchTarget, list[str] | None]] = []
    for line in text.splitlines():
        m = _HEADER.match(line)
        path = line[m.end():].strip() if m else ""
        if m and path:
            op = _OPS[m.group(1)]
            out.append((PatchTarget(op, path), None if op == "move_to" else []))
        elif m or line.lstrip().startswith("*** "):
            continue
        elif line.startswith("+") and out and (added := out[-1][1]) is not None:
            added.append(line[1:])
    return [(t, None if lines is None else "\n".join(lines)) for t, lines in out]
