"""The embedded shared engine: SQLite in WAL mode, one file that every ``serve --workers N`` process
opens (``proxy.commands.workers`` puts it in a fresh runtime folder; ``GUARDPROXY_STATE_URL=sqlite:///path``
names one that outlives restarts).

Why SQLite: it ships with Python, WAL lets readers run beside the one writer, and a transaction
(``BEGIN IMMEDIATE``) makes a put with its budget accounting and evictions atomic across processes,
which a file of our own could not without re-writing a database.

Every call runs in one thread of the store's own (a put's transaction can wait on another worker's
lock: ``busy_timeout`` bounds that wait, and the event loop never does). Reads mark an entry used
at most once every ``TOUCH_S`` (a read is then a plain ``SELECT``, no write lock). Expired entries are
never answered, and a put first deletes up to ``SWEEP_ROWS`` of them. Times are wall-clock seconds
(the processes share no monotonic clock).
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import stat
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import ParamSpec, TypeVar

import msgspec

from proxy.state.base import Budgets, Members, StoreUnavailable, entry_size

TOUCH_S = 10.0
"""A read refreshes an entry's use time only when it is older than this: the LRU order is exact to
about this much, and a hot key costs no write per read."""
SWEEP_ROWS = 64
"""Expired entries deleted per put, at most (indexed by expiry)."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (scope TEXT NOT NULL, key TEXT NOT NULL, members BLOB NOT NULL,
    size INTEGER NOT NULL, expires REAL NOT NULL, used REAL NOT NULL, PRIMARY KEY (scope, key)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS entries_by_use ON entries (scope, used);
CREATE INDEX IF NOT EXISTS entries_by_expiry ON entries (expires);
CREATE TABLE IF NOT EXISTS scopes (scope TEXT PRIMARY KEY, bytes INTEGER NOT NULL) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS scopes_by_size ON scopes (bytes);
"""

_Encoded = list[tuple[bytes, bytes]]
_encode = msgspec.msgpack.Encoder().encode
_decode = msgspec.msgpack.Decoder(_Encoded).decode

P = ParamSpec("P")
T = TypeVar("T")


class SqliteStore:
    engine = "sqlite"
    shared = True
    waits = True

    def __init__(self, path: str, budgets: Budgets, busy_timeout_s: float = 0.05,
                 clock: Callable[[], float] = time.time, durable: bool = True) -> None:
        """``durable`` False: no fsync at all (``synchronous = OFF``), for a file removed at exit anyway
        (the workers' runtime folder): a WAL checkpoint's fsync took a put's p99 from 1.3 to 6.5 ms
        (``bench/state_cost.py``)."""
        self.path, self.budgets, self._clock, self._durable = path, budgets, clock, durable
        self._busy_ms = max(1, int(busy_timeout_s * 1000))
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="guardproxy-state")
        self._db: sqlite3.Connection | None = None

    # ------------------------------------------------------------------ the async face
    async def get(self, scope: str, key: str) -> list[bytes] | None:
        return await self._run(self._get, scope, key)

    async def put(self, scope: str, key: str, members: Members, ttl_s: float, *, join: bool = False) -> bool:
        return await self._run(self._put, scope, key, dict(members), ttl_s, join)

    async def delete(self, scope: str, key: str) -> None:
        await self._run(self._delete, scope, key)

    async def close(self) -> None:
        def shut() -> None:
            if self._db is not None:
                self._db.close()
                self._db = None
        await asyncio.get_running_loop().run_in_executor(self._pool, shut)
        self._pool.shutdown(wait=False)

    async def _run(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        def call() -> T:
            try:
                return fn(*args, **kwargs)
            except sqlite3.Error as exc:
                if self._db is not None and self._db.in_transaction:
                    self._db.rollback()
                raise StoreUnavailable(f"sqlite: {type(exc).__name__}: {exc}") from None
        return await asyncio.get_running_loop().run_in_executor(self._pool, call)

    # ------------------------------------------------------------------ in the store's thread
    def _conn(self) -> sqlite3.Connection:
        if self._db is None:
            Path(self.path).parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            self._check_files()
            old = os.umask(0o077)  # the file holds system prompts: its owner's alone
            try:
                db = sqlite3.connect(self.path, timeout=self._busy_ms / 1000, isolation_level=None,
                                     check_same_thread=False)
            finally:
                os.umask(old)
            try:
                self._check_files()  # (and again once open: nothing swapped in between the two)
            except StoreUnavailable:
                db.close()
                raise
            db.execute(f"PRAGMA busy_timeout = {self._busy_ms}")
            db.execute("PRAGMA journal_mode = WAL")
            # (what a power cut loses is a miss, by policy; a file kept across restarts stays consistent)
            db.execute("PRAGMA synchronous = NORMAL" if self._durable else "PRAGMA synchronous = OFF")
            db.executescript(_SCHEMA)
            self._db = db
        return self._db

    def _check_files(self) -> None:
        """The database and its WAL files, where they exist, are plain files of this process's user
        that nobody else can read or write: a symlink or a file planted in a folder others can write
        to (``sqlite:///tmp/...``) would hand the system prompts to whoever planted it. Raises
        ``StoreUnavailable`` naming the cause (never a value)."""
        for path in (self.path, self.path + "-wal", self.path + "-shm"):
            try:
                st = os.lstat(path)
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise StoreUnavailable(f"sqlite: cannot check {path}: {type(exc).__name__}") from None
            if stat.S_ISLNK(st.st_mode):
                raise StoreUnavailable(f"sqlite: {path} is a symlink: refused (name a plain file)")
            if not stat.S_ISREG(st.st_mode):
                raise StoreUnavailable(f"sqlite: {path} is not a plain file: refused")
            if st.st_uid != os.geteuid():
                raise StoreUnavailable(f"sqlite: {path} belongs to another user: refused")
            if st.st_mode & 0o077:
                raise StoreUnavailable(f"sqlite: {path} is open to others (mode {stat.S_IMODE(st.st_mode):o}): "
                                       "refused (chmod 600 it)")

    def _get(self, scope: str, key: str) -> list[bytes] | None:
        db = self._conn()
        row = db.execute("SELECT members, expires, used FROM entries WHERE scope = ? AND key = ?",
                         (scope, key)).fetchone()
        if row is None:
            return None
        now = self._clock()
        if row[1] <= now:
            return None
        if now - row[2] > TOUCH_S:
            db.execute("UPDATE entries SET used = ? WHERE scope = ? AND key = ?", (now, scope, key))
        return [v for _, v in _decode(row[0])]

    def _put(self, scope: str, key: str, members: dict[bytes, bytes], ttl_s: float, join: bool) -> bool:
        db = self._conn()
        now = self._clock()
        db.execute("BEGIN IMMEDIATE")
        try:
            for s, k, size in db.execute("SELECT scope, key, size FROM entries WHERE expires <= ? LIMIT ?",
                                         (now, SWEEP_ROWS)).fetchall():
                self._drop(db, s, k, size)
            row = db.execute("SELECT members, size, expires FROM entries WHERE scope = ? AND key = ?",
                             (scope, key)).fetchone()
            merged: dict[bytes, bytes] = {}
            if row is not None:
                if join and row[2] > now:
                    merged = dict(_decode(row[0]))
                self._drop(db, scope, key, row[1])
            for i, v in members.items():
                merged.setdefault(i, v)
            size = entry_size(key, merged)
            kept = size <= self.budgets.scope_bytes and size <= self.budgets.total_bytes
            if kept:
                db.execute("INSERT INTO entries VALUES (?, ?, ?, ?, ?, ?)",
                           (scope, key, _encode(list(merged.items())), size, now + ttl_s, now))
                db.execute("INSERT INTO scopes VALUES (?, ?) ON CONFLICT (scope) DO UPDATE SET bytes = bytes + ?",
                           (scope, size, size))
                self._evict(db, scope, key)
            db.execute("COMMIT")
            return kept
        except BaseException:
            db.rollback()
            raise

    def _evict(self, db: sqlite3.Connection, scope: str, key: str) -> None:
        """The scope back within its budget (its own least recently used out), then the store within
        the global one (the largest scope's least recently used out); never ``key``, just put (it fits
        both budgets alone, and uses within one clock tick tie)."""
        while True:
            (used,) = db.execute("SELECT bytes FROM scopes WHERE scope = ?", (scope,)).fetchone() or (0,)
            if used <= self.budgets.scope_bytes:
                break
            self._drop_oldest(db, scope, key)
        while db.execute("SELECT total(bytes) FROM scopes").fetchone()[0] > self.budgets.total_bytes:
            s, k, size = db.execute(
                "SELECT e.scope, e.key, e.size FROM entries e JOIN scopes USING (scope) "
                "WHERE NOT (e.scope = ? AND e.key = ?) ORDER BY scopes.bytes DESC, e.used LIMIT 1",
                (scope, key)).fetchone()
            self._drop(db, s, k, size)

    def _drop_oldest(self, db: sqlite3.Connection, scope: str, spare: str | None) -> None:
        k, size = db.execute("SELECT key, size FROM entries WHERE scope = ? AND key IS NOT ? ORDER BY used LIMIT 1",
                             (scope, spare)).fetchone()
        self._drop(db, scope, k, size)

    @staticmethod
    def _drop(db: sqlite3.Connection, scope: str, key: str, size: int) -> None:
        db.execute("DELETE FROM entries WHERE scope = ? AND key = ?", (scope, key))
        db.execute("UPDATE scopes SET bytes = bytes - ? WHERE scope = ?", (size, scope))
        db.execute("DELETE FROM scopes WHERE scope = ? AND bytes <= 0", (scope,))

    def _delete(self, scope: str, key: str) -> None:
        db = self._conn()
        db.execute("BEGIN IMMEDIATE")
        try:
            row = db.execute("SELECT size FROM entries WHERE scope = ? AND key = ?", (scope, key)).fetchone()
            if row is not None:
                self._drop(db, scope, key, row[0])
            db.execute("COMMIT")
        except BaseException:
            db.rollback()
            raise

    def used(self, scope: str) -> int:
        """Bytes ``scope`` holds (tests and the benchmark; blocking)."""
        row = self._conn().execute("SELECT bytes FROM scopes WHERE scope = ?", (scope,)).fetchone()
        return int(row[0]) if row else 0
