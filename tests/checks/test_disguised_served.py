"""Disguised matches through the real proxy, with the official SDKs as clients. Two disguises a model
produces for free: invisible characters between the letters (zero-width spaces, word joiners, soft
hyphens, BOMs, bidi marks, tags) and look-alike letters (a key with Cyrillic ``А`` and full-width
digits, a phrase with Greek ``ο``, an email with Cyrillic ``а`` and ``р``, a phone with Unicode
hyphens). Under either, a key and a deny phrase are blocked, and personal data is redacted whole
(every raw disguising character with it), streamed one character a delta, in one-byte writes that
split the characters' UTF-8, unary, over every wire format, and in tool-call arguments. Russian and
Greek prose goes through untouched. No fixed hold-back: the horizons alone keep the match from the
client.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest

from guardrails.text.invisible import as_read, drop_invisible
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
MARKS = "\u200b\u2060\u00ad\ufeff\u200e\U000e0041\ufe0f\ufff9\ufffb"
PROSE = ("Привет! Сегодня в Москве солнечно, около 12 градусов; встреча в 15:30, комната 4б. "
         "Καλημέρα σας, ο καιρός στην Αθήνα είναι καλός, περίπου 18 βαθμοί.")


def hide(value: str) -> str:
    """``value`` with an invisible character after each of its letters but the last."""
    return "".join(ch + MARKS[i % len(MARKS)] for i, ch in enumerate(value[:-1])) + value[-1]


@dataclass(frozen=True)
class Disguise:
    key: str
    """The key as the model writes it."""
    phrase: str
    """A sentence with the deny phrase disguised."""
    personal: tuple[str, str]
    """A text with disguised personal data, and what the client must see of it."""
    read: Callable[[str], str]
    """What a reader makes of the client's text (the check of what reached it)."""


DISGUISES = {
    "invisible": Disguise(
        hide(KEY), f"The next launch is {hide('Project Nightingale')}, due in May.",
        (f"Contact {hide('jane.doe@corp-mail.net')} for access, ünï ✓.", "Contact [email] for access, ünï ✓."),
        drop_invisible),
    "lookalike": Disguise(
        "AKI\u0410" + KEY[4:].translate(str.maketrans("0123456789", "０１２３４５６７８９")),
        "The next launch is Pr\u03bfject Nightingale, due in May.",
        ("Contact \u0430lice.smith@cor\u0440-mail.co.uk or +1 415\u2010555\u20112671, ünï ✓.",
         "Contact [email] or [phone], ünï ✓."),
        as_read),
}
CASES = ("secret", "deny")


def _blocked(d: Disguise, case: str) -> tuple[str, str, str]:
    """(the answer, what must not show, the replacement)"""
    if case == "secret":
        return f"Here is the key: {d.key} keep it safe.", KEY, "[withheld: credential]"
    return d.phrase, "Nightingale", "[withheld: codename]"


@pytest.fixture(scope="module")
def guard_proxy(upstream_server: FakeUpstream) -> Iterator[ProxyServer]:
    with ProxyServer(upstream_server.url, POLICY) as p:
        yield p


def _shows_nothing_of(d: Disguise, seen: str, needle: str) -> bool:
    read = d.read(seen)
    return needle[:4] not in read and needle[-4:] not in read


@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("disguise", list(DISGUISES))
def test_a_disguised_match_is_blocked(guard_proxy: ProxyServer, upstream: FakeUpstream, disguise: str, api: str,
                                      case: str, stream: bool) -> None:
    d = DISGUISES[disguise]
    text, needle, replacement = _blocked(d, case)
    upstream.queue(Reply(text=text, deltas=list(text)) if stream else Reply(text=text))
    seen = sdk_call(guard_proxy.url, api, stream=stream, system=SYSTEM)
    assert _shows_nothing_of(d, seen.text, needle)
    if stream:
        assert replacement in seen.text
        assert seen.finish == FILTERED[api]
    else:
        assert seen.text == replacement


@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("disguise", list(DISGUISES))
def test_disguised_personal_data_is_redacted_whole(guard_proxy: ProxyServer, upstream: FakeUpstream,
                                                   disguise: str, api: str, stream: bool) -> None:
    text, expected = DISGUISES[disguise].personal
    upstream.queue(Reply(text=text, deltas=list(text)) if stream else Reply(text=text))
    seen = sdk_call(guard_proxy.url, api, stream=stream, system=SYSTEM)
    assert seen.text == expected  # every disguising character inside the address and the number went with it
    if stream:
        assert seen.finish == NORMAL[api]


@pytest.mark.parametrize("case", [*CASES, "personal"])
@pytest.mark.parametrize("disguise", list(DISGUISES))
def test_disguises_split_across_writes_mid_character(guard_proxy: ProxyServer, upstream: FakeUpstream,
                                                     disguise: str, case: str) -> None:
    d = DISGUISES[disguise]
    text = d.personal[0] if case == "personal" else _blocked(d, case)[0]
    reply = Reply(text=text, deltas=[text[i:i + 3] for i in range(0, len(text), 3)])
    upstream.queue(Reply(raw_frames=utf8_chat_frames(reply), split_bytes=1))
    seen = sdk_call(guard_proxy.url, "chat", stream=True, system=SYSTEM)
    if case == "personal":
        assert seen.text == d.personal[1]
    else:
        _, needle, replacement = _blocked(d, case)
        assert replacement in seen.text and _shows_nothing_of(d, seen.text, needle)
        assert seen.finish == FILTERED["chat"]


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("disguise", list(DISGUISES))
def test_a_disguised_key_in_tool_arguments_is_blocked(guard_proxy: ProxyServer, upstream: FakeUpstream,
                                                      disguise: str, api: str) -> None:
    upstream.queue(Reply(text="Writing the config.", tool_calls=[
        ("write_file", {"path": "cfg.ini", "content": f"key={DISGUISES[disguise].key}"})]))
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
