"""Undo an upstream's ``content-encoding`` before the guard reads the body.

Guarded requests ask for ``accept-encoding: identity``, but an upstream (or a gateway in front of
it) may compress anyway. Checking compressed bytes checks nothing, and relaying them lets the client
decompress text the guard never saw: so the body is decoded here, incrementally (O(bytes), one
``zlib`` object per coding), and the driver only ever sees plain bytes. A coding the proxy cannot
undo (``br``, ``zstd``, unknown names) or a truncated or corrupt compressed stream ends the answer
with the API's error (fail closed): the proxy asked for identity and will not guess.

Decoding is bounded, so a compression bomb costs at most its cap: at most one coding layer (``gzip,
gzip`` is refused: no server stacks codings on a JSON answer, and each layer multiplies the
expansion); every ``zlib`` call is given the most it may produce, the smaller of what is left of
``GUARDPROXY_MAX_RESPONSE_BYTES`` (the decoded answer would be refused past it anyway) and
``GUARDPROXY_MAX_DECODED_RATIO`` times the compressed bytes read so far (after a first
``RATIO_SLACK`` bytes that may expand freely). Past either, the answer fails closed.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

from config.errors import UpstreamFailure

_ZLIB_WBITS = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}


RATIO_SLACK = 1024 * 1024
"""Decoded bytes allowed before the expansion ratio applies (a small answer compresses well)."""


class ContentCodingError(UpstreamFailure):
    """The body's content-encoding cannot be undone (unknown coding, corrupt or truncated data)."""


@dataclass(frozen=True, slots=True)
class DecodeBounds:
    most: int = 64 * 1024 * 1024
    """Decoded bytes in all (``GUARDPROXY_MAX_RESPONSE_BYTES``)."""
    ratio: int = 100
    """Decoded bytes per compressed byte, past ``RATIO_SLACK`` (``GUARDPROXY_MAX_DECODED_RATIO``)."""


class _Inflate:
    """One gzip or deflate layer. HTTP's ``deflate`` is zlib-wrapped, but some servers send raw
    deflate: the first bytes decide (as curl and browsers do)."""

    def __init__(self, coding: str) -> None:
        self._coding = coding
        self._obj: zlib._Decompress | None = None
        self._pending = b""

    def feed(self, data: bytes, room: int) -> bytes:
        """At most ``room`` bytes of output; a body that would give more raises (the caller passes
        one more than it allows, so reaching ``room`` means past the bound)."""
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
            out = self._obj.decompress(data, max(room, 1))
        except zlib.error as exc:
            raise ContentCodingError(f"the upstream's {self._coding} body is corrupt") from exc
        if self._obj.unconsumed_tail:
            raise _expands()
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


def _expands() -> ContentCodingError:
    return ContentCodingError("the upstream's compressed body expands past GUARDPROXY_MAX_RESPONSE_BYTES or "
                              "GUARDPROXY_MAX_DECODED_RATIO")


class ContentDecoder:
    """One response's ``content-encoding``: at most one gzip or deflate layer (``identity`` entries
    ignored), its output bounded by ``DecodeBounds``."""

    def __init__(self, header: str, bounds: DecodeBounds | None = None) -> None:
        codings = [c.strip().lower() for c in header.split(",") if c.strip()]
        unknown = [c for c in codings if c != "identity" and c not in _ZLIB_WBITS]
        if unknown:
            raise ContentCodingError(f"the upstream sent content-encoding {', '.join(unknown)} "
                                     "although guardproxy asked for identity")
        layers = [c for c in codings if c != "identity"]
        if len(layers) > 1:
            raise ContentCodingError(f"the upstream sent {len(layers)} content codings ({', '.join(layers)}); "
                                     "guardproxy undoes at most one")
        self._layer = _Inflate(layers[0]) if layers else None
        self._bounds = bounds or DecodeBounds()
        self._read = 0
        self._given = 0

    @property
    def active(self) -> bool:
        return self._layer is not None

    def _room(self) -> int:
        """One more byte than the output may still grow by (so that reaching it means too much)."""
        b = self._bounds
        allowed = min(b.most, max(RATIO_SLACK, b.ratio * self._read))
        return max(allowed - self._given, 0) + 1

    def feed(self, data: bytes) -> bytes:
        if self._layer is None:
            return data
        self._read += len(data)
        room = self._room()
        out = self._layer.feed(data, room)
        if len(out) >= room:
            raise _expands()
        self._given += len(out)
        return out

    def finish(self) -> bytes:
        if self._layer is None:
            return b""
        room = self._room()
        out = self._layer.finish()
        if len(out) >= room:
            raise _expands()
        self._given += len(out)
        return out
