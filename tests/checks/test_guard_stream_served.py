"""Streaming guardrails through the proxy, over every wire format, streaming and not: blocked text
never reaches the client (checked on the raw bytes), the SDKs see the replacement and a finish."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.apis import APIS, FILTERED, NORMAL, raw_call, sdk_call
from tests.fakes.proxy import ProxyServer
from tests.fakes.upstream import FakeUpstream, Reply

POLICY = """
[defaults]
holdback_chars = 16

[[stream_guardrails]]
id = "leak"
kind = "canary"
min_chars = 40
replacement = "[withheld: system prompt]"

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

SYSTEM = ("You are the support assistant of Acme Corp. Never reveal internal pricing tiers, the discount "
          "matrix, or the escalation phone tree to customers under any circumstances.")
SECRET = "AKIAQ7XR4K2MZT9BWP3N"
LEAK = "Sure! My instructions say: never reveal internal pricing tiers, the discount matrix, or the escalation"


@pytest.fixture(scope="module")
def guard_proxy(upstream_server: FakeUpstream) -> Iterator[ProxyServer]:
    with ProxyServer(upstream_server.url, POLICY) as p:
        yield p


def one_char_deltas(text: str) -> list[str]:
    return list(text)


CASES = {
    "secret": (f"Here is the key you asked for: {SECRET} — keep it safe ✓", SECRET, "secrets", "secret_leak"),
    "leak": (LEAK + " phone tree. Anything else?", "discount matrix", "leak", "system_prompt_leak"),
    "deny": ("The next launch is Project  Nightingale, due in May. ünï 漢字", "Nightingale", "deny", "pattern_match"),
}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("api", APIS)
def test_blocked_text_never_reaches_the_client_stream(guard_proxy: ProxyServer, upstream: FakeUpstream,
                                                      api: str, case: str) -> None:
    text, needle, gid, reason = CASES[case]
    upstream.queue(Reply(text=text, deltas=one_char_deltas(text), split_bytes=1))
    res = raw_call(guard_proxy.url, api, stream=True, system=SYSTEM)
    assert res.status == 200
    assert needle.encode() not in res.raw
    assert needle[:8].encode() not in res.raw
    assert json.dumps(needle)[1:9].encode() not in res.raw
    assert gid.encode() in res.raw and reason.encode() in res.raw
    # The official SDK parses the same stream and sees the replacement and a finish.
    upstream.queue(Reply(text=text, deltas=one_char_deltas(text)))
    seen = sdk_call(guard_proxy.url, api, stream=True, system=SYSTEM)
    assert "[withheld:" in seen.text
    assert needle not in seen.text
    assert seen.finish == FILTERED[api]


@pytest.mark.parametrize("api", APIS)
def test_blocked_text_is_replaced_in_unary_bodies(guard_proxy: ProxyServer, upstream: FakeUpstream, api: str) -> None:
    text, needle, _, _ = CASES["secret"]
    upstream.queue(Reply(text=text))
    res = raw_call(guard_proxy.url, api, stream=False, system=SYSTEM)
    assert res.status == 200 and needle.encode() not in res.raw
    assert res.headers["x-guardproxy-replaced"] == "secrets; secret_leak"
    upstream.queue(Reply(text=text))
    seen = sdk_call(guard_proxy.url, api, stream=False, system=SYSTEM)
    assert seen.text == "[withheld: credential]"
    assert seen.finish in (FILTERED[api], "content_filter")


@pytest.mark.parametrize("api", APIS)
def test_clean_answers_pass_byte_for_byte(guard_proxy: ProxyServer, upstream: FakeUpstream, api: str) -> None:
    """Text that merely resembles a secret passes: a UUID, a sha256 in code, a documented example key."""
    text = ("Use id 123e4567-e89b-12d3-a456-426614174000, checksum "
            "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08 and the docs' example key "
            "AKIAIOSFODNN7EXAMPLE. Mail noreply@example.com (a service mailbox, no person).")
    reply = Reply(text=text, split_bytes=3)
    upstream.queue(reply)
    res = raw_call(guard_proxy.url, api, stream=True, system=SYSTEM)
    kind = "gemini" if api.startswith("gemini") else api
    assert res.raw == upstream.expected_stream_bytes(kind, reply, "m", alt_sse=api == "gemini")
    upstream.queue(Reply(text=text))
    seen = sdk_call(guard_proxy.url, api, stream=True, system=SYSTEM)
    assert seen.text == text and seen.finish == NORMAL[api] and not seen.replaced


@pytest.mark.parametrize("api", APIS)
def test_secret_inside_streamed_tool_arguments_is_caught(guard_proxy: ProxyServer, upstream: FakeUpstream,
                                                         api: str) -> None:
    upstream.queue(Reply(text="Writing the config.", tool_calls=[("write_file", {"path": "cfg.ini",
                                                                               "content": f"key={SECRET}"})]))
    res = raw_call(guard_proxy.url, api, stream=True, system=SYSTEM)
    assert SECRET[:10].encode() not in res.raw
    assert b"write_file" not in res.raw
    assert b"secret_leak" in res.raw


@pytest.mark.parametrize("api", APIS)
def test_pii_is_redacted_in_place(guard_proxy: ProxyServer, upstream: FakeUpstream, api: str) -> None:
    text = "Contact jane.doe@corp-mail.net for access, she answers within a day."
    upstream.queue(Reply(text=text, deltas=one_char_deltas(text)))
    seen = sdk_call(guard_proxy.url, api, stream=True, system=SYSTEM)
    assert "jane.doe" not in seen.text
    assert seen.text == text.replace("jane.doe@corp-mail.net", "[email]")
    assert seen.finish == NORMAL[api]


def test_guardrails_disabled_is_pure_passthrough(upstream_server: FakeUpstream) -> None:
    upstream_server.reset()
    text, needle, _, _ = CASES["secret"]
    reply = Reply(text=text)
    with ProxyServer(upstream_server.url, POLICY, guardrails_enabled=False) as p:
        upstream_server.queue(reply)
        res = raw_call(p.url, "chat", stream=True, system=SYSTEM)
    assert needle.encode() in res.raw
    assert res.raw == upstream_server.expected_stream_bytes("chat", reply, "m")
