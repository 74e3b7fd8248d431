"""Undo an upstream's ``content-encoding`` before the guard reads the body.

Guarded requests ask for ``accept-encoding: identity``, but an upstream (or a gateway in front of
it) may compress anyway. Checking compressed bytes checks nothing, and relaying them lets the client
decompress text the guard never saw: so the body is decoded here, incrementally (O(bytes), one
``zlib`` object per coding), and the driver only ever sees plain bytes. A coding the proxy cannot
undo (``br``, ``zstd``, unknown names) or a truncated or corrupt compressed stream ends the answer
with the API's error (fail closed): the proxy asked for identity and will not guess.
"""

from __future__ import annotations

import zlib

from config.errors import UpstreamFailure

_ZLIB_WBITS = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}


class ContentCodingError(UpstreamFailure):
    """The body's content-encoding cannot be undone (unknown coding, corrupt or truncated data)."""


class _Inflate:
    """One gzip or deflate layer. HTTP's ``deflate`` is zlib-wrapped, but some servers send raw
    deflate: the first bytes decide (as curl and browsers do)."""

    def __init__(self, coding: str) -> None:
        self._coding = coding
        self._obj: zlib._Decompress | None = None
        self._pending = b""

    def feed(self, data: bytes) -> bytes:
        if self._obj is None:
            self._pending += data
            if len(self._pending) < 2:
                return b""
            data, self._pending = self._pending, b""
            wbits = _ZLIB_WBITS[self._coding]
            if self._coding == "deflate" and (data[0] & 0x0F != 8 or (data[0] << 8 | data[1]) % 31):
                wbits = -zlib.MAX_WBITS  # no zlib header: raw deflate
            self._obj = zlib.decompressobj(wbits)
        try:
            out = self._obj.decompress(data)
        except zlib.error as exc:
            raise ContentCodingError(f"the upstream's {self._coding} body is corrupt") from exc
        if self._obj.unused_data:
            raise ContentCodingError(f"the upstream's {self._coding} body has bytes after its end")
        return out

    def finish(self) -> bytes:
        if self._obj is None:
            if self._pending:
                raise ContentCodingError(f"the upstream's {self._coding} body is truncated")
            return b""
        out = self._obj.flush()
        if not self._obj.eof:
            raise ContentCodingError(f"the upstream's {self._coding} body is truncated")
        return out


class ContentDecoder:
    """All layers of one response's ``content-encoding`` (applied in reverse order of listing)."""

    def __init__(self, header: str) -> None:
        codings = [c.strip().lower() for c in header.split(",") if c.strip()]
        unknown = [c for c in codings if c != "identity" and c not in _ZLIB_WBITS]
        if unknown:
            raise ContentCodingError(f"the upstream sent content-encoding {', '.join(unknown)} "
                                     "although guardproxy asked for identity")
        self._layers = [_Inflate(c) for c in reversed(codings) if c != "identity"]

    @property
    def active(self) -> bool:
        return bool(self._layers)

    def feed(self, data: bytes) -> bytes:
        for layer in self._layers:
            data = layer.feed(data)
        return data

    def finish(self) -> bytes:
        out = b""
        for layer in self._layers:
            out = layer.feed(out) + layer.finish() if out else layer.finish()
        return out
