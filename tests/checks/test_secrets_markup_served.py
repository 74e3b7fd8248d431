"""A key split by markup or spelled with HTML character references (#29 class 4), through the real
proxy with the official SDKs as clients. A model can write ``ghp_**abc**def...``,
``AKIA`` + a code span, ``sk_live_&#x61;bc...``, ``&#103;hp_...``, ``ghp&lowbar;...``, a tag or a
comment between two characters: the client's Markdown renderer (or an HTML view) shows the whole
key. The judge of what a reader sees is an independent renderer, markdown-it-py (CommonMark, inline
HTML on, GFM strikethrough) followed by the standard library's HTML parser; each disguise is first
shown to render as the key, then the client's text, rendered the same way, must show none of it.
Streamed one character a delta and unary, over every wire format; with ``action = "redact"`` the
mask covers every markup character inside the key and the prose around it flows. Ordinary code and
docs (``**kwargs``, ``__init__``, ``&amp;``, ``a*b``, generics, emphasis around words) pass
untouched.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from html.parser import HTMLParser

import pytest
from markdown_it import MarkdownIt

from guardrails.text.invisible import drop_invisible
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
"""
REDACT_POLICY = """
[defaults]
holdback_chars = 0

[[stream_guardrails]]
id = "secrets"
kind = "secrets"
action = "redact"
mask = "[masked: {rule}]"
"""
SYSTEM = "You are a helpful assistant."
GITHUB = fill(TEMPLATES["github-token"], random.Random(29))
AWS = fill(TEMPLATES["aws-access-key-id"], random.Random(29))
STRIPE = fill(TEMPLATES["stripe-key"], random.Random(29))
_MD = MarkdownIt("commonmark").enable("strikethrough")


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []

    def handle_data(self, data: str) -> None:
        self.parts.append(data)


def _html_text(markup: str) -> str:
    parser = _Text()
    parser.feed(markup)
    parser.close()
    return drop_invisible("".join(parser.parts))


def rendered(text: str) -> str:
    """What a reader sees of ``text`` in a Markdown view (tags, comments and references as a
    browser shows them, invisible characters dropped)."""
    return _html_text(_MD.render(text))


def html_view(text: str) -> str:
    """What a reader sees of ``text`` shown as HTML."""
    return _html_text(text)


DISGUISES = {
    "bold": (GITHUB, f"ghp_**{GITHUB[4:14]}**{GITHUB[14:]}"),
    "italic": (GITHUB, f"{GITHUB[:12]}*{GITHUB[12:20]}*{GITHUB[20:]}"),
    "code spans": (AWS, f"`{AWS[:4]}`{AWS[4:12]}`{AWS[12:]}`"),
    "strikethrough": (STRIPE, f"{STRIPE[:14]}~~{STRIPE[14:18]}~~{STRIPE[18:]}"),
    "hex reference": (STRIPE, f"sk_live_&#x{ord(STRIPE[8]):x};{STRIPE[9:]}"),
    "decimal reference": (GITHUB, f"&#{ord('g')};hp_{GITHUB[4:]}"),
    "named reference": (GITHUB, f"ghp&lowbar;{GITHUB[4:]}"),
    "tags": (AWS, f"{AWS[:6]}<b>{AWS[6:12]}</b>{AWS[12:]}"),
    "comment": (GITHUB, f"{GITHUB[:20]}<!-- note -->{GITHUB[20:]}"),
    "zero-width reference": (GITHUB, f"{GITHUB[:10]}&#8203;{GITHUB[10:25]}&ZeroWidthSpace;{GITHUB[25:]}"),
    "backslash escape": (STRIPE, f"sk\\_live\\_{STRIPE[8:]}"),
}
BENIGN = (
    "Call `f(*args, **kwargs)` from `__init__`; in HTML write `&amp;` for `&` and `&lt;` for `<`.\n"
    "The area is `w*h` (so `2*3 == 6`), and x**2 grows fast. **Note:** `List<String> names` and "
    "`Map<K, V>` are generic types; <b>bold</b> and *emphasis* render as such.\n"
    "A query string: `https://httpbin.org/get?key1=value1&amp;key2=value2`; a path glob: `src/**/*.py`."
)


@pytest.fixture(scope="module")
def guard_proxy(upstream_server: FakeUpstream) -> Iterator[ProxyServer]:
    with ProxyServer(upstream_server.url, POLICY) as p:
        yield p


@pytest.fixture(scope="module")
def redact_proxy(upstream_server: FakeUpstream) -> Iterator[ProxyServer]:
    with ProxyServer(upstream_server.url, REDACT_POLICY) as p:
        yield p


def _shows_none_of(key: str, seen: str) -> bool:
    views = rendered(seen) + "\n" + html_view(seen)
    return key[-10:] not in views and key[4:14] not in views


@pytest.mark.parametrize("disguise", list(DISGUISES))
def test_each_disguise_renders_as_the_key(disguise: str) -> None:
    key, written = DISGUISES[disguise]
    assert key in rendered(f"Here it is: {written} done.")
    if disguise not in ("bold", "italic", "code spans", "strikethrough", "backslash escape"):
        assert key in html_view(f"Here it is: {written} done.")


@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("disguise", list(DISGUISES))
def test_a_key_split_by_markup_is_withheld(guard_proxy: ProxyServer, upstream: FakeUpstream, disguise: str,
                                           api: str, stream: bool) -> None:
    key, written = DISGUISES[disguise]
    text = f"Use {written} for the CI job."
    upstream.queue(Reply(text=text, deltas=list(text)) if stream else Reply(text=text))
    seen = sdk_call(guard_proxy.url, api, stream=stream, system=SYSTEM)
    assert _shows_none_of(key, seen.text), seen.text
    assert "[withheld: credential]" in seen.text
    if stream:
        assert seen.finish == FILTERED[api]


@pytest.mark.parametrize("api", ["chat", "anthropic"])
@pytest.mark.parametrize("disguise", list(DISGUISES))
def test_a_key_split_by_markup_is_masked_whole(redact_proxy: ProxyServer, upstream: FakeUpstream, disguise: str,
                                               api: str) -> None:
    key, written = DISGUISES[disguise]
    text = f"Use {written} for the CI job."
    upstream.queue(Reply(text=text, deltas=list(text)))
    seen = sdk_call(redact_proxy.url, api, stream=True, system=SYSTEM)
    assert _shows_none_of(key, seen.text), seen.text
    assert seen.text.startswith("Use ") and seen.text.endswith(" for the CI job.")
    assert "[masked: " in seen.text
    assert seen.finish == NORMAL[api]


@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize("api", APIS)
def test_ordinary_code_and_docs_with_markup_go_through(guard_proxy: ProxyServer, upstream: FakeUpstream,
                                                       api: str, stream: bool) -> None:
    upstream.queue(Reply(text=BENIGN, deltas=[BENIGN[i:i + 3] for i in range(0, len(BENIGN), 3)]) if stream
                   else Reply(text=BENIGN))
    seen = sdk_call(guard_proxy.url, api, stream=stream, system=SYSTEM)
    assert seen.text == BENIGN


@pytest.mark.parametrize("api", ["chat", "anthropic"])
def test_a_key_spelled_in_references_in_a_tool_write_is_withheld(guard_proxy: ProxyServer, upstream: FakeUpstream,
                                                                  api: str) -> None:
    """An HTML file the tool would write shows the key in any browser."""
    page = f"<p>token: &#{ord('g')};hp_{GITHUB[4:14]}<b>{GITHUB[14:]}</b></p>"
    assert GITHUB in html_view(page)
    upstream.queue(Reply(text="Writing the page.", tool_calls=[("write_file", {"path": "index.html", "content": page})]))
    seen = sdk_call(guard_proxy.url, api, stream=True, system=SYSTEM)
    assert not seen.tool_calls
    assert "[withheld: credential]" in seen.text
