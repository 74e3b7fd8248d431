"""Live policy reload: on SIGHUP and when a policy file changes (``watchfiles``).

Reload is all or nothing (``PolicyBook.reload``): every named policy is re-read, validated and
built; only then are they swapped in, in one assignment. A bad file leaves the last good policies
live, and is logged and counted (``guardproxy_policy_reloads_total{outcome="error"}``); ``/readyz``
shows the live versions and the last error. Requests already running keep the policy they started
with (they hold their ``Guard``).

The watcher watches the folders holding the policy files, not the files: editors replace files by
renaming, and a Kubernetes ConfigMap volume swaps a ``..data`` symlink, so the file's own inode
never changes. Any change in such a folder triggers a reload; an unchanged policy is a no-op.
"""

from __future__ import annotations

import asyncio
import signal
import time
from pathlib import Path

import structlog
from watchfiles import awatch

from config.policy import PolicyError
from proxy.drive.services import Services

log = structlog.get_logger("guardproxy")


class Reloader:
    def __init__(self, services: Services) -> None:
        self.s = services
        self.last_error: str | None = None
        self.last_reload_at: float | None = None
        self._watcher: asyncio.Task[None] | None = None

    def reload(self, trigger: str) -> bool:
        """Returns whether the live policies changed."""
        try:
            changed = self.s.book.reload()
        except PolicyError as exc:
            self.last_error = str(exc)
            self.s.metrics.policy_reloads.labels(outcome="error").inc()
            log.error("policy_reload_failed", trigger=trigger, error=str(exc),
                      kept={n: g.version for n, g in self.s.book.guards.items()})
            return False
        self.last_error = None
        self.last_reload_at = time.time()
        self.s.guard = self.s.book.default
        self.s.metrics.policy_reloads.labels(outcome="ok" if changed else "unchanged").inc()
        log.info("policy_reloaded" if changed else "policy_unchanged", trigger=trigger,
                 versions={n: g.version for n, g in self.s.book.guards.items()})
        return changed

    def start(self) -> None:
        """Install the SIGHUP handler (main thread only: a server run in a thread has none) and start
        the file watcher when there are files to watch."""
        loop = asyncio.get_running_loop()
        try:
            loop.add_signal_handler(signal.SIGHUP, self.reload, "sighup")
        except (ValueError, RuntimeError, NotImplementedError):
            log.debug("sighup_reload_unavailable")
        dirs = sorted({str(p.parent) for p in self.s.book.watched_files})
        if self.s.settings.watch_policy and dirs:
            self._watcher = asyncio.ensure_future(self._watch(dirs))

    async def _watch(self, dirs: list[str]) -> None:
        try:
            async for _changes in awatch(*dirs, debounce=300, step=50, recursive=False):
                self.reload("file_change")
        except Exception as exc:  # noqa: BLE001 - a dead watcher must not take the proxy with it
            log.error("policy_watch_stopped", error=type(exc).__name__, dirs=[Path(d).name for d in dirs])

    async def stop(self) -> None:
        try:
            asyncio.get_running_loop().remove_signal_handler(signal.SIGHUP)
        except (ValueError, RuntimeError, NotImplementedError):
            pass
        if self._watcher is not None:
            self._watcher.cancel()
            await asyncio.gather(self._watcher, return_exceptions=True)
