"""Look-alike letters through the real proxy, with the official SDKs as clients: a key with Cyrillic
``А`` and full-width digits, a deny phrase with Greek ``ο`` and an email with Cyrillic ``а`` and
``р`` (and a phone with Unicode hyphens) are blocked (the key, the phrase) or redacted whole, every
raw look-alike with them (the email, the phone), streamed one character a delta (and in one-byte
writes that split their UTF-8) and in unary answers, over every wire format, and in tool-call
arguments. Russian and Greek prose goes through untouched. No fixed hold-back: the horizons alone
keep the match from the client.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest

from guardrails.text.invisible import as_read
from tests.adversarial import utf8_chat_frames
from tests.apis import APIS, FILTERED, NORMAL, sdk_call
from tests.fakes.proxy import ProxyServer
from tests.fakes.upstream import FakeUpstream, Reply
from tests.secret_samples import TEMPLATES, fill

POLICY = """
[defaults]
holdback_chars = 0

[[stream_guardrails]]
id = "secrets"
kind = "secrets"
replacement = "[withheld: credential]"

[[stream_guardrails]]
id = "deny"
kind = "regex"
patterns = ["project\\\\s+nightingale"]
flags = ["i"]
replacement = "[withheld: codename]"

[[stream_guardrails]]
id = "personal"
kind = "pii"
categories = ["email", "phone"]
action = "redact"
"""
SYSTEM = "You are a helpful assistant."
KEY = fill(TEMPLATES["aws-access-key-id"], random.Random(11))
DISGUISED_KEY = "AKI\u0410" + KEY[4:].translate(str.maketrans("0123456789", "０１２３４５６７８９"))
BLOCKED = {
    "secret": (f"Here is the key: {DISGUISED_KEY} keep it safe.", KEY, "[withheld: credential]"),
    "deny": ("The next launch is Pr\u03bfject Nightingale, due in May.", "Nightingale", "[withheld: codename]"),
}
REDACTED = ("Contact \u0430lice.smith@cor\u0440-mail.co.uk or +1 415\u2010555\u20112671, ünï ✓.",
            "Contact [email] or [phone], ünï ✓.")
PROSE = ("Привет! Сегодня в Москве солнечно, около 12 градусов; встреча в 15:30, комната 4б. "
         "Καλημέρα σας, ο καιρός στην Αθήνα είναι καλός, περίπου 18 βαθμοί.")


@pytest.fixture(scope="module")
def guard_proxy(upstream_server: FakeUpstream) -> Iterator[ProxyServer]:
    with ProxyServer(upstream_server.url, POLICY) as p:
        yield p


def _shows_nothing_of(seen: str, needle: str) -> bool:
    read = as_read(seen)
    return needle[:4] not in read and needle[-4:] not in read


@pytest.mark.parametrize("case", list(BLOCKED))
@pytest.mark.parametrize("api", APIS)
def test_a_match_in_lookalikes_is_blocked_streamed(
        guard_proxy: ProxyServer, upstream: FakeUpstream, api: str, case: str) -> None:
    text, needle, replacement = BLOCKED[case]
    upstream.queue(Reply(text=text, deltas=list(text)))
    seen = sdk_call(guard_proxy.url, api, stream=True, system=SYSTEM)
    assert replacement in seen.text
    assert _shows_nothing_of(seen.text, needle)
    assert seen.finish == FILTERED[api]


@pytest.mark.parametrize("case", list(BLOCKED))
@pytest.mark.parametrize("api", APIS)
def test_a_match_in_lookalikes_is_blocked_unary(
        guard_proxy: ProxyServer, upstream: FakeUpstream, api: str, case: str) -> None:
    text, _, replacement = BLOCKED[case]
    upstream.queue(Reply(text=text))
    seen = sdk_call(guard_proxy.url, api, stream=False, system=SYSTEM)
    assert seen.text == replacement


@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize("api", APIS)
def test_personal_data_in_lookalikes_is_redacted_whole(
        guard_proxy: ProxyServer, upstream: FakeUpstream, api: str, stream: bool) -> None:
    text, expected = REDACTED
    upstream.queue(Reply(text=text, deltas=list(text)) if stream else Reply(text=text))
    seen = sdk_call(guard_proxy.url, api, stream=stream, system=SYSTEM)
    assert seen.text == expected  # every raw look-alike of the address and the number went with it
    if stream:
        assert seen.finish == NORMAL[api]


@pytest.mark.parametrize("case", [*BLOCKED, "personal"])
def test_lookalikes_split_across_writes_mid_character(
        guard_proxy: ProxyServer, upstream: FakeUpstream, case: str) -> None:
    text = REDACTED[0] if case == "personal" else BLOCKED[case][0]
    reply = Reply(text=text, deltas=[text[i:i + 3] for i in range(0, len(text), 3)])
    upstream.queue(Reply(raw_frames=utf8_chat_frames(reply), split_bytes=1))
    seen = sdk_call(guard_proxy.url, "chat", stream=True, system=SYSTEM)
    if case == "personal":
        assert seen.text == REDACTED[1]
    else:
        assert BLOCKED[case][2] in seen.text and _shows_nothing_of(seen.text, BLOCKED[case][1])
        assert seen.finish == FILTERED["chat"]


@pytest.mark.parametrize("api", APIS)
def test_a_key_in_lookalikes_in_tool_arguments_is_blocked(guard_proxy: ProxyServer, upstream: FakeUpstream,
                                                          api: str) -> None:
    upstream.queue(Reply(text="Writing the config.",
                         tool_calls=[("write_file", {"path": "cfg.ini", "content": f"key={DISGUISED_KEY}"})]))
    seen = sdk_call(guard_proxy.url, api, stream=True, system=SYSTEM)
    assert not seen.tool_calls
    assert "[withheld: credential]" in seen.text


@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize("api", APIS)
def test_russian_and_greek_prose_goes_through_untouched(
        guard_proxy: ProxyServer, upstream: FakeUpstream, api: str, stream: bool) -> None:
    upstream.queue(Reply(text=PROSE, deltas=[PROSE[i:i + 2] for i in range(0, len(PROSE), 2)]) if stream
                   else Reply(text=PROSE))
    seen = sdk_call(guard_proxy.url, api, stream=stream, system=SYSTEM)
    assert seen.text == PROSE
