"""``guardproxy tail``: follow the live decision feed (``GET /events``) from a terminal.

One line per decision: time, event, guardrail or rule, reason code, decision, request id (``--json``:
the records as they come). Reconnects are left to the caller (``while :; do guardproxy tail; done``):
a feed does not replay what was missed.

Records carry model-chosen text (a tool name, a path, a host): printed raw, an escape sequence in it
rewrites the terminal (erases the line that reported the block, retitles the window, writes the
clipboard). So every control and format character (C0, DEL, C1, bidi overrides, zero-width and tag
characters, line and paragraph separators) is printed escaped, in both modes (``--json`` stays valid
JSON: ``\\u`` escapes).
"""

from __future__ import annotations

import json
import re
import sys
import unicodedata
from collections.abc import Iterable, Iterator

import httpx

from config.settings import Settings


def sse_lines(chunks: Iterable[bytes]) -> Iterator[str]:
    """The lines of an event stream, split where SSE splits (CR, LF, CRLF) and nowhere else: a
    reader that also splits at U+2028 or U+0085 (``str.splitlines``, httpx's ``iter_lines``) cuts a
    record in two, and the tail of the record is then not a ``data:`` line."""
    pending = b""
    for chunk in chunks:
        pending += chunk
        *done, pending = re.split(rb"\r\n|\r(?!$)|\n", pending)
        for line in done:
            yield line.decode("utf-8", "replace")
    if pending:
        yield pending.removesuffix(b"\r").decode("utf-8", "replace")


def sse_data(lines: Iterable[str]) -> Iterator[str]:
    """The ``data`` of each event of an event stream (comments and pings skipped)."""
    data: list[str] = []
    for line in lines:
        if not line:
            if data:
                yield "\n".join(data)
            data = []
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))


_UNSAFE = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})


def _json_escape(char: str) -> str:
    code = ord(char)
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def safe(text: str) -> str:
    """``text`` with every character a terminal could act on written as a ``\\u`` escape."""
    if text.isprintable() and text.isascii():
        return text
    return "".join(_json_escape(c) if unicodedata.category(c) in _UNSAFE else c for c in text)


def brief(record: dict[str, object]) -> str:
    who = record.get("guardrail_id") or record.get("rule") or "-"
    parts = [str(record.get("ts", "")), str(record.get("event", "")), str(who),
             str(record.get("reason_code") or "-"), str(record.get("decision") or "-"),
             f"request={record.get('request_id', '')}"]
    if record.get("tool"):
        parts.append(f"tool={record['tool']}")
    return safe("  ".join(parts))


def as_json(data: str) -> str:
    """A record as one line of JSON, with nothing a terminal acts on (json escapes C0 controls; the
    rest, C1 and format characters, are escaped here, inside strings where they can only be)."""
    return safe(json.dumps(json.loads(data), ensure_ascii=False, separators=(",", ":")))


def follow(url: str | None, token: str | None, json_lines: bool, limit: int | None = None) -> int:
    settings = Settings()
    base = (url or f"http://{settings.host}:{settings.port}").rstrip("/")
    token = token or settings.auth_token
    headers = {"x-guardproxy-token": token} if token else {}
    seen = 0
    try:
        with httpx.stream("GET", base + "/events", headers=headers,
                          timeout=httpx.Timeout(10.0, read=None)) as r:
            if r.status_code != 200:
                print(f"guardproxy tail: {base}/events answered {r.status_code}", file=sys.stderr)
                return 1
            for data in sse_data(sse_lines(r.iter_bytes())):
                try:
                    line = as_json(data) if json_lines else brief(json.loads(data))
                except (ValueError, AttributeError):
                    line = safe(data)  # not a record: shown as it came, escaped
                print(line, flush=True)
                seen += 1
                if limit is not None and seen >= limit:
                    return 0
    except httpx.TransportError as exc:
        print(f"guardproxy tail: cannot follow {base}/events: {type(exc).__name__}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    return 0
