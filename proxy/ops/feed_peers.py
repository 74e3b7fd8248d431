"""The decision feed across the worker processes of ``guardproxy serve --workers N``.

Each worker has its own audit listeners, so on its own a feed subscriber would see only the
decisions of the worker its connection landed on. The workers share a directory (made by the
supervisor, passed in ``FEED_DIR_ENV``). A worker with at least one local subscriber binds a Unix
datagram socket there named after its pid; every worker sends each record it publishes to the sockets
it finds there (the listing is re-read at most once a second), so a worker nobody follows pays one
cached directory look per record and nothing more.

Sending never waits: a full socket buffer drops the record for that peer (counted like a slow local
subscriber), and a socket left by a worker that died is skipped when a send to it is refused (the
supervisor removes the directory on exit). A subscriber may miss the first second of another worker's records (the listing's age); the audit log
file holds them all.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import time
from collections.abc import Callable
from pathlib import Path

FEED_DIR_ENV = "GUARDPROXY_INTERNAL_FEED_DIR"
_RELIST_S = 1.0
_MAX_DATAGRAM = 60_000
"""A record larger than this is not forwarded (records hold ids and codes, a few hundred bytes)."""

Deliver = Callable[[dict[str, object]], None]


class FeedPeers:
    def __init__(self, directory: str, on_drop: Callable[[], None]) -> None:
        self._dir = Path(directory)
        self._own = str(self._dir / f"{os.getpid()}.sock")
        self._on_drop = on_drop
        self._out = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self._out.setblocking(False)
        self._peers: list[str] = []
        self._listed_at = -_RELIST_S
        self._in: socket.socket | None = None

    def send(self, record: dict[str, object]) -> None:
        """Forward ``record`` to every worker that has a subscriber (not to this one)."""
        now = time.monotonic()
        if now - self._listed_at >= _RELIST_S:
            self._peers = self._list()
            self._listed_at = now
        if not self._peers:
            return
        data = json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode()
        if len(data) > _MAX_DATAGRAM:
            self._on_drop()
            return
        for peer in self._peers:
            try:
                self._out.sendto(data, peer)
            except BlockingIOError:
                self._on_drop()
            except (ConnectionRefusedError, FileNotFoundError):
                self._peers = [p for p in self._peers if p != peer]
            except OSError:
                self._on_drop()

    def listen(self, deliver: Deliver) -> None:
        """Receive the other workers' records (while this worker has subscribers)."""
        if self._in is not None:
            return
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        sock.setblocking(False)
        Path(self._own).unlink(missing_ok=True)
        sock.bind(self._own)
        self._in = sock
        asyncio.get_running_loop().add_reader(sock.fileno(), self._receive, sock, deliver)

    def unlisten(self) -> None:
        sock, self._in = self._in, None
        if sock is None:
            return
        asyncio.get_running_loop().remove_reader(sock.fileno())
        Path(self._own).unlink(missing_ok=True)
        sock.close()

    def close(self) -> None:
        if self._in is not None:
            self.unlisten()
        self._out.close()

    def _receive(self, sock: socket.socket, deliver: Deliver) -> None:
        while True:
            try:
                data = sock.recv(_MAX_DATAGRAM + 1)
            except (BlockingIOError, OSError):
                return
            try:
                record = json.loads(data)
            except ValueError:
                continue
            if isinstance(record, dict):
                deliver(record)

    def _list(self) -> list[str]:
        try:
            return [str(p) for p in self._dir.glob("*.sock") if str(p) != self._own]
        except OSError:
            return []
