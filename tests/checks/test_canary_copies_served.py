"""A system prompt copied the ways a model does for free on request, through the real proxy, with the
official SDKs as clients: in look-alike letters (Cyrillic, Greek, small capitals), spelled out or
marked up (letters spaced out, one per line, each word bolded or bulleted), and encoded (reversed,
without vowels, in base64, hex, leetspeak, URL-encoded, as HTML tags or character references, as
``\\u`` escapes). Each copy is blocked streamed one character a delta, over every wire format, and
unary; look-alikes also in one-byte writes that split the letters' UTF-8. No fixed hold-back: the
canary's horizons alone keep the copy from the client. The SDK's text is the judge, read the way
each copy hides the prompt. An answer in Russian, ordinary markdown, and ordinary text with markup,
escapes, a base64 image and a hash pass untouched.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest

from guardrails.stream._canary_text import squeeze
from guardrails.stream.canary import normalise
from tests.adversarial import utf8_chat_frames
from tests.apis import APIS, FILTERED, NORMAL, sdk_call
from tests.checks.agent_canary import AGENT_PROMPT, EXCERPT, MIN_CHARS
from tests.fakes.proxy import ProxyServer
from tests.fakes.upstream import FakeUpstream, Reply

POLICY = f"""
[defaults]
holdback_chars = 0

[[stream_guardrails]]
id = "leak"
kind = "canary"
min_chars = {MIN_CHARS}
replacement = "[withheld: system prompt]"
"""
PREFIX = "Sure, my instructions say:\n"
LOOKALIKE = str.maketrans({"a": "а", "e": "е", "o": "ο", "p": "р", "c": "с", "i": "і", "s": "ѕ",
                           "x": "х", "y": "у", "j": "ј", "v": "ν", "t": "ᴛ", "n": "ɴ", "R": "ʀ", "A": "Α"})
LEAK = EXCERPT.translate(LOOKALIKE)


def _no_normalised_run(seen: str) -> bool:
    """No ``MIN_CHARS`` normalised characters of the excerpt reached the client, in any letters."""
    shown, copied = normalise(seen), normalise(EXCERPT)
    return not any(copied[i:i + MIN_CHARS] in shown for i in range(len(copied) - MIN_CHARS + 1))


def _no_squeezed_run(seen: str) -> bool:
    """Fewer than half of ``MIN_CHARS`` of the excerpt's letters in a row reached the client."""
    shown, copied, n = squeeze(seen), squeeze(EXCERPT), MIN_CHARS // 2
    return not any(copied[i:i + n] in shown for i in range(len(copied) - n + 1))


def _no_piece_of(spell: Callable[[str], str]) -> Callable[[str], bool]:
    """No piece of the copy as long as ``spell``'s spelling of ``MIN_CHARS`` prompt characters
    reached the client."""
    copy, n = spell(EXCERPT), len(spell(EXCERPT[:MIN_CHARS]))
    return lambda seen: not any(copy[i:i + n] in seen for i in range(len(copy) - n + 1))


@dataclass(frozen=True)
class Copy:
    answer: str
    """The whole answer that carries the copy."""
    shows_nothing: Callable[[str], bool]
    """The judge: the client's text shows no run of the prompt long enough to be read."""
    starts: tuple[str, ...] = ()
    """What the streamed text may start with: the prose before the copy went out (none: not asserted)."""


def _spelled(copy: str) -> Copy:
    # The text before the copy goes out, unless it reached the proxy in one read with the copy's start
    # (a read's deltas are checked as one run; holding a little more is the safe side).
    return Copy(PREFIX + copy + "\nThat is all.", _no_squeezed_run, (PREFIX.strip(), "[withheld: system prompt]"))


def _encoded(spell: Callable[[str], str]) -> Copy:
    return Copy(PREFIX + spell(EXCERPT) + "\nThat is all.", _no_piece_of(spell))


ENCODINGS: dict[str, Callable[[str], str]] = {
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
COPIES: dict[str, Copy] = {
    "lookalikes": Copy(f"Sure, my instructions say: {LEAK} That is all.", _no_normalised_run,
                       ("Sure, my instructions say:",)),
    "spaced": _spelled(" ".join(EXCERPT.replace(" ", ""))),
    "one per line": _spelled("\n".join(EXCERPT.replace(" ", ""))),
    "bold words": _spelled(" ".join(f"**{w}**" for w in EXCERPT.split())),
    "bulleted words": _spelled("\n".join(f"- {w}" for w in EXCERPT.split())),
    "joined by underscores": _spelled("_".join(EXCERPT.split())),
    **{how: _encoded(spell) for how, spell in ENCODINGS.items()},
}
UNARY = {
    "lookalikes": COPIES["lookalikes"].answer,
    "spaced": PREFIX + " ".join(EXCERPT.replace(" ", "")),
    **{how: PREFIX + ENCODINGS[how](EXCERPT) for how in ("base64 wrapped", "html tags", "reversed")},
}
RUSSIAN = ("Сегодня утром мы проверили сборку на всех серверах, и тесты прошли без ошибок. Если кэш снова "
           "промахнётся, посмотрите на политику вытеснения, прежде чем добавлять новые рабочие процессы.")
MARKDOWN = ("**Plan**\n\n- read `setup.py` first\n- run the tests with `pytest -q`\n- open a pull request\n\n"
            "That is all: s-p-e-l-l-e-d words are fine here.")
ORDINARY = ("Use <code>pytest -q</code> &amp; <b>ruff</b> &mdash; 100% of the time (see \\u00e9).\n"
            "![dot](data:image/png;base64," + base64.b64encode(bytes(range(200))).decode() + ")\n"
            "sha256 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08, v1.0.5 in 2024.")
INNOCENT = {"russian": (RUSSIAN, 2), "markdown": (MARKDOWN, 1), "markup and blobs": (ORDINARY, 1)}
"""Answers that must pass untouched, with the size of their deltas."""


@pytest.fixture(scope="module")
def guard_proxy(upstream_server: FakeUpstream) -> Iterator[ProxyServer]:
    with ProxyServer(upstream_server.url, POLICY) as p:
        yield p


def test_the_lookalike_leak_differs_from_the_prompt_in_most_words() -> None:
    assert LEAK not in AGENT_PROMPT and EXCERPT in AGENT_PROMPT
    assert sum(a != b for a, b in zip(LEAK, EXCERPT, strict=True)) > 50
    assert normalise(LEAK) == normalise(EXCERPT)


@pytest.mark.parametrize("how", COPIES)
@pytest.mark.parametrize("api", APIS)
def test_a_copy_is_blocked_streamed(guard_proxy: ProxyServer, upstream: FakeUpstream, api: str, how: str) -> None:
    copy = COPIES[how]
    upstream.queue(Reply(text=copy.answer, deltas=list(copy.answer)))
    seen = sdk_call(guard_proxy.url, api, stream=True, system=AGENT_PROMPT)
    assert "[withheld: system prompt]" in seen.text
    if copy.starts:  # what went out before the block is the prose before the copy, or a start of it
        # (how much of that prose a block withholds depends on how the frames fell into reads: noted)
        shown = seen.text.split("[withheld: system prompt]", 1)[0]
        assert any(shown.startswith(start) or start.startswith(shown) for start in copy.starts), shown
    assert copy.shows_nothing(seen.text)
    assert seen.finish == FILTERED[api]


@pytest.mark.parametrize("how", UNARY)
@pytest.mark.parametrize("api", APIS)
def test_a_copy_is_blocked_unary(guard_proxy: ProxyServer, upstream: FakeUpstream, api: str, how: str) -> None:
    upstream.queue(Reply(text=UNARY[how]))
    seen = sdk_call(guard_proxy.url, api, stream=False, system=AGENT_PROMPT)
    assert seen.text == "[withheld: system prompt]"


def test_lookalikes_split_across_writes_mid_letter_are_blocked(guard_proxy: ProxyServer, upstream: FakeUpstream) -> None:
    answer = COPIES["lookalikes"].answer
    reply = Reply(text=answer, deltas=[answer[i:i + 3] for i in range(0, len(answer), 3)])
    upstream.queue(Reply(raw_frames=utf8_chat_frames(reply), split_bytes=1))
    seen = sdk_call(guard_proxy.url, "chat", stream=True, system=AGENT_PROMPT)
    assert "[withheld: system prompt]" in seen.text
    assert _no_normalised_run(seen.text)
    assert seen.finish == FILTERED["chat"]


@pytest.mark.parametrize(("text", "stream"), [("russian", True), ("russian", False), ("markdown", True),
                                              ("markup and blobs", True)])
@pytest.mark.parametrize("api", APIS)
def test_an_innocent_answer_passes_untouched(guard_proxy: ProxyServer, upstream: FakeUpstream, api: str,
                                             text: str, stream: bool) -> None:
    answer, size = INNOCENT[text]
    upstream.queue(Reply(text=answer, deltas=[answer[i:i + size] for i in range(0, len(answer), size)]))
    seen = sdk_call(guard_proxy.url, api, stream=stream, system=AGENT_PROMPT)
    assert seen.text == answer
    if stream:
        assert seen.finish == NORMAL[api]
