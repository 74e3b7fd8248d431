"""A key id glued to the word after it (``AKIA...BWP3NNothing``) is still a leak: the client shows the
key, whatever follows it. Scanners that end a key id at a word boundary miss it; the guard ends an
upper-case key id where its run of capitals ends, where a lower-case word begins or where digits are
glued on (the format is 20 characters: #29 class 4). A run that goes on in capitals is another token
and passes, as do ordinary words.

Other formats with a prefix of their own and a fixed length are found glued too: GitHub, GitLab,
Slack and Stripe keys after a letter, ``_`` or a digit, a GitHub key before letters or digits."""

from __future__ import annotations

import random

import pytest

from tests.adversarial import SECRET, client_sees
from tests.checks.test_secrets_catalog import blocked_category
from tests.fakes.proxy import ProxyServer
from tests.fakes.upstream import FakeUpstream, Reply
from tests.secret_samples import TEMPLATES, fill
from tests.stream_support import random_chunks

GLUED = [f"{SECRET}Nothing to add.", f"{SECRET}nothing to add.", f"Here:{SECRET}Nothing", f"the{SECRET}Is it",
         "ASIAY3K7QW2ZP5MN4RT6Done", f"{SECRET}Ok", f"{SECRET}7", f"42{SECRET}", f"7{SECRET}99"]


@pytest.mark.parametrize("text", GLUED)
def test_a_key_id_glued_to_a_word_is_blocked_whole_and_streamed(text: str) -> None:
    assert blocked_category(text, [text]) == "aws"
    assert blocked_category(text) == "aws"  # one character at a time
    assert blocked_category(text, list(random_chunks(text, seed=7))) == "aws"


@pytest.mark.parametrize("text", [
    f"{SECRET}NOTHING", f"{SECRET}N", f"X{SECRET}Nothing",
    "AKIAIOSFODNN7EXAMPLEThing", "ACCAUNTINGDEPARTMENTSOverview", "ASIA is big.", "ABIAS Nothing",
])
def test_longer_runs_examples_and_words_pass(text: str) -> None:
    assert blocked_category(text + " and more.") is None


@pytest.mark.parametrize("api", ["chat", "anthropic", "gemini"])
def test_a_glued_key_id_never_reaches_the_client(secrets_guard: ProxyServer, upstream: FakeUpstream, api: str) -> None:
    reply = Reply(text=f"The key is {SECRET}Nothing else.", deltas=["The key is AKIAQ7XR", "4K2MZT9BWP3N", "Nothing else."])
    seen = client_sees(secrets_guard.url, api, lambda: upstream.queue(reply))
    assert SECRET not in seen.everything() and "4K2MZT9BWP3N" not in seen.everything()
    assert seen.sdk is not None and "[withheld: credential]" in seen.sdk.text, seen.sdk_error


_OTHER = {
    "github": fill(TEMPLATES["github-token"], random.Random(29)),
    "gitlab": fill(TEMPLATES["gitlab-token"], random.Random(29)),
    "slack": fill(TEMPLATES["slack-token"], random.Random(29)),
    "stripe": fill(TEMPLATES["stripe-key"], random.Random(29)),
}


@pytest.mark.parametrize("family", sorted(_OTHER))
@pytest.mark.parametrize("before", ["x", "_", "7", "ab_"])
def test_a_prefixed_key_after_a_letter_underscore_or_digit_is_blocked(family: str, before: str) -> None:
    text = f"Use {before}{_OTHER[family]} now."
    for chunks in ([text], list(text), list(random_chunks(text, seed=4))):
        assert blocked_category(text, chunks) == family, (text, chunks)


@pytest.mark.parametrize("after", ["abc", "Xyz", "123", "_v2"])
def test_a_github_key_before_letters_or_digits_is_blocked(after: str) -> None:
    text = f"Use {_OTHER['github']}{after} now."
    for chunks in ([text], list(text), list(random_chunks(text, seed=4))):
        assert blocked_category(text, chunks) == "github", (text, chunks)
