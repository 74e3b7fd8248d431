"""Limits on what a client may make the proxy's HTTP server hold before it is authenticated.

uvicorn bounds none of these: a connection may stay silent forever, send its request head one byte a
second, or send a 64 MiB header (httptools joins a header's pieces as they arrive, so a long header
costs time quadratic in its length and stalls every other connection of the event loop). This
protocol is uvicorn's httptools protocol with, per connection:

- a **deadline for the request head** (``GUARDPROXY_HEAD_TIMEOUT_S``), from the connection's start
  (a silent connection) or from a request's first byte (a keep-alive connection between requests is
  uvicorn's ``timeout_keep_alive``): past it, 408 and the connection closed;
- a **cap on the head's size** (``GUARDPROXY_MAX_HEAD_BYTES``: request line and headers) checked
  between reads, so a head costs at most the cap plus one read: past it, 431 (414 when the request
  line alone is past it);
- a **cap on the number of header lines** (``GUARDPROXY_MAX_HEADERS``): past it, 431;
- a chunked body's **trailer** is a header section too, sent after the head's limits stopped
  counting: its fields count toward ``GUARDPROXY_MAX_HEADERS``, the bytes a body's reads carry without
  any body data (chunk framing, the trailer) are capped at ``GUARDPROXY_MAX_HEAD_BYTES`` (431), and its
  fields are never merged into the request's headers (RFC 9110 6.5.1; uvicorn appends them to the
  scope's header list, so they would reach the app, and the upstream, as request headers).

The body's limits (idle time between its chunks, its whole time, its size) are the app's
(``proxy.downstream.asgi.read_body``), after the token in the head was checked.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httptools
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

_REASONS = {408: b"Request Timeout", 414: b"URI Too Long", 431: b"Request Header Fields Too Large"}


class _Refuse(Exception):
    def __init__(self, status: int, message: str) -> None:
        self.status, self.message = status, message


class HeadLimits:
    """The settings this protocol reads (set once per process by ``set_limits``)."""

    def __init__(self, max_head_bytes: int, max_headers: int, head_timeout_s: float) -> None:
        self.max_head_bytes, self.max_headers, self.head_timeout_s = max_head_bytes, max_headers, head_timeout_s


class LimitedHttpToolsProtocol(HttpToolsProtocol):
    limits = HeadLimits(64 * 1024, 100, 10.0)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_bytes = 0
        self._header_count = 0
        self._in_head = True
        """Between requests or inside a head (not inside a body or a response)."""
        self._head_timer: asyncio.TimerHandle | None = None
        self._refused = False
        self._bodiless = 0
        """Bytes read inside a body without any body data (chunk framing, a trailer)."""
        self._got_body = False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_head_timer()  # a connection that never sends a byte is closed too

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_head_timer()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return
        if self._in_head:
            if self._head_timer is None:
                self._arm_head_timer()
            self._head_bytes += len(data)
        self._unset_keepalive_if_required()
        self._got_body = False
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserCallbackError as exc:
            if isinstance(exc.__context__, _Refuse):
                self._refuse(exc.__context__.status, exc.__context__.message)
                return
            self._bad_request()
            return
        except httptools.HttpParserError:
            self._bad_request()
            return
        except httptools.HttpParserUpgrade:
            if self._should_upgrade():
                self.handle_websocket_upgrade()
            else:
                self._unsupported_upgrade_warning()
            return
        if not self._in_head:
            self._bodiless = 0 if self._got_body else self._bodiless + len(data)
            if self._bodiless > self.limits.max_head_bytes:
                self._refuse(431, f"the request's chunk framing or trailer exceeds {self.limits.max_head_bytes} "
                                  "bytes (GUARDPROXY_MAX_HEAD_BYTES)")
                return
        if self._in_head and self._head_bytes > self.limits.max_head_bytes:
            # (checked after the read: a read that also completed the head and began the body is
            # not held against it)
            status = 414 if not getattr(self, "headers", None) and self._header_count == 0 else 431
            self._refuse(status, f"the request head exceeds {self.limits.max_head_bytes} bytes "
                                 "(GUARDPROXY_MAX_HEAD_BYTES)")

    def _bad_request(self) -> None:
        msg = "Invalid HTTP request received."
        self.logger.warning(msg)
        self.send_400_response(msg)

    # parser callbacks
    def on_message_begin(self) -> None:
        self._in_head = True
        self._header_count = 0
        if self._head_timer is None:  # a pipelined request's head, begun while an answer was going out
            self._arm_head_timer()
        super().on_message_begin()

    def on_url(self, url: bytes) -> None:
        if len(self.url) + len(url) > self.limits.max_head_bytes:
            raise _Refuse(414, f"the request target exceeds {self.limits.max_head_bytes} bytes "
                               "(GUARDPROXY_MAX_HEAD_BYTES)")
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._header_count += 1
        if self._header_count > self.limits.max_headers:
            raise _Refuse(431, f"the request has more than {self.limits.max_headers} header lines "
                               "(GUARDPROXY_MAX_HEADERS)")
        if self._in_head:  # a trailer's field (after the body) is not a request header
            super().on_header(name, value)

    def on_body(self, body: bytes) -> None:
        self._got_body = True
        super().on_body(body)

    def on_headers_complete(self) -> None:
        self._in_head = False
        self._head_bytes = self._bodiless = 0
        self._cancel_head_timer()
        super().on_headers_complete()

    def on_response_complete(self) -> None:
        self._in_head = True  # the next request's head (its timer starts at its first byte)
        self._head_bytes = 0
        super().on_response_complete()

    # the head's deadline
    def _arm_head_timer(self) -> None:
        self._cancel_head_timer()
        self._head_timer = self.loop.call_later(self.limits.head_timeout_s, self._head_timed_out)

    def _cancel_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if not self._in_head or self._refused:
            return
        if self.cycle is not None and not self.cycle.response_complete:
            self._arm_head_timer()  # an answer is still going out: the 408 waits until it is done
            return
        self._refuse(408, f"the request head did not arrive within {self.limits.head_timeout_s:g} s "
                          "(GUARDPROXY_HEAD_TIMEOUT_S)")

    def _refuse(self, status: int, message: str) -> None:
        self._refused = True
        self._cancel_head_timer()
        if self.transport.is_closing():
            return
        body = json.dumps({"error": {"message": message, "type": "invalid_request_error"}}).encode()
        self.transport.write(b"HTTP/1.1 %d %s\r\ncontent-type: application/json\r\ncontent-length: %d\r\n"
                             b"connection: close\r\n\r\n%s" % (status, _REASONS[status], len(body), body))
        self.transport.close()


def set_limits(max_head_bytes: int, max_headers: int, head_timeout_s: float) -> None:
    """The limits every connection of this process gets (``create_app`` sets them from the settings;
    each worker of ``serve --workers N`` builds its own app, so each sets its own)."""
    LimitedHttpToolsProtocol.limits = HeadLimits(max_head_bytes, max_headers, head_timeout_s)
