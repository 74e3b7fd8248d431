"""Bounded decoding of an upstream's ``content-encoding`` (``proxy.upstream.content_coding``): a
compression bomb costs the proxy at most its cap, stacked codings are refused, and an ordinary
compressed answer still decodes. The proxy runs as its own process, so its peak memory is its own."""

from __future__ import annotations

import gzip
import json
import zlib
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.apis import raw_call
from tests.fakes.process import ProxyProcess
from tests.fakes.upstream import FakeUpstream, Reply, chat_body

MIB = 1024 * 1024


def _peak_rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


def _bomb(size: int) -> bytes:
    c = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = b"\0" * MIB
    return b"".join(c.compress(block) for _ in range(size // MIB)) + c.flush()


@pytest.fixture(scope="module")
def proxy(upstream_server: FakeUpstream) -> Iterator[ProxyProcess]:
    with ProxyProcess(upstream_server.url) as p:
        yield p


@pytest.mark.parametrize(("coding", "payload"), [
    ("gzip", _bomb(256 * MIB)),  # about 250 KB that inflate to 256 MiB
    ("gzip, gzip", gzip.compress(_bomb(256 * MIB), 9)),  # a few KB
])
def test_a_compression_bomb_fails_closed_and_costs_at_most_its_cap(proxy: ProxyProcess, upstream: FakeUpstream,
                                                                   coding: str, payload: bytes) -> None:
    assert proxy.proc is not None
    before = _peak_rss(proxy.proc.pid)
    upstream.queue(Reply(raw_body=payload, extra_headers={"content-encoding": coding}))
    res = raw_call(proxy.url, "chat", stream=False)
    assert res.status == 502, res.raw[:200]
    grown = _peak_rss(proxy.proc.pid) - before
    assert grown < 40 * MIB, f"peak memory grew by {grown // MIB} MiB"
    metrics = httpx.get(proxy.url + "/metrics").text
    assert 'guardproxy_fail_closed_total{reason="content_encoding"}' in metrics


def test_an_ordinary_compressed_answer_still_decodes(proxy: ProxyProcess, upstream: FakeUpstream) -> None:
    body = json.dumps(chat_body(Reply(text="plain words " * 20_000), "m")).encode()  # 240 KB, ratio > 100
    upstream.queue(Reply(raw_body=gzip.compress(body), extra_headers={"content-encoding": "gzip"}))
    res = raw_call(proxy.url, "chat", stream=False)
    assert res.status == 200 and b"plain words" in res.raw
