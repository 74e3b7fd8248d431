"""Live policy reload: on SIGHUP and when a policy file, or a file it references, changes.

Reload is all or nothing (``PolicyBook.reload``): every named policy is re-read, validated and
built; only then are they swapped in, in one assignment. Requests already running keep the policy
they started with (they hold their ``Guard``). A reload cannot weaken the proxy by accident:

- **complete files only**: after a change the watcher waits until the watched files have stopped
  changing (size, time and inode the same over ``SETTLE_S``), then reads them (an editor's
  truncate-then-write, a config tool writing in pieces);
- **no silent disarming**: an empty file, or a file without guardrails the running policy has (a
  half-written file, a lost section), is refused unless it names them in ``disarms = [...]``
  (``PolicyBook.reload``, ``check_disarms``); a file that does not load is refused as before;
- **every file that counts is watched**: the policy files and the files they reference
  (``rules_file``, ``prompt_file``), whose contents are part of the policy's version;
- **ConfigMaps**: the folders are watched by the names the settings give (not resolved), and a swap of
  the ``..data`` symlink (Kubernetes' atomic update) is a change of every file in the folder: the
  first swap deletes the folder a resolved name pointed into, and the watcher would see no later one;
- **only those files**: changes to anything else in the folders (an audit or proxy log written next
  to the policy) are ignored, so the proxy's own outputs never trigger a reload.

A refused reload leaves the last good policies live, and is logged and counted
(``guardproxy_policy_reloads_total{outcome="refused"|"error"}``,
``guardproxy_policy_last_reload_refused{reason}``); ``/readyz`` and ``guardproxy_policy_live`` show the
live versions, ``/readyz`` the last reload's outcome and why it was refused.
"""

from __future__ import annotations

import asyncio
import signal
import time
from functools import partial
from pathlib import Path

import structlog
from watchfiles import awatch

from config.policy import PolicyError
from proxy.drive.policies import PolicyRefused
from proxy.drive.services import Services

log = structlog.get_logger("guardproxy")


SETTLE_S = 0.2
"""A change is read once the watched files have looked the same for this long."""
SETTLE_MAX_S = 10.0
_REASONS = ("invalid", "empty", "disarms")


class Reloader:
    def __init__(self, services: Services) -> None:
        self.s = services
        self.last_error: str | None = None
        self.last_outcome: str | None = None
        """ok, unchanged, error or refused (None: no reload yet)."""
        self.last_reload_at: float | None = None
        self._watcher: asyncio.Task[None] | None = None
        self._show_live()

    def reload(self, trigger: str) -> bool:
        """Returns whether the live policies changed."""
        metrics = self.s.metrics
        try:
            changed = self.s.book.reload()
        except PolicyError as exc:
            refused = isinstance(exc, PolicyRefused)
            reason = ("empty" if "is empty" in str(exc) else "disarms") if refused else "invalid"
            self.last_error, self.last_outcome = str(exc), "refused" if refused else "error"
            metrics.policy_reloads.labels(outcome=self.last_outcome).inc()
            for r in _REASONS:
                metrics.policy_reload_refused.labels(reason=r).set(1 if r == reason else 0)
            log.error("policy_reload_refused" if refused else "policy_reload_failed", trigger=trigger,
                      error=str(exc), kept=self.s.book.versions)
            return False
        self.last_error, self.last_outcome = None, "ok" if changed else "unchanged"
        self.last_reload_at = time.time()
        self.s.guard = self.s.book.default
        metrics.policy_reloads.labels(outcome=self.last_outcome).inc()
        for r in _REASONS:
            metrics.policy_reload_refused.labels(reason=r).set(0)
        if changed:
            self._show_live()
        log.info("policy_reloaded" if changed else "policy_unchanged", trigger=trigger, versions=self.s.book.versions)
        return changed

    def _show_live(self) -> None:
        gauge = self.s.metrics.policy_live
        gauge.clear()
        for name, version in self.s.book.versions.items():
            gauge.labels(policy=name, version=version).set(1)

    def start(self) -> None:
        """Install the SIGHUP handler (main thread only: a server run in a thread has none) and start
        the file watcher when there are files to watch."""
        loop = asyncio.get_running_loop()
        try:
            loop.add_signal_handler(signal.SIGHUP, self.reload, "sighup")
        except (ValueError, RuntimeError, NotImplementedError):
            log.debug("sighup_reload_unavailable")
        if self.s.settings.watch_policy and self.s.book.watched_files:
            self._watcher = asyncio.ensure_future(self._watch())

    async def _watch(self) -> None:
        """Watch until stopped; the set of files is re-read after each reload (a policy that names
        another rules file has that one watched from then on)."""
        while True:
            files = self.s.book.watched_files
            dirs = sorted({str(p.parent) for p in files if p.parent.is_dir()})
            if not dirs:
                return
            wanted = {(str(p.parent), p.name) for p in files}
            try:
                async for changes in awatch(*dirs, debounce=300, step=50, recursive=False,
                                            watch_filter=partial(_counts, wanted=wanted)):
                    del changes
                    await self._settled()
                    self.reload("file_change")
                    if self.s.book.watched_files != files:
                        break  # watch the new set
                else:
                    return
            except Exception as exc:  # noqa: BLE001 - a dead watcher must not take the proxy with it
                log.error("policy_watch_stopped", error=type(exc).__name__, dirs=[Path(d).name for d in dirs])
                return

    async def _settled(self) -> None:
        """Wait until the watched files look the same over ``SETTLE_S`` (bounded)."""
        loop = asyncio.get_running_loop()
        end = loop.time() + SETTLE_MAX_S
        before = _signature(self.s.book.watched_files)
        while loop.time() < end:
            await asyncio.sleep(SETTLE_S)
            now = _signature(self.s.book.watched_files)
            if now == before:
                return
            before = now

    async def stop(self) -> None:
        try:
            asyncio.get_running_loop().remove_signal_handler(signal.SIGHUP)
        except (ValueError, RuntimeError, NotImplementedError):
            pass
        if self._watcher is not None:
            self._watcher.cancel()
            await asyncio.gather(self._watcher, return_exceptions=True)


def _counts(_change: object, path: str, *, wanted: set[tuple[str, str]]) -> bool:
    """A change that may change a policy: a watched file by its name in its folder, or a ConfigMap's
    ``..data`` swap (``..``-names) in one of the folders. Anything else (a log written beside the
    policy) is not."""
    p = Path(path)
    parent = str(p.parent)
    return (parent, p.name) in wanted or (p.name.startswith("..") and any(d == parent for d, _ in wanted))


def _signature(files: list[Path]) -> list[tuple[int, int, int] | None]:
    out: list[tuple[int, int, int] | None] = []
    for f in files:
        try:
            st = f.stat()
        except OSError:
            out.append(None)
            continue
        out.append((st.st_size, st.st_mtime_ns, st.st_ino))
    return out
