"""Shared state: what a guard decision depends on beyond the request, kept where every process that
may serve the next request finds it (``GUARDPROXY_STATE_URL``).

- unset, one process: ``MemoryStore`` (``proxy.state.memory``);
- unset, ``serve --workers N``: ``SqliteStore`` on a file in a runtime folder the supervisor makes
  (``proxy.commands.workers``); ``sqlite:///path`` names the file;
- ``redis://``, ``rediss://``, ``valkey://`` (``valkeys://``): ``ValkeyStore``, for replicas.

The interface is ``proxy.state.base.Store``; what uses it: ``proxy.drive.held_prompts``.
"""

from __future__ import annotations

from urllib.parse import unquote, urlsplit

from config.settings import Settings
from proxy.state.base import Budgets, Store, StoreUnavailable
from proxy.state.memory import MemoryStore
from proxy.state.seal import Sealer, parse_key
from proxy.state.sqlite import SqliteStore

__all__ = ["Budgets", "Store", "StoreUnavailable", "open_store", "sealer_for"]

VALKEY_SCHEMES = ("redis", "rediss", "valkey", "valkeys")


def budgets_of(settings: Settings) -> Budgets:
    return Budgets(scope_bytes=min(settings.held_prompts_scope_bytes, settings.held_prompts_bytes),
                   total_bytes=settings.held_prompts_bytes)


def open_store(settings: Settings) -> Store:
    """The engine ``settings.state_url`` names (validated by ``Settings``); nothing connects yet."""
    url = settings.state_url
    budgets = budgets_of(settings)
    if not url:
        return MemoryStore(budgets)
    parts = urlsplit(url)
    if parts.scheme == "sqlite":
        durable = "synchronous=off" not in parts.query.lower()  # (the workers' runtime file: removed at exit)
        return SqliteStore(unquote(parts.path), budgets, busy_timeout_s=settings.state_timeout_s, durable=durable)
    from proxy.state.valkey import ValkeyStore  # (redis-py is imported only when used)
    return ValkeyStore(url, budgets, timeout_s=settings.state_timeout_s)


def sealer_for(settings: Settings, store: Store) -> Sealer:
    key = settings.state_key.get_secret_value() if settings.state_key is not None else None
    return Sealer(parse_key(key) if key else None, seal=store.shared)
