"""``guardproxy serve --workers N``: N uvicorn worker processes sharing one listening socket.

uvicorn's own supervisor starts the workers (spawned, so each imports everything afresh), restarts
one that dies and stops them all on SIGINT/SIGTERM, each worker draining its open streams for
``SHUTDOWN_GRACE_S``. Two things are ours:

- settings reach the workers through the environment (``GUARDPROXY_*``, the same variables a single
  process reads), so each worker builds exactly what ``Settings()`` says;
- metrics: ``PROMETHEUS_MULTIPROC_DIR`` is set before any worker starts (prometheus-client picks its
  multiprocess mode when first imported) to a fresh directory, or the operator's, emptied of stale
  files from an earlier run;
- SIGHUP reloads the policy in every worker (forwarded), instead of uvicorn's restart of all workers;
- the decision feed: a fresh directory where the workers meet to forward records to each other's
  ``/events`` subscribers (``feed_peers.py``), removed on exit;
- shared state: without ``GUARDPROXY_STATE_URL``, a fresh directory holding the SQLite file every
  worker's held prompts live in (``proxy.state.sqlite``), removed on exit.
"""

from __future__ import annotations

import math
import os
import shutil
import signal
import tempfile
from pathlib import Path
from typing import Any

import uvicorn
from uvicorn.supervisors import Multiprocess

from config.settings import Settings
from proxy.downstream.server_limits import LimitedHttpToolsProtocol
from proxy.ops.feed_peers import FEED_DIR_ENV


class _Supervisor(Multiprocess):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # SIGUSR1 (reopen the audit log after a rotation) goes to every worker; by default it would
        # end the supervisor
        signal.signal(signal.SIGUSR1, lambda _sig, _frame: self._forward(signal.SIGUSR1))

    def _forward(self, sig: signal.Signals) -> None:
        for worker in self.processes:
            if worker.pid is not None:
                os.kill(worker.pid, sig)

    def handle_hup(self) -> None:
        for worker in self.processes:
            if worker.pid is not None:
                os.kill(worker.pid, signal.SIGHUP)


def _metrics_dir(settings: Settings) -> tuple[str, bool]:
    """The shared metrics directory and whether we made it (then we remove it on exit)."""
    if settings.prometheus_multiproc_dir:
        path = Path(settings.prometheus_multiproc_dir)
        path.mkdir(parents=True, exist_ok=True)
        for stale in path.glob("*.db"):
            stale.unlink()
        return str(path), False
    return tempfile.mkdtemp(prefix="guardproxy-metrics-"), True


def run_workers(settings: Settings, overrides: dict[str, Any]) -> int:

    for key, value in overrides.items():
        os.environ[f"GUARDPROXY_{key.upper()}"] = str(value)
    metrics_dir, made = _metrics_dir(settings)
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = metrics_dir
    feed_dir = tempfile.mkdtemp(prefix="guardproxy-feed-")
    os.environ[FEED_DIR_ENV] = feed_dir
    state_dir = None
    if not settings.state_url:
        # The embedded store the workers share (``proxy.state.sqlite``): a fresh file, removed on exit.
        state_dir = tempfile.mkdtemp(prefix="guardproxy-state-")
        os.environ["GUARDPROXY_STATE_URL"] = f"sqlite://{state_dir}/state.db?synchronous=off"
    config = uvicorn.Config("proxy.edge.app:app_from_env", factory=True, workers=settings.workers,
                            **uvicorn_options(settings))
    sock = config.bind_socket()
    try:
        _Supervisor(config, sockets=[sock]).run()
    finally:
        sock.close()
        shutil.rmtree(feed_dir, ignore_errors=True)
        if state_dir is not None:
            shutil.rmtree(state_dir, ignore_errors=True)
            os.environ.pop("GUARDPROXY_STATE_URL", None)
        if made:
            shutil.rmtree(metrics_dir, ignore_errors=True)
    return 0


def uvicorn_options(settings: Settings) -> dict[str, Any]:
    return {"host": settings.host, "port": settings.port, "log_level": "warning", "access_log": False,
            # uvicorn takes whole seconds and reads 0 as "wait forever": round up, at least 1. Our own
            # drain (GuardProxy._drain) cancels the open exchanges at the exact grace, even below 1 s.
            "timeout_graceful_shutdown": max(1, math.ceil(settings.shutdown_grace_s)), "lifespan": "on",
            "ws": "none", "http": LimitedHttpToolsProtocol}
