"""A burst: one upstream read that holds many frames of an answer (an answer cached upstream, a fast
model, a slow reader catching up). The driver puts such a read through the guard in two steps, its
first ``proxy.drive.guarded_turn.SLICE_BYTES`` and then the rest, serving the event loop's other requests
between them, so no stream's first token waits behind the checks of a whole burst. What a client
gets must not depend on it: the same bytes, the same verdict, the same text, whether the upstream
sent the frames one write each or all in one write; and nothing of a credential late in the burst
reaches it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from proxy.drive.guarded_turn import SLICE_BYTES
from tests.adversarial import SECRET, SECRETS_POLICY, STREAM_APIS, Seen, client_sees, frames_for
from tests.apis import raw_call
from tests.fakes.faulty import assert_http_error, assert_stream_error
from tests.fakes.proxy import ProxyServer
from tests.fakes.upstream import FakeUpstream, Reply

PROSE = ("the deployment finished after the canary stage and the rollout moved on to every region "
         "while the dashboards stayed green")
WORDS = PROSE.split(" ")


def _text(words: int, secret_at: int | None = None) -> str:
    out = [WORDS[i % len(WORDS)] for i in range(words)]
    if secret_at is not None:
        out.insert(secret_at, SECRET)
    return " ".join(out) + " and that was the coda."


def _burst(frames: list[bytes]) -> list[bytes]:
    whole = b"".join(frames)
    assert len(whole) > 4 * SLICE_BYTES  # (what the upstream sends in one write, read in one or a few)
    return [whole]


@pytest.mark.parametrize("api", STREAM_APIS)
def test_a_clean_burst_is_relayed_byte_for_byte(secrets_guard: ProxyServer, upstream: FakeUpstream,
                                                api: str) -> None:
    frames = frames_for(api, Reply(text=_text(300)))
    upstream.queue(Reply(raw_frames=_burst(frames)))
    raw = raw_call(secrets_guard.url, api, stream=True)
    assert raw.status == 200 and raw.raw == b"".join(frames)


@pytest.mark.parametrize("secret_at", [3, 150, 290])
@pytest.mark.parametrize("api", STREAM_APIS)
def test_a_credential_in_a_burst_gets_the_verdict_it_gets_frame_by_frame(
        secrets_guard: ProxyServer, upstream: FakeUpstream, api: str, secret_at: int) -> None:
    frames = frames_for(api, Reply(text=_text(300, secret_at)))
    burst = client_sees(secrets_guard.url, api, lambda: upstream.queue(Reply(raw_frames=_burst(frames))))
    paced = client_sees(secrets_guard.url, api, lambda: upstream.queue(Reply(raw_frames=frames)))
    assert SECRET not in burst.everything() and SECRET[4:] not in burst.everything()
    assert burst.raw.status == paced.raw.status == 200
    assert burst.sdk is not None and paced.sdk is not None, (burst.sdk_error, paced.sdk_error)
    assert burst.sdk.text == paced.sdk.text
    assert "withheld" in burst.sdk.text
    # what went out before the credential went out as it does frame by frame, and nothing after it
    assert burst.sdk.text.startswith(" ".join(_text(secret_at).split()[:secret_at - 8]))
    assert "coda" not in burst.sdk.text


def _ends_with_the_api_error(api: str, seen: Seen) -> None:
    """A 502 before anything was sent, else the API's in-stream error. The SDKs raise it, except
    the Responses one, which hands a started stream's ``response.failed`` over as an event."""
    if seen.raw.status == 200:
        assert_stream_error(api, seen.raw.raw)
    else:
        assert_http_error(api, 502, seen.raw.raw)
    assert seen.sdk_error is not None or (api == "responses" and seen.raw.status == 200)


@pytest.mark.parametrize("api", ["chat", "responses", "anthropic"])
def test_an_unreadable_frame_late_in_a_burst_ends_it_with_the_api_error(
        secrets_guard: ProxyServer, upstream: FakeUpstream, api: str) -> None:
    """Past the first step's 4 KB, a frame the proxy cannot decode (a ``data:`` line that is not JSON,
    holding a credential) ends the answer with the API's error, as it does in a read of its own."""
    frames = frames_for(api, Reply(text=_text(300)))
    head = {"responses": "event: response.output_text.delta\n", "anthropic": "event: content_block_delta\n"}
    bad = f"{head.get(api, '')}data: {{\"text\": \"key {SECRET}\" trailing\n\n".encode()
    frames = [*frames[:-40], bad, *frames[-40:]]
    assert len(b"".join(frames[:-41])) > SLICE_BYTES
    seen = client_sees(secrets_guard.url, api, lambda: upstream.queue(Reply(raw_frames=_burst(frames))))
    assert SECRET not in seen.everything() and SECRET[4:] not in seen.everything()
    _ends_with_the_api_error(api, seen)


@pytest.mark.parametrize("api", STREAM_APIS)
def test_a_burst_cut_off_by_the_upstream_ends_with_the_api_error_and_nothing_held(
        secrets_guard: ProxyServer, upstream: FakeUpstream, api: str) -> None:
    """The upstream writes a burst whose last word is the start of a credential, then resets the
    connection: the credential's start, held back, never goes out; the answer ends with the error."""
    words = _text(300).split(" ")[:300]
    deltas = [w + " " for w in words] + [SECRET[:8], SECRET[8:], " and more."]
    frames = frames_for(api, Reply(text="".join(deltas), deltas=deltas))
    cut = next(n for n, f in enumerate(frames) if SECRET[:8].encode() in f) + 1
    assert SECRET[8:].encode() not in b"".join(frames[:cut])
    seen = client_sees(secrets_guard.url, api, lambda: upstream.queue(
        Reply(raw_frames=[*_burst(frames[:cut]), *frames[cut:]], break_after_frames=1)))
    assert SECRET[:8] not in seen.everything()
    _ends_with_the_api_error(api, seen)


EMAIL = "jane.doe@fastmail.com"
REDACT_POLICY = SECRETS_POLICY + """
[[stream_guardrails]]
id = "pii"
kind = "pii"
action = "redact"
"""


@pytest.fixture(scope="module")
def redact_guard(upstream_server: FakeUpstream) -> Iterator[ProxyServer]:
    """The secrets check (a block) and the PII check masking in place."""
    with ProxyServer(upstream_server.url, REDACT_POLICY) as p:
        yield p


@pytest.mark.parametrize("secret_at", [None, 200])
@pytest.mark.parametrize("api", STREAM_APIS)
def test_a_mask_in_a_burst_is_the_mask_frame_by_frame_and_so_is_a_block_after_it(
        redact_guard: ProxyServer, upstream: FakeUpstream, api: str, secret_at: int | None) -> None:
    """A burst's frames are checked a read at a time (``ChoiceGuard.push_from``): an address the PII
    check masks is masked in the same frames, and when a credential later in the burst blocks, the
    client has what it would have had frame by frame before the replacement."""
    words = _text(300).split(" ")
    words.insert(100, EMAIL)
    if secret_at is not None:
        words.insert(secret_at, SECRET)
    frames = frames_for(api, Reply(text=" ".join(words)))
    burst = client_sees(redact_guard.url, api, lambda: upstream.queue(Reply(raw_frames=_burst(frames))))
    paced = client_sees(redact_guard.url, api, lambda: upstream.queue(Reply(raw_frames=frames)))
    assert burst.sdk is not None and paced.sdk is not None, (burst.sdk_error, paced.sdk_error)
    assert EMAIL not in burst.everything() and EMAIL not in paced.everything()
    assert burst.sdk.text == paced.sdk.text
    assert burst.sdk.text.count("[email]") == 1
    if secret_at is None:
        assert burst.sdk.text.endswith("coda.") and burst.raw.status == 200
    else:
        assert SECRET not in burst.everything() and "withheld" in burst.sdk.text and "coda" not in burst.sdk.text
