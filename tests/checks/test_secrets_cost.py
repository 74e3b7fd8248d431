"""The secrets check's work is bounded per byte of the answer, whatever the answer is made of.

A run of one keyword's letters (``aaaa...``: twitter's 21 a's, dropbox's 10, one hit per character)
or of a keyword itself (``keykeykey...``: the generic assignment's name, one hit per three) used to
keep dozens of hits pending, each retried on every delta by a regex that searched to the end of its
window: about 20 us per character for the a's and 340 us for ``key`` (17 s for 50 K characters).
Here the work is counted from outside the scanner: every regex call the rules make is charged the
offsets it may try times the characters each may read (a search from ``pos`` to ``endpos`` tries
every offset in between). No timing: the count is what grows when a hit is retried too often.
Derandomized (a fixed sequence of examples, the same on every run).
"""

from __future__ import annotations

import dataclasses
import random
import re
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from config.policy import SecretsGuardrail
from guardrails.decision import Block
from guardrails.seams import StreamContext
from guardrails.stream.keyword_scan import KeywordIndex
from guardrails.stream.secrets import SecretsProvider
from tests.secret_samples import TEMPLATES, fill
from tests.stream_support import random_chunks, run

WORK_PER_BYTE = 4096
"""Measured: 0 on prose without keywords, about 1,400 at worst (a run of ``a`` or ``|``), the same
for one-character deltas as for twelve; the old scanner's count grew with the number of deltas
(every pending hit searched to its window's end on every delta), far past this on the runs below."""
BANK = 64 * 1024
"""Work any text may cost up front (one settling of the pending hits at the end of the answer)."""


class Counted:
    """A compiled pattern that charges each call the work it may do to a shared counter."""

    def __init__(self, pattern: Any, width: int, spent: list[int]) -> None:
        self._pattern, self._width, self._spent = pattern, width, spent

    def _span(self, text: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[int, int]:
        pos = args[0] if args else kwargs.get("pos", 0)
        endpos = args[1] if len(args) > 1 else kwargs.get("endpos", len(text))
        return pos, min(endpos, len(text))

    def match(self, text: str, *args: Any, **kwargs: Any) -> Any:
        pos, end = self._span(text, args, kwargs)
        self._spent[0] += min(end - pos, self._width + 64) + 1
        return self._pattern.match(text, *args, **kwargs)

    def search(self, text: str, *args: Any, **kwargs: Any) -> Any:
        pos, end = self._span(text, args, kwargs)
        self._spent[0] += (end - pos + 1) * (min(end - pos, self._width + 64) + 1)
        return self._pattern.search(text, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._pattern, name)


def _counted_provider() -> tuple[SecretsProvider, list[int]]:
    provider = SecretsProvider(SecretsGuardrail(id="s", kind="secrets"), "[withheld]")
    assert provider.index is not None
    spent = [0]
    rules = []
    for rule in provider.index.rules:
        rules.append(dataclasses.replace(rule, pattern=Counted(rule.pattern, rule.width, spent)))
    provider.index = KeywordIndex(rules)
    return provider, spent


PROVIDER, SPENT = _counted_provider()
CTX = StreamContext(system_prompt="")
KEYWORDS = sorted({k for rule in PROVIDER.index.rules for k in rule.keywords} if PROVIDER.index else set())
FRAGMENTS = [*KEYWORDS, *(k.upper() for k in KEYWORDS), "=", ":", " = ", '"', "'", "_", "-", ".", "a", "A", "0",
             " ", "\n", "|", "/", "key", "api_key=", "password: ", "Bearer ", "-----BEGIN ", "eyJ"]
repeated = st.tuples(st.lists(st.sampled_from(FRAGMENTS), min_size=1, max_size=3).map("".join),
                     st.integers(min_value=50, max_value=1500)).map(lambda t: (t[0] * t[1])[:6000])
mixed = st.lists(st.sampled_from(FRAGMENTS), max_size=400).map("".join)


def _work(text: str, hi: int, seed: int = 1) -> tuple[int, bool]:
    SPENT[0] = 0
    check = PROVIDER.arm(CTX)
    assert check is not None
    out = run(check, random_chunks(text, seed, 1, hi))
    return SPENT[0], out.block is not None


@settings(deadline=None, max_examples=60, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(repeated, mixed), st.sampled_from([1, 4, 12]))
def test_the_secrets_check_is_bounded_per_byte(text: str, hi: int) -> None:
    work, _ = _work(text, hi)
    assert work <= BANK + WORK_PER_BYTE * len(text), (work, len(text), text[:40])


def test_runs_of_a_keywords_letters_and_of_a_keyword_cost_a_bounded_amount_per_byte() -> None:
    for unit in ("a", "A", "key", "KEY", "pwd", "okta", "sumo-", "aaaaaaaaaaaaaaaaaaaaaa"):
        text = (unit * 20_000)[:20_000]
        work, blocked = _work(text, 4)
        assert work <= BANK + WORK_PER_BYTE * len(text), (unit, work)
        assert not blocked, unit


def test_a_secret_after_a_costly_run_is_still_found() -> None:
    secret = fill(TEMPLATES["github-token"], random.Random(5))
    for unit in ("key", "a", "okta"):
        text = unit * 5000 + " and then " + secret + " done."
        _, blocked = _work(text, 4)
        assert blocked, unit


def test_ordinary_text_costs_little() -> None:
    text = "Use the `api_key` parameter; the token is read from the environment. " * 200
    work, blocked = _work(text, 6)
    assert not blocked
    assert work <= 64 * len(text), work


def test_the_block_names_the_check() -> None:
    secret = fill(TEMPLATES["github-token"], random.Random(6))
    check = PROVIDER.arm(CTX)
    assert check is not None
    out = run(check, list("here: " + secret + " ok"))
    assert isinstance(out.block, Block) and re.search("credential", out.block.rationale)
