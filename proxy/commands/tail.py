"""``guardproxy tail``: follow the live decision feed (``GET /events``) from a terminal.

One line per decision: time, event, guardrail or rule, reason code, decision, request id (``--json``:
the records as they come). Reconnects are left to the caller (``while :; do guardproxy tail; done``):
a feed does not replay what was missed.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator

import httpx

from config.settings import Settings


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


def brief(record: dict[str, object]) -> str:
    who = record.get("guardrail_id") or record.get("rule") or "-"
    parts = [str(record.get("ts", "")), str(record.get("event", "")), str(who),
             str(record.get("reason_code") or "-"), str(record.get("decision") or "-"),
             f"request={record.get('request_id', '')}"]
    if record.get("tool"):
        parts.append(f"tool={record['tool']}")
    return "  ".join(parts)


def follow(url: str | None, token: str | None, as_json: bool, limit: int | None = None) -> int:
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
            for data in sse_data(r.iter_lines()):
                print(data if as_json else brief(json.loads(data)), flush=True)
                seen += 1
                if limit is not None and seen >= limit:
                    return 0
    except httpx.TransportError as exc:
        print(f"guardproxy tail: cannot follow {base}/events: {type(exc).__name__}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    return 0
