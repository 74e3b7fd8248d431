"""The request log line's timestamp (``proxy.ops.logs.UtcStamp``): the format structlog's TimeStamper wrote."""

from __future__ import annotations

import datetime
import re

import pytest

import proxy.ops.logs
from proxy.ops.logs import UtcStamp


def test_the_timestamp_is_iso_8601_utc_with_microseconds() -> None:
    stamp = UtcStamp()(None, "info", {})["timestamp"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", stamp)
    now = datetime.datetime.now(tz=datetime.UTC)
    assert abs((now - datetime.datetime.fromisoformat(stamp)).total_seconds()) < 5


def test_each_second_is_formatted_anew(monkeypatch: pytest.MonkeyPatch) -> None:
    stamp = UtcStamp()
    for now, expected in ((1_700_000_000_500_000_000, "2023-11-14T22:13:20.500000Z"),
                          (1_700_000_000_750_000_999, "2023-11-14T22:13:20.750000Z"),
                          (1_700_000_061_000_002_000, "2023-11-14T22:14:21.000002Z")):
        monkeypatch.setattr(proxy.ops.logs.time, "time_ns", lambda now=now: now)
        assert stamp(None, "info", {})["timestamp"] == expected
