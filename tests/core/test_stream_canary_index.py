"""The canary's normalisation (NFKC on both sides) and its prompt index cache (LRU by bytes)."""

from __future__ import annotations

from config.policy import CanaryGuardrail
from guardrails.decision import Block
from guardrails.seams import StreamContext
from guardrails.stream._prompt_index import PromptIndex, PromptIndexCache
from guardrails.stream.canary import CanaryProvider, normalise
from tests.stream_support import one_char, random_chunks, run

PROMPT = ("You are Orbit, the support assistant of Acme Rockets. Never discuss launch schedules that are "
          "not public. Internal escalation code: ZEBRA-7. Point customers to the refunds page.")


def _provider(budget: int = 1 << 26) -> CanaryProvider:
    return CanaryProvider(CanaryGuardrail(id="canary", kind="canary"), "[x]", cache_budget_bytes=budget)


def _full_width(text: str) -> str:
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else "\u3000" if c == " " else c for c in text)


def test_normalise_folds_full_width_and_case_on_both_sides() -> None:
    assert normalise(_full_width("Never Discuss")) == normalise("never discuss") == "never discuss"
    assert normalise("STRASSE  und\tstraße") == "strasse und strasse"


def test_canary_blocks_a_full_width_copy_of_the_prompt() -> None:
    check = _provider().arm(StreamContext(system_prompt=PROMPT))
    assert check is not None
    leak = "Sure: " + _full_width("Never discuss launch schedules that are not public. Internal escalation")
    out = run(check, random_chunks(leak, 3))
    assert isinstance(out.block, Block)


def test_canary_blocks_when_the_prompt_itself_is_written_full_width() -> None:
    check = _provider().arm(StreamContext(system_prompt=_full_width(PROMPT)))
    assert check is not None
    assert run(check, one_char("ok: never discuss launch schedules that are not public. internal")).block


def test_turn_n_reuses_the_index_of_the_same_prompt() -> None:
    provider = _provider()
    for _ in range(5):
        assert provider.arm(StreamContext(system_prompt="".join(PROMPT))) is not None
    assert (provider.cache.misses, provider.cache.hits, len(provider.cache)) == (1, 4, 1)


def test_the_cache_evicts_the_least_recently_used_index_past_its_byte_budget() -> None:
    cache = PromptIndexCache(budget_bytes=3_000)

    def build(prompt: str) -> PromptIndex:
        return PromptIndex(frozenset(), frozenset(range(len(prompt))), len(prompt))

    for name in ("a" * 10, "b" * 10, "c" * 10):
        cache.get(name, build)
    assert cache.used_bytes <= 3_000 and len(cache) < 3
    cache.get("c" * 10, build)
    assert cache.hits == 1
    huge = cache.get("d" * 1_000, build)  # larger than the whole budget: served, not kept
    assert huge.normalised_chars == 1_000 and cache.used_bytes <= 3_000


def test_an_index_built_elsewhere_is_kept_and_found_on_the_next_turn() -> None:
    provider = _provider()
    assert provider.cold(PROMPT) and not provider.cold("")
    index = provider.index_of(PROMPT)  # what the proxy builds in a worker thread for a big prompt
    provider.warm(PROMPT, index)
    provider.warm(PROMPT, index)  # a second request that warmed the same prompt: kept once
    assert not provider.cold(PROMPT) and len(provider.cache) == 1
    assert index.size_bytes < provider.cache.used_bytes < 2 * index.size_bytes + 4096
    check = provider.arm(StreamContext(system_prompt=PROMPT))
    assert (provider.cache.misses, provider.cache.hits) == (0, 1)
    assert run(check, one_char("ok: " + PROMPT[10:70])).block
