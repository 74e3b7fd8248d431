"""Framing differentials (issue 10.7): where the proxy and the client could split or label the same
bytes differently, the client would show what the proxy never checked. An upstream sends a
credential cut across two events, framed in every way the event-stream standard allows; the raw
response, the official SDK's text and its errors must hold no byte of it."""

from __future__ import annotations

import pytest

from tests.adversarial import SECRET, STREAM_APIS, client_sees, frames_for, reframe
from tests.fakes.proxy import ProxyServer
from tests.fakes.upstream import FakeUpstream, Reply

LEAKY = Reply(text=f"The key is {SECRET} as requested.",
              deltas=["The key is AKIAQ7XR", "4K2MZT9BWP3N as requested."])

ENDINGS = {
    "lf-then-crlf-blank": [(b"\n", b"\r\n")],
    "crlf-then-lf-blank": [(b"\r\n", b"\n")],
    "cr-only": [(b"\r", b"\r")],
    "cr-then-crlf-blank": [(b"\r", b"\r\n")],
    "every-mix": [(b"\n", b"\n"), (b"\r\n", b"\r\n"), (b"\n", b"\r\n"), (b"\r", b"\r\n"), (b"\r\n", b"\r")],
}


@pytest.mark.parametrize("ending", list(ENDINGS))
@pytest.mark.parametrize("api", STREAM_APIS)
def test_a_secret_across_events_is_caught_however_lines_end(secrets_guard: ProxyServer, upstream: FakeUpstream,
                                                            api: str, ending: str) -> None:
    frames = reframe(frames_for(api, LEAKY), ENDINGS[ending])
    seen = client_sees(secrets_guard.url, api, lambda: upstream.queue(Reply(raw_frames=frames)))
    shown = seen.everything()
    assert SECRET not in shown and "4K2MZT9BWP3N" not in shown
    assert seen.sdk is not None, seen.sdk_error
    assert "[withheld: credential]" in seen.sdk.text


@pytest.mark.parametrize("name", ["message_delta", "content_block_stop", "x-custom", "message_start"])
def test_anthropic_events_are_read_by_their_data_type_as_the_sdk_does(secrets_guard: ProxyServer,
                                                                      upstream: FakeUpstream, name: str) -> None:
    """The SDK skips only nameless, ``ping`` and ``error`` events and types the rest by ``data.type``:
    a text delta labelled with another event name still reaches the user."""
    frames = [f.replace(b"event: content_block_delta\n", f"event: {name}\n".encode())
              for f in frames_for("anthropic", LEAKY)]
    seen = client_sees(secrets_guard.url, "anthropic", lambda: upstream.queue(Reply(raw_frames=frames)))
    shown = seen.everything()
    assert SECRET not in shown and "4K2MZT9BWP3N" not in shown
