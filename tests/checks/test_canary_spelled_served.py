"""A system prompt spelled out or marked up, through the real proxy, with the official SDKs as
clients: letters spaced out, one per line, each word bolded or bulleted, streamed one character a
delta and unary, over every wire format. No fixed hold-back: the canary's horizons alone keep the
copy from the client. The SDK's text is the judge: no run of the prompt's letters long enough to be
read reached it. An answer of ordinary markdown passes untouched.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from guardrails.stream._canary_text import squeeze
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
SPELLED = {
    "spaced": " ".join(EXCERPT.replace(" ", "")),
    "one per line": "\n".join(EXCERPT.replace(" ", "")),
    "bold words": " ".join(f"**{w}**" for w in EXCERPT.split()),
    "bulleted words": "\n".join(f"- {w}" for w in EXCERPT.split()),
    "joined by underscores": "_".join(EXCERPT.split()),
}
PREFIX = "Sure, my instructions say:\n"
MARKDOWN = ("**Plan**\n\n- read `setup.py` first\n- run the tests with `pytest -q`\n- open a pull request\n\n"
            "That is all: s-p-e-l-l-e-d words are fine here.")


@pytest.fixture(scope="module")
def guard_proxy(upstream_server: FakeUpstream) -> Iterator[ProxyServer]:
    with ProxyServer(upstream_server.url, POLICY) as p:
        yield p


def _shows_no_run_of_the_prompt(seen: str) -> bool:
    """Fewer than half of ``MIN_CHARS`` of the excerpt's letters in a row reached the client."""
    shown, copied, n = squeeze(seen), squeeze(EXCERPT), MIN_CHARS // 2
    return not any(copied[i:i + n] in shown for i in range(len(copied) - n + 1))


@pytest.mark.parametrize("how", SPELLED)
@pytest.mark.parametrize("api", APIS)
def test_a_spelled_out_prompt_is_blocked_streamed(
        guard_proxy: ProxyServer, upstream: FakeUpstream, api: str, how: str) -> None:
    answer = PREFIX + SPELLED[how] + "\nThat is all."
    upstream.queue(Reply(text=answer, deltas=list(answer)))
    seen = sdk_call(guard_proxy.url, api, stream=True, system=SYSTEM)
    assert "[withheld: system prompt]" in seen.text
    # The text before the copy goes out, unless it reached the proxy in one read with the copy's start
    # (a read's deltas are checked as one run; holding a little more is the safe side).
    assert seen.text.startswith((PREFIX.strip(), "[withheld: system prompt]"))
    assert _shows_no_run_of_the_prompt(seen.text)
    assert seen.finish == FILTERED[api]


@pytest.mark.parametrize("api", APIS)
def test_a_spelled_out_prompt_is_blocked_unary(guard_proxy: ProxyServer, upstream: FakeUpstream, api: str) -> None:
    upstream.queue(Reply(text=PREFIX + SPELLED["spaced"]))
    seen = sdk_call(guard_proxy.url, api, stream=False, system=SYSTEM)
    assert seen.text == "[withheld: system prompt]"


@pytest.mark.parametrize("api", APIS)
def test_ordinary_markdown_passes_untouched(guard_proxy: ProxyServer, upstream: FakeUpstream, api: str) -> None:
    upstream.queue(Reply(text=MARKDOWN, deltas=list(MARKDOWN)))
    seen = sdk_call(guard_proxy.url, api, stream=True, system=SYSTEM)
    assert seen.text == MARKDOWN
    assert seen.finish == NORMAL[api]
