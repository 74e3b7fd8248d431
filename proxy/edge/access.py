"""Who may use what is not a model call: one authorisation model for the ops routes.

- **Model routes** need a proxy token when any is configured: ``GUARDPROXY_AUTH_TOKEN`` or one of
  ``GUARDPROXY_CLIENT_TOKENS`` (``Exchange._authorized``).
- **Admin routes** (``/metrics``, ``/events``, the details of ``/readyz``) are never more open than
  the model routes: with no token configured at all they are as open as the model routes (a loopback
  listen; ``check_listen`` refuses anything else); as soon as any token is configured they need the
  admin token, ``GUARDPROXY_AUTH_TOKEN``. A client token is not an admin token: the feed names other
  clients' tool paths and hosts, the metrics their policies. With client tokens and no admin token
  the admin routes are closed to everyone.
- **Liveness** stays open: ``/healthz``, and ``/readyz``'s bare status (``{"status": ...}`` with 200
  or 503), so probes that cannot read a Secret still work.

A separate scrape credential (a metrics-only token or listener) would be one more entry in
``Access.may``: the routes ask for a capability (``"admin"``), not for a token.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Iterable
from typing import Literal

from config.settings import Settings, SettingsError

Capability = Literal["admin"]

ADMIN_ROUTES: dict[str, Capability] = {"/metrics": "admin", "/events": "admin", "/readyz": "admin"}
"""Ops routes and what reading them in full needs (``/readyz`` answers its bare status to anyone)."""


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_listen(settings: Settings) -> None:
    """Refuse a listen beyond loopback that would leave the proxy without any token (model routes and
    admin routes open to the network), unless the operator waived it explicitly."""
    if is_loopback(settings.host) or settings.auth_token or settings.client_tokens:
        return
    if settings.allow_unauthenticated_remote:
        return
    raise SettingsError(f"refusing to listen on {settings.host} without GUARDPROXY_AUTH_TOKEN (set it, or "
                        "GUARDPROXY_ALLOW_UNAUTHENTICATED_REMOTE=true to waive)")


class Access:
    """Decides the ops routes' access from the settings (read once)."""

    def __init__(self, settings: Settings) -> None:
        self._admin = settings.auth_token.encode() if settings.auth_token else None
        self._any_token = bool(settings.auth_token or settings.client_tokens)

    def may(self, capability: Capability, headers: Iterable[tuple[str, str]]) -> bool:
        """Whether the request with these (lower-cased) headers holds ``capability``. The token comes
        in ``x-guardproxy-token`` or, for Prometheus scrapers, ``Authorization: Bearer``."""
        if not self._any_token:
            return True  # as open as the model routes (a loopback listen, or the operator's waiver)
        if self._admin is None:
            return False
        given = [v for k, v in headers if k == "x-guardproxy-token"]
        given += [v[7:] for k, v in headers if k == "authorization" and v[:7].lower() == "bearer "]
        ok = False
        for value in given:  # every candidate compared (constant time each)
            ok |= hmac.compare_digest(value.encode("latin-1", "replace"), self._admin)
        return ok
