"""Pure path arithmetic for the path rules: spelling, the agent's root, privileged places, manifests.

All paths here are POSIX strings. Nothing in this module touches the filesystem: the probe resolves,
these functions only compare.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Sequence
from fnmatch import fnmatchcase

_GLOB_CHARS = re.compile(r"[*?\[]")
# The places where an agent's home directory usually lives, whoever the agent runs as. "~" in a
# privileged entry is matched against each of these as well as the proxy's own HOME, because the
# agent (a container, another user) names its home differently from the proxy.
AGENT_HOMES = ("/root", "/home/*", "/Users/*")


def lexical(raw: str, *, home: str, workspace: str, agent_root: str) -> str:
    """Where ``raw`` (as the agent named it) is on the proxy's side, by spelling alone.

    ``~`` expands to the proxy's HOME; an absolute path under the agent's root is moved onto the
    workspace; a relative path is joined to the workspace; ``..`` and ``.`` are folded.
    """
    path = raw
    if path == "~" or path.startswith("~/"):
        path = home + path[1:]
    path = posixpath.normpath(posixpath.join(workspace, path))
    if agent_root:
        root = posixpath.normpath(agent_root)
        if path == root or path.startswith(root.rstrip("/") + "/"):
            path = posixpath.normpath(workspace + "/" + path[len(root):])
    return path


def is_glob(path: str) -> bool:
    return bool(_GLOB_CHARS.search(path))


def static_prefix(path: str) -> str:
    """The part of a glob before its first wildcard segment: ``src/**/*.py`` -> ``src``."""
    kept: list[str] = []
    for seg in path.split("/"):
        if is_glob(seg):
            break
        kept.append(seg)
    joined = "/".join(kept)
    return joined or ("/" if path.startswith("/") else ".")


def within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _expand_entry(entry: str, home: str) -> list[str]:
    if entry == "~" or entry.startswith("~/"):
        rest = entry[1:]
        return [posixpath.normpath(h + rest) for h in (home, *AGENT_HOMES)]
    return [posixpath.normpath(entry)]


def _prefix_match(path: str, form: str) -> bool:
    """``form`` (segments may hold ``*``) equals ``path`` or one of its ancestors."""
    want = form.strip("/").split("/") if form != "/" else []
    have = path.strip("/").split("/") if path != "/" else []
    return len(have) >= len(want) and all(fnmatchcase(h, w) for h, w in zip(have, want))


def privileged_entry(candidates: Iterable[tuple[str, str | None]], entries: Sequence[str], *,
                     home: str) -> str | None:
    """The first privileged entry that any candidate path falls under, or None.

    Each candidate comes with the workspace root in the same namespace (the proxy's workspace for
    resolved paths, the agent's root for the path as the agent spelled it). An entry that contains
    that root (``/root`` when the workspace is ``/root/proj``) does not apply to paths inside it:
    the user put the workspace there on purpose.
    """
    pairs = list(candidates)
    for entry in entries:
        for form in _expand_entry(entry, home):
            for path, root in pairs:
                if not _prefix_match(path, form):
                    continue
                if root is not None and _prefix_match(root, form) and within(path, root):
                    continue
                return entry
    return None


def _glob_regex(pattern: str) -> re.Pattern[str]:
    """``**`` spans segments, ``*`` and ``?`` stay within one, ``[...]`` is a class."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[" and "]" in pattern[i + 1:]:
            end = pattern.index("]", i + 1)
            body = pattern[i + 1:end].replace("\\", "\\\\")
            out.append("[^" + body[1:] + "]" if body.startswith("!") else "[" + body + "]")
            i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out))


def in_manifest(relative: str, globs: Sequence[str]) -> bool:
    """Whether a workspace-relative path is covered by the manifest.

    A glob matches the whole path (``src/*.py`` does not reach ``src/a/b.py``; ``src/**`` does).
    A pattern with no wildcard also covers everything beneath it, so ``docs`` means the folder.
    """
    for raw in globs:
        pattern = raw.strip("/")
        pattern = pattern.removeprefix("./")
        if _glob_regex(pattern).fullmatch(relative):
            return True
        if not is_glob(pattern) and within(relative, pattern):
            return True
    return False
