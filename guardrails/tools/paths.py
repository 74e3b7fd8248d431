"""Pure path arithmetic for the path rules: spelling, the agent's root, privileged places, manifests.

Paths here are POSIX strings. A Windows agent's paths (its workspace root is ``C:\\Users\\me\\proj`` or
``\\\\server\\share``) are read with Windows semantics (``windows_form``) and compared in a POSIX-shaped form:
``C:\\Users\\Me\\proj\\..\\x`` is ``/c:/users/me/x``. Nothing in this module touches the filesystem: the
probe resolves, these functions only compare.
"""

from __future__ import annotations

import functools
import ntpath
import posixpath
import re
from collections.abc import Iterable, Sequence
from fnmatch import fnmatchcase
from pathlib import PureWindowsPath

_GLOB_CHARS = re.compile(r"[*?\[]")
# The places where an agent's home directory usually lives, whoever the agent runs as. "~" in a
# privileged entry is matched against each of these as well as the proxy's own HOME, because the
# agent (a container, another user) names its home differently from the proxy.
AGENT_HOMES = ("/root", "/home/*", "/Users/*", "/?:/users/*")
"""The last is a Windows home in ``windows_form`` (``C:\\Users\\me`` is ``/c:/users/me``)."""

_WINDOWS_ROOT = re.compile(r"^(?:[A-Za-z]:(?:[\\/]|$)|[\\/][\\/][^\\/])")
_DEVICE_PREFIX = re.compile(r"^[\\/][\\/][?.][\\/](?:UNC[\\/])?", re.IGNORECASE)
_MSYS_DRIVE = re.compile(r"^/([A-Za-z])(?=/|$)")
_STREAM = re.compile(r":.*$")


def is_windows(root: str) -> bool:
    """Whether a workspace root is a Windows path (``C:\\...``, ``C:/...``, ``\\\\server\\share``, ``\\\\?\\C:\\``):
    then the agent's paths are read with Windows semantics."""
    return bool(root) and bool(_WINDOWS_ROOT.match(root))


def _windows_name(part: str) -> str:
    """A name as Windows opens it: an alternate data stream (``.git::$INDEX_ALLOCATION`` is the folder
    ``.git``) and trailing dots and spaces dropped (``.git.``, ``.git ``, ``..  `` is ``..``)."""
    name = _STREAM.sub("", part) or part
    bare = name.rstrip(" ")
    if bare and set(bare) == {"."}:
        return bare
    return name.rstrip(". ") or name


@functools.lru_cache(maxsize=4096)
def windows_form(raw: str, base: str) -> str:
    """``raw`` as a Windows program opens it from the folder ``base``, in the POSIX-shaped form the rules
    compare, lowercased (Windows names are case-insensitive): ``\\`` and ``/`` separate; a drive
    (``D:\\``), a rooted path (``\\x``, on ``base``'s drive), a drive-relative one (``D:x``, from that drive's
    root when it is not ``base``'s drive), a UNC share (``//server/share/...``) and the ``\\\\?\\``/``\\\\.\\``
    device prefixes (whose path is then read like any other, to be safe) are followed; Git Bash's
    ``/c/...`` is ``C:\\...``; ``..`` folds."""
    device = _DEVICE_PREFIX.match(raw)
    if device is not None:
        unc = device.group(0)[4:].upper().startswith("UNC")
        rest = raw[device.end():]
        if not unc and not re.match(r"^[A-Za-z]:(?:[\\/]|$)", rest):
            # ``\\.\\PhysicalDrive0``, ``\\?\\Volume{...}\\``, ``\\?\\GLOBALROOT\\...``: a device, never a workspace path
            return "//" + device.group(0)[2] + "/" + rest.replace("\\", "/").lower()
        raw = ("\\\\" if unc else "") + rest
    msys = _MSYS_DRIVE.match(raw)
    if msys is not None:
        raw = msys.group(1) + ":\\" + raw[msys.end():]
    path = PureWindowsPath(base) / PureWindowsPath(raw)
    if path.drive and not path.root:  # ``D:x``: relative to D's current folder, unknown: its root
        path = PureWindowsPath(path.drive + "\\") / PureWindowsPath(*path.parts[1:]) if len(path.parts) > 1 \
            else PureWindowsPath(path.drive + "\\")
    names = [_windows_name(p) for p in path.parts[1:]]
    folded = ntpath.normpath(ntpath.join(path.anchor, *names)) if names else path.anchor
    out = folded.replace("\\", "/").lower()
    return out if out.startswith("//") else "/" + out.rstrip("/") if out not in ("", "/") else "/"


def workspace_form(root: str) -> str:
    """A workspace root as the rules compare it: ``windows_form`` for a Windows root, else normalised."""
    return windows_form(root, root) if is_windows(root) else posixpath.normpath(root)


def _windows_home(root: str) -> str | None:
    """``C:\\Users\\me``: the home of the user whose folder the Windows root is in, or None."""
    parts = PureWindowsPath(root).parts
    return str(PureWindowsPath(*parts[:3])) if len(parts) >= 3 and parts[1].lower() == "users" else None


def _windows_lexical(raw: str, *, home: str, workspace: str, agent_root: str) -> str:
    """``lexical`` for a Windows agent. With a Windows workspace (nothing mounted: the proxy cannot see
    that disk), the path's ``windows_form``. With a POSIX workspace and a Windows ``agent_root`` (a
    sidecar mounting the agent's folder), a path under the agent's root moves onto the workspace (the
    rest of it keeps its letter case, for the mounted disk), any other stays in its Windows form."""
    win_root = agent_root if is_windows(agent_root) else workspace
    if raw == "~" or raw.startswith(("~/", "~\\")):
        user_home = _windows_home(win_root)
        raw = (user_home + raw[1:]) if user_home else home + raw[1:].replace("\\", "/")
        if not user_home:
            return lexical(raw, home=home, workspace=workspace, agent_root="") if not is_windows(workspace) \
                else windows_form(raw, win_root)
    form = windows_form(raw, win_root)
    if is_windows(workspace):
        return form
    root = windows_form(win_root, win_root)
    if form == root or form.startswith(root.rstrip("/") + "/"):
        rest = _case_kept(raw, win_root)[len(root):] if _case_kept(raw, win_root).lower().startswith(root) else \
            form[len(root):]
        return posixpath.normpath(workspace + "/" + rest)
    return form


def _case_kept(raw: str, base: str) -> str:
    """``windows_form`` without the lowercasing (for the part that lands on a case-sensitive mount)."""
    device = _DEVICE_PREFIX.match(raw)
    if device is not None:
        return windows_form(raw, base)
    path = PureWindowsPath(base) / PureWindowsPath(raw)
    names = [_windows_name(p) for p in path.parts[1:]]
    folded = ntpath.normpath(ntpath.join(path.anchor, *names)) if names else path.anchor
    out = folded.replace("\\", "/")
    return "/" + out[0].lower() + out[1:] if len(out) > 1 and out[1] == ":" else out


def lexical(raw: str, *, home: str, workspace: str, agent_root: str) -> str:
    """Where ``raw`` (as the agent named it) is on the proxy's side, by spelling alone.

    ``~`` expands to the proxy's HOME; an absolute path under the agent's root is moved onto the
    workspace; a relative path is joined to the workspace; ``..`` and ``.`` are folded. A Windows
    agent (``is_windows`` of its root) is read with Windows semantics (``_windows_lexical``).
    """
    if is_windows(agent_root) or is_windows(workspace):
        return _windows_lexical(raw, home=home, workspace=workspace, agent_root=agent_root)
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
    if is_windows(entry):  # ``C:\\Windows``: compared in windows_form
        return [windows_form(entry, entry)]
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
