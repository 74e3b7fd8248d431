"""The one exception tree: every error guardproxy raises on purpose derives from ``GuardproxyError``,
grouped by whose fault it is (the answer a client gets follows from the group):

- ``ConfigError``: the operator's settings or policy (refused at start, with the field named);
- ``ClientError``: the client's request (a 4xx in the client's API format);
- ``UpstreamFailure``: the provider could not be reached or sent what cannot be read (502/504);
- ``CheckFailure``: a message check could not decide (fail open, or the operator's choice);
- ``ClientGone``: the client left (nothing more is sent).

It lives in ``config/``, the bottom layer, so that ``guardrails/`` and ``proxy/`` can both use it.
"""

from __future__ import annotations


class GuardproxyError(Exception):
    """Every error guardproxy raises on purpose."""


class ConfigError(GuardproxyError):
    """A setting or the policy is wrong."""


class ClientError(GuardproxyError):
    """The client's request cannot be served as sent."""


class UpstreamFailure(GuardproxyError):
    """The upstream failed: unreachable, stalled, broke, or sent what cannot be read."""


class CheckFailure(GuardproxyError):
    """A message check could not reach a verdict."""


class ClientGone(GuardproxyError):
    """The client disconnected."""


class UpstreamError(UpstreamFailure):
    """The upstream could not be reached, stalled, or sent what cannot be read. ``timeout`` tells a
    504 from a 502; ``reason`` (a bounded set of words) labels the fail-closed metric."""

    def __init__(self, message: str, *, timeout: bool, reason: str = "") -> None:
        super().__init__(message)
        self.timeout = timeout
        self.reason = reason or ("stalled" if timeout else "broke")
