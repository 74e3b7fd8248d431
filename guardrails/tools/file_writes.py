"""The files one tool call writes, when the call is a file tool's plain write, for a stream
guardrail's ``allow_paths`` (test fixtures that hold example keys or addresses).

Only calls the catalog names a ``file_write`` with its paths in ``path``/``paths``/``patch``
parameters, and no command or URL, have an answer: a shell command's writes are the shell reading's
business, and a guardrail is never left out of a call whose writes the proxy cannot list exactly. A
text editor whose sub-command reads (``view``) writes nothing and gets no answer either.
"""

from __future__ import annotations

import fnmatch
import ntpath
import posixpath
from collections.abc import Mapping, Sequence

from config.policy import ToolSpec
from guardrails.tools.arguments import parse_arguments
from guardrails.tools.catalog import lookup, strings
from guardrails.tools.patch import parse_patch
from guardrails.tools.paths import is_windows


def written_files(name: str, arguments: str, overrides: Mapping[str, ToolSpec]) -> list[str] | None:
    """The paths the call writes, as written, or None when the call is not a plain file write."""
    entry = lookup(name, overrides)
    if entry.effect != "file_write" or not entry.declared or entry.command or entry.commands or entry.url:
        return None
    args, state = parse_arguments(arguments)
    if state != "ok" or not isinstance(args, dict):
        return None
    if entry.read_when is not None:
        param, reads = entry.read_when
        if args.get(param) in reads:
            return None
    paths = [p for param in (*entry.path, *entry.paths) for p in strings(args.get(param))]
    for param in entry.patch:
        for text in strings(args.get(param)):
            paths += [t.path for t in parse_patch(text)]
    return paths or None


def covered(paths: Sequence[str], globs: Sequence[str], root: str | None) -> bool:
    """Whether every path matches one of ``globs`` (``fnmatch``, where ``*`` also crosses ``/``),
    each path taken relative to ``root`` when it lies below it (else as it is, normalised). A path
    that climbs out of the root (``..``) matches nothing."""
    windows = root is not None and is_windows(root)
    mod = ntpath if windows else posixpath
    for raw in paths:
        path = mod.normpath(raw.replace("\\", "/") if not windows else raw)
        if root is not None:
            base = mod.normpath(root)
            if not mod.isabs(path):
                path = mod.join(base, path)
            path = mod.normpath(path)
            try:
                rel = mod.relpath(path, base)
            except ValueError:  # another drive
                rel = path
            path = rel if not rel.startswith("..") else path
        if path.startswith(".."):  # (normpath leaves ".." only at the start)
            return False
        if windows:
            path = path.replace("\\", "/")
        if not any(fnmatch.fnmatchcase(path, g) for g in globs):
            return False
    return True
