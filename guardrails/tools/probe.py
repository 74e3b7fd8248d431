"""The world probe: the only code in tool assessment that touches the filesystem (or the environment).

Everything it answers is recorded in the observations, so a decision can be re-made later from the
audit log without a filesystem (``decide``). Tests substitute a fake to prove the rules are pure.
"""

from __future__ import annotations

import os
from typing import Protocol


class WorldProbe(Protocol):
    def realpath(self, path: str) -> str:
        """Canonical absolute path: symlinks followed, ``..`` folded; a missing tail is kept as-is."""
        ...

    def exists(self, path: str) -> bool: ...

    def is_dir(self, path: str) -> bool: ...

    def home(self) -> str:
        """The proxy process's home directory (what ``~`` means in the policy)."""
        ...


class FileSystemProbe:
    """The real filesystem. Each answer costs one ``stat``-like syscall (realpath: one per segment);
    ``CachingProbe`` below keeps the cost per tool call linear in the number of distinct paths."""

    def realpath(self, path: str) -> str:
        if "\0" in path:  # no file is named so (os.path.realpath raises): the rules block such a path
            return os.path.normpath(path)
        return os.path.realpath(path)

    def exists(self, path: str) -> bool:
        return "\0" not in path and os.path.exists(path)

    def is_dir(self, path: str) -> bool:
        return "\0" not in path and os.path.isdir(path)

    def home(self) -> str:
        return os.path.expanduser("~")


class CachingProbe:
    """Memoises a probe for the span of one message's assessment (its calls are judged against the
    same view of the disk, and the history fold resolves many of the same paths). Never kept across
    requests (the disk changes between turns)."""

    def __init__(self, inner: WorldProbe) -> None:
        self._inner = inner
        self._real: dict[str, str] = {}
        self._exists: dict[str, bool] = {}
        self._dir: dict[str, bool] = {}

    def realpath(self, path: str) -> str:
        if path not in self._real:
            self._real[path] = self._inner.realpath(path)
        return self._real[path]

    def exists(self, path: str) -> bool:
        if path not in self._exists:
            self._exists[path] = self._inner.exists(path)
        return self._exists[path]

    def is_dir(self, path: str) -> bool:
        if path not in self._dir:
            self._dir[path] = self._inner.is_dir(path)
        return self._dir[path]

    def home(self) -> str:
        return self._inner.home()
