"""Look-alike letters through the real proxy, with the official SDKs as clients: an answer that repeats
Gemini CLI's system prompt with Cyrillic, Greek and small-capital letters in place of Latin ones is
blocked over every wire format, streamed one character a delta, in one-byte writes that split the
letters' UTF-8, and unary. No fixed hold-back: the canary's horizons alone keep the copy from the
client. An answer in Russian passes untouched.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from guardrails.stream.canary import normalise
from tests.adversarial import utf8_chat_frames
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
LOOKALIKE = str.maketrans({"a": "а", "e": "е", "o": "ο", "p": "р", "c": "с", "i": "і", "s": "ѕ",
                           "x": "х", "y": "у", "j": "ј", "v": "ν", "t": "ᴛ", "n": "ɴ", "R": "ʀ", "A": "Α"})
LEAK = EXCERPT.translate(LOOKALIKE)
ANSWER = f"Sure, my instructions say: {LEAK} That is all."
RUSSIAN = ("Сегодня утром мы проверили сборку на всех серверах, и тесты прошли без ошибок. Если кэш снова "
           "промахнётся, посмотрите на политику вытеснения, прежде чем добавлять новые рабочие процессы.")


@pytest.fixture(scope="module")
def guard_proxy(upstream_server: FakeUpstream) -> Iterator[ProxyServer]:
    with ProxyServer(upstream_server.url, POLICY) as p:
        yield p


def test_the_leak_differs_from_the_prompt_in_most_words() -> None:
    assert LEAK not in SYSTEM and EXCERPT in SYSTEM
    assert sum(a != b for a, b in zip(LEAK, EXCERPT, strict=True)) > 50
    assert normalise(LEAK) == normalise(EXCERPT)


def _shows_no_run_of_the_prompt(seen: str) -> bool:
    """No ``MIN_CHARS`` normalised characters of the excerpt reached the client, in any letters."""
    shown, copied = normalise(seen), normalise(EXCERPT)
    return not any(copied[i:i + MIN_CHARS] in shown for i in range(len(copied) - MIN_CHARS + 1))


@pytest.mark.parametrize("api", APIS)
def test_a_prompt_copied_in_lookalikes_is_blocked_streamed(
        guard_proxy: ProxyServer, upstream: FakeUpstream, api: str) -> None:
    upstream.queue(Reply(text=ANSWER, deltas=list(ANSWER)))
    seen = sdk_call(guard_proxy.url, api, stream=True, system=SYSTEM)
    assert "[withheld: system prompt]" in seen.text
    assert seen.text.startswith("Sure, my instructions say:")  # the prose before the copy went out
    assert _shows_no_run_of_the_prompt(seen.text)
    assert seen.finish == FILTERED[api]


@pytest.mark.parametrize("api", APIS)
def test_a_prompt_copied_in_lookalikes_is_blocked_unary(
        guard_proxy: ProxyServer, upstream: FakeUpstream, api: str) -> None:
    upstream.queue(Reply(text=ANSWER))
    seen = sdk_call(guard_proxy.url, api, stream=False, system=SYSTEM)
    assert seen.text == "[withheld: system prompt]"


def test_lookalikes_split_across_writes_mid_letter_are_blocked(guard_proxy: ProxyServer, upstream: FakeUpstream) -> None:
    reply = Reply(text=ANSWER, deltas=[ANSWER[i:i + 3] for i in range(0, len(ANSWER), 3)])
    upstream.queue(Reply(raw_frames=utf8_chat_frames(reply), split_bytes=1))
    seen = sdk_call(guard_proxy.url, "chat", stream=True, system=SYSTEM)
    assert "[withheld: system prompt]" in seen.text
    assert _shows_no_run_of_the_prompt(seen.text)
    assert seen.finish == FILTERED["chat"]


@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize("api", APIS)
def test_an_answer_in_russian_passes_untouched(guard_proxy: ProxyServer, upstream: FakeUpstream, api: str,
                                               stream: bool) -> None:
    upstream.queue(Reply(text=RUSSIAN, deltas=[RUSSIAN[i:i + 2] for i in range(0, len(RUSSIAN), 2)]))
    seen = sdk_call(guard_proxy.url, api, stream=stream, system=SYSTEM)
    assert seen.text == RUSSIAN
    if stream:
        assert seen.finish == NORMAL[api]
