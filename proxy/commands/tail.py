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
import os
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


PASSES = frozenset({"allow", "pass", "log"})
"""Decisions that let the answer through as it was: shown only with ``--passes``."""
_COLOURS = {"block": "31", "replace": "31", "reject": "31", "redact": "33", "retry": "33", "feedback": "33",
            "allow": "32", "pass": "32", "log": "2"}
"""ANSI colours by decision (red: withheld, yellow: changed, green: passed, dim: logged only)."""


class Filter:
    """Which records a ``tail`` shows: each option, when given, must match (any of its values)."""

    def __init__(self, *, guardrails: list[str] | None = None, events: list[str] | None = None,
                 decisions: list[str] | None = None, policies: list[str] | None = None,
                 passes: bool = False) -> None:
        self.guardrails, self.events = set(guardrails or ()), set(events or ())
        self.decisions, self.policies, self.passes = set(decisions or ()), set(policies or ()), passes

    def shows(self, record: dict[str, object]) -> bool:
        decision = str(record.get("decision") or "")
        if not self.passes and not self.decisions and decision in PASSES:
            return False
        checks = ((self.guardrails, str(record.get("guardrail_id") or record.get("rule") or "")),
                  (self.events, str(record.get("event") or "")), (self.decisions, decision),
                  (self.policies, str(record.get("policy_name") or "")))
        return all(not wanted or value in wanted for wanted, value in checks)


def brief(record: dict[str, object], colour: bool = False) -> str:
    """One record as aligned columns: time, event, guardrail or rule, reason, decision, policy,
    request, tool. Every field is escaped (``safe``) before any colour code is added."""
    who = record.get("guardrail_id") or record.get("rule") or "-"
    ts = str(record.get("ts", ""))
    decision = str(record.get("decision") or "-")
    cells = [safe(ts[11:23] if len(ts) >= 23 else ts).ljust(12), safe(str(record.get("event", ""))).ljust(18),
             safe(str(who)).ljust(20), safe(str(record.get("reason_code") or "-")).ljust(24),
             safe(decision).ljust(8), safe(str(record.get("policy_name") or "-")).ljust(10),
             "request=" + safe(str(record.get("request_id", "")))]
    if record.get("tool"):
        cells.append("tool=" + safe(str(record["tool"])))
    if colour and decision in _COLOURS:
        cells[4] = f"\x1b[{_COLOURS[decision]}m{cells[4]}\x1b[0m"
    return "  ".join(cells).rstrip()


def as_json(data: str) -> str:
    """A record as one line of JSON, with nothing a terminal acts on (json escapes C0 controls; the
    rest, C1 and format characters, are escaped here, inside strings where they can only be)."""
    return safe(json.dumps(json.loads(data), ensure_ascii=False, separators=(",", ":")))


def follow(url: str | None, token: str | None, json_lines: bool, limit: int | None = None,
           only: Filter | None = None, colour: bool | None = None) -> int:
    """Print the feed's records until the proxy closes it (or ``limit`` shown). ``colour`` None: on
    when standard output is a terminal and ``NO_COLOR`` is unset."""
    only = only or Filter()
    if colour is None:
        colour = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
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
                    record = json.loads(data)
                    if not only.shows(record):
                        continue
                    line = as_json(data) if json_lines else brief(record, colour)
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
