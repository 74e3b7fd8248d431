"""The streaming secrets check decides as a whole-text scan would, whatever the chunking.

The oracle tries every rule's regex at every offset of the finished text (no keywords, no
pending hits, no settling) and blocks if any match is a credential. The keyword scanner must
agree on every text; and every text a rule can match must hold one of its keywords where the
scanner looks for it (``back`` characters or fewer after the match start).
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from config.policy import SecretsGuardrail
from guardrails.decision import Block
from guardrails.seams import StreamContext
from guardrails.stream.secrets import SecretsProvider, is_credential
from tests.checks.test_stream_guardrails_secrets import FALSE_POSITIVES, SAMPLES
from tests.secret_samples import TEMPLATES, fake, fill
from tests.stream_support import random_chunks, run

CTX = StreamContext(system_prompt="")
PROVIDER = SecretsProvider(SecretsGuardrail(id="s", kind="secrets"), "[withheld]")
assert PROVIDER.index is not None
SCAN_RULES = PROVIDER.index.rules


def oracle_blocks(text: str) -> bool:
    for scan in SCAN_RULES:
        rule = PROVIDER.rows[scan.name]
        for at in range(len(text)):
            match = scan.pattern.match(text, at)
            if match is not None and match.end() > at and is_credential(rule, match):
                return True
    return False


def stream_blocks(text: str, seed: int, hi: int) -> bool:
    check = PROVIDER.arm(CTX)
    assert check is not None
    return run(check, random_chunks(text, seed, 1, hi)).block is not None


_rng = random.Random(11)
PIECES = [
    *SAMPLES.values(), *FALSE_POSITIVES,
    *(fill(t, _rng) for t in TEMPLATES.values()), *(fake(t) for t in TEMPLATES.values()),
    "sk-", "AKIA", "ghp_", "xoxb-", "eyJ", ".eyJ", "-----BEGIN", "://", "@", ":AA", "Q~", "api_key", "password",
    "datadog_", "Bearer ", " = ", "=", ":", '"', "'", " ", "\n", "<password>", "</password>", ", ",
]
TEXT = st.lists(st.one_of(st.sampled_from(PIECES), st.text("abAB09_-.:=/@ \n'\"", max_size=10)),
                max_size=10).map("".join)


@settings(max_examples=300, deadline=None)
@given(TEXT, st.integers(0, 10_000), st.integers(1, 14))
def test_stream_decides_as_the_whole_text_oracle(text: str, seed: int, hi: int) -> None:
    assert stream_blocks(text, seed, hi) == oracle_blocks(text)


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_every_sample_decides_as_the_oracle_in_context(name: str) -> None:
    secret = fill(TEMPLATES[name], random.Random(name))
    for text in (f"x={secret}", f"{secret}", f"see {secret}, then {fake(TEMPLATES[name])}."):
        assert stream_blocks(text, 1, 1) == oracle_blocks(text) == stream_blocks(text, 2, 9), text


@settings(max_examples=25, deadline=None)
@given(st.data())
@pytest.mark.parametrize("index", range(len(SCAN_RULES)))
def test_every_rule_match_holds_a_keyword_where_the_scanner_looks(index: int, data: st.DataObject) -> None:
    scan = SCAN_RULES[index]
    text = data.draw(st.from_regex(scan.pattern, fullmatch=True))
    match = scan.pattern.match(text)
    if match is None:  # a lookaround the generator could not honour
        return
    lowered = text.lower()
    assert any(lowered.startswith(k, at) for k in scan.keywords for at in range(match.start(),
                                                                              match.start() + scan.back + 1)), text
    assert not any(ch.isspace() for ch in text[:scan.back + 1][:_keyword_at(lowered, scan.keywords)]), text


def _keyword_at(lowered: str, keywords: tuple[str, ...]) -> int:
    return min((i for i in (lowered.find(k) for k in keywords) if i >= 0), default=0)


def test_a_blocked_stream_blocks_before_the_window_passes_the_match() -> None:
    secret = fill(TEMPLATES["github-token"], random.Random(3))
    text = "Sure: " + secret + " and more prose. " * 20
    out = run(PROVIDER.arm(CTX), list(text))  # type: ignore[arg-type]
    assert isinstance(out.block, Block) and out.blocked_at == len("Sure: ") + len(secret)  # its length is fixed
