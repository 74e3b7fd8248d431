"""Invisible characters through the real proxy, with the official SDKs as clients: a key, a deny phrase
and an email with zero-width spaces, word joiners, soft hyphens, BOMs, bidi marks or tags between
their letters are blocked (the key, the phrase) or redacted whole (the email), streamed one character
a delta (and in one-byte writes that split the UTF-8 of the marks) and in unary answers, over every
wire format. No fixed hold-back: the horizons alone keep the match from the client.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest

from guardrails.text.invisible import drop_invisible
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
id = "emails"
kind = "pii"
categories = ["email"]
action = "redact"
"""

SYSTEM = "You are a helpful assistant."
KEY = fill(TEMPLATES["aws-access-key-id"], random.Random(11))
MARKS = "\u200b\u2060\u00ad\ufeff\u200e\U000e0041\ufe0f\ufff9\ufffb"


def hide(value: str) -> str:
    """``value`` with an invisible character after each of its letters but the last."""
    return "".join(ch + MARKS[i % len(MARKS)] for i, ch in enumerate(value[:-1])) + value[-1]


BLOCKED = {
    "secret": (f"Here is the key: {hide(KEY)} keep it safe.", KEY, "[withheld: credential]"),
    "deny": (f"The next launch is {hide('Project Nightingale')}, due in May.", "Nightingale", "[withheld: codename]"),
}
EMAIL = "jane.doe@corp-mail.net"
REDACTED = (f"Contact {hide(EMAIL)} for access, ünï ✓.", "Contact [email] for access, ünï ✓.")


@pytest.fixture(scope="module")
def guard_proxy(upstream_server: FakeUpstream) -> Iterator[ProxyServer]:
    with ProxyServer(upstream_server.url, POLICY) as p:
        yield p


def _shows_nothing_of(seen: str, needle: str) -> bool:
    visible = drop_invisible(seen)
    return needle[:4] not in visible and needle[-4:] not in visible


@pytest.mark.parametrize("case", list(BLOCKED))
@pytest.mark.parametrize("api", APIS)
def test_a_match_hidden_by_invisible_characters_is_blocked_streamed(
        guard_proxy: ProxyServer, upstream: FakeUpstream, api: str, case: str) -> None:
    text, needle, replacement = BLOCKED[case]
    upstream.queue(Reply(text=text, deltas=list(text)))
    seen = sdk_call(guard_proxy.url, api, stream=True, system=SYSTEM)
    assert replacement in seen.text
    assert _shows_nothing_of(seen.text, needle)
    assert seen.finish == FILTERED[api]


@pytest.mark.parametrize("case", list(BLOCKED))
@pytest.mark.parametrize("api", APIS)
def test_a_match_hidden_by_invisible_characters_is_blocked_unary(
        guard_proxy: ProxyServer, upstream: FakeUpstream, api: str, case: str) -> None:
    text, needle, replacement = BLOCKED[case]
    upstream.queue(Reply(text=text))
    seen = sdk_call(guard_proxy.url, api, stream=False, system=SYSTEM)
    assert seen.text == replacement
    assert _shows_nothing_of(seen.text, needle)


@pytest.mark.parametrize("api", APIS)
def test_an_email_hidden_by_invisible_characters_is_redacted_whole_streamed(
        guard_proxy: ProxyServer, upstream: FakeUpstream, api: str) -> None:
    text, expected = REDACTED
    upstream.queue(Reply(text=text, deltas=list(text)))
    seen = sdk_call(guard_proxy.url, api, stream=True, system=SYSTEM)
    assert seen.text == expected  # every invisible character inside the address went with it
    assert seen.finish == NORMAL[api]


@pytest.mark.parametrize("api", APIS)
def test_an_email_hidden_by_invisible_characters_is_redacted_whole_unary(
        guard_proxy: ProxyServer, upstream: FakeUpstream, api: str) -> None:
    text, expected = REDACTED
    upstream.queue(Reply(text=text))
    seen = sdk_call(guard_proxy.url, api, stream=False, system=SYSTEM)
    assert seen.text == expected


@pytest.mark.parametrize("case", [*BLOCKED, "email"])
def test_invisible_characters_split_across_writes_mid_character(
        guard_proxy: ProxyServer, upstream: FakeUpstream, case: str) -> None:
    text = REDACTED[0] if case == "email" else BLOCKED[case][0]
    reply = Reply(text=text, deltas=[text[i:i + 3] for i in range(0, len(text), 3)])
    upstream.queue(Reply(raw_frames=utf8_chat_frames(reply), split_bytes=1))
    seen = sdk_call(guard_proxy.url, "chat", stream=True, system=SYSTEM)
    if case == "email":
        assert seen.text == REDACTED[1]
    else:
        assert BLOCKED[case][2] in seen.text and _shows_nothing_of(seen.text, BLOCKED[case][1])
        assert seen.finish == FILTERED["chat"]


@pytest.mark.parametrize("api", APIS)
def test_a_key_hidden_in_tool_arguments_is_blocked(guard_proxy: ProxyServer, upstream: FakeUpstream,
                                                   api: str) -> None:
    upstream.queue(Reply(text="Writing the config.",
                         tool_calls=[("write_file", {"path": "cfg.ini", "content": f"key={hide(KEY)}"})]))
    seen = sdk_call(guard_proxy.url, api, stream=True, system=SYSTEM)
    assert not seen.tool_calls
    assert "[withheld: credential]" in seen.text
