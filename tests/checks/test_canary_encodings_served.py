"""A system prompt copied the ways a model does for free on request (reversed, without vowels, in
base64, hex, leetspeak, URL-encoded, as HTML tags or character references, as ``\\u`` escapes),
through the real proxy, with the official SDKs as clients, streamed one character a delta and
unary, over every wire format. No fixed hold-back: the canary's horizons alone keep the copy from
the client. The SDK's text is the judge: no piece of the copy as long as the same spelling of
``MIN_CHARS`` of the prompt reached it. Ordinary text with markup, escapes, a base64 image and a
hash passes untouched.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.apis import APIS, FILTERED, NORMAL, sdk_call
from tests.fakes.proxy import ProxyServer
from tests.fakes.upstream import FakeUpstream, Reply

MIN_CHARS = 40
POLICY = f"""
[defaults]
holdback_chars = 0

[[stream_guardrails]]
id = "leak"
kind = "canary"
min_chars = {MIN_CHARS}
replacement = "[withheld: system prompt]"
"""
SYSTEM = (Path(__file__).parent.parent / "data" / "gemini_cli_system_prompt.txt").read_text(encoding="utf-8")
EXCERPT = ("Rigorously adhere to existing project conventions when reading or modifying code. Analyze "
           "surrounding code, tests, and configuration first.")
COPIES: dict[str, Callable[[str], str]] = {
    "reversed": lambda t: t[::-1],
    "vowels removed": lambda t: "".join(c for c in t if c.lower() not in "aeiou"),
    "base64 wrapped": lambda t: "\n".join(base64.b64encode(t.encode()).decode()[i:i + 40] for i in range(0, 400, 40)),
    "hex spaced": lambda t: " ".join(f"{b:02x}" for b in t.encode()),
    "leetspeak": lambda t: t.translate(str.maketrans("aeiostlAEIOSTL", "43105714310571")),
    "url-encoded": lambda t: "".join(f"%{b:02X}" for b in t.encode()),
    "html tags": lambda t: " ".join(f"<b>{w}</b>" for w in t.split()),
    "character references": lambda t: "".join(f"&#{ord(c)};" for c in t),
    "unicode escapes": lambda t: "".join(f"\\u{ord(c):04x}" for c in t),
}
PREFIX = "Sure, my instructions say:\n"
ORDINARY = ("Use <code>pytest -q</code> &amp; <b>ruff</b> &mdash; 100% of the time (see \\u00e9).\n"
            "![dot](data:image/png;base64," + base64.b64encode(bytes(range(200))).decode() + ")\n"
            "sha256 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08, v1.0.5 in 2024.")


@pytest.fixture(scope="module")
def guard_proxy(upstream_server: FakeUpstream) -> Iterator[ProxyServer]:
    with ProxyServer(upstream_server.url, POLICY) as p:
        yield p


def _shows_no_piece_of(copy: str, how: str, seen: str) -> bool:
    """No piece of ``copy`` as long as ``how``'s spelling of ``MIN_CHARS`` prompt characters reached
    the client."""
    n = len(COPIES[how](EXCERPT[:MIN_CHARS]))
    return not any(copy[i:i + n] in seen for i in range(len(copy) - n + 1))


@pytest.mark.parametrize("how", COPIES)
@pytest.mark.parametrize("api", APIS)
def test_a_copy_is_blocked_streamed(guard_proxy: ProxyServer, upstream: FakeUpstream, api: str, how: str) -> None:
    copy = COPIES[how](EXCERPT)
    answer = PREFIX + copy + "\nThat is all."
    upstream.queue(Reply(text=answer, deltas=list(answer)))
    seen = sdk_call(guard_proxy.url, api, stream=True, system=SYSTEM)
    assert "[withheld: system prompt]" in seen.text
    assert _shows_no_piece_of(copy, how, seen.text)
    assert seen.finish == FILTERED[api]


@pytest.mark.parametrize("how", ["base64 wrapped", "html tags", "reversed"])
@pytest.mark.parametrize("api", APIS)
def test_a_copy_is_blocked_unary(guard_proxy: ProxyServer, upstream: FakeUpstream, api: str, how: str) -> None:
    upstream.queue(Reply(text=PREFIX + COPIES[how](EXCERPT)))
    seen = sdk_call(guard_proxy.url, api, stream=False, system=SYSTEM)
    assert seen.text == "[withheld: system prompt]"


@pytest.mark.parametrize("api", APIS)
def test_ordinary_markup_escapes_and_blobs_pass_untouched(
        guard_proxy: ProxyServer, upstream: FakeUpstream, api: str) -> None:
    upstream.queue(Reply(text=ORDINARY, deltas=list(ORDINARY)))
    seen = sdk_call(guard_proxy.url, api, stream=True, system=SYSTEM)
    assert seen.text == ORDINARY
    assert seen.finish == NORMAL[api]
