"""The ``pii`` check on our own labelled set (``tests/data/pii_labelled.jsonl``, drawn by
``bench.pii_labelled``): at least 95% precision and recall per kind, no hit on a near miss family
beyond its share, and any split of any sample into deltas redacts what the whole text does."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.pii_labelled import KINDS, Sample, load, random_split, redactions, score

SAMPLES = load()
TARGET = 0.95


def test_the_set_holds_every_kind_and_near_misses() -> None:
    kinds = {s.kind for s in SAMPLES}
    assert kinds == {*KINDS, "negative"}
    assert sum(s.kind == "negative" for s in SAMPLES) >= 100


@pytest.mark.parametrize("kind", KINDS)
def test_precision_and_recall_per_kind(kind: str) -> None:
    result = score(SAMPLES)
    assert result.recall(kind) >= TARGET, result.misses[kind]
    assert result.precision(kind) >= TARGET, [hit for hit in result.false_hits if f"as {kind}" in hit]


def test_near_misses_are_not_personal_data() -> None:
    result = score([s for s in SAMPLES if s.kind == "negative"])
    assert result.false_hits == []


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda s: f"{s.kind}-{s.tag}")
def test_every_split_of_a_sample_redacts_what_the_whole_does(sample: Sample) -> None:
    whole = redactions(sample)
    assert redactions(sample, list(sample.text)) == whole
    rng = random.Random(sample.text)
    for _ in range(3):
        deltas = random_split(sample.text, rng)
        assert redactions(sample, deltas) == whole, deltas


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(SAMPLES), st.sampled_from(SAMPLES), st.lists(st.integers(1, 12), min_size=1, max_size=20))
def test_two_samples_back_to_back_split_anywhere(first: Sample, second: Sample, sizes: list[int]) -> None:
    """Two samples glued (what one answer carries), in deltas of the drawn sizes: the same
    redactions as the whole, with the first sample's regions armed."""
    text = first.text + " " + second.text
    glued = Sample("glued", "", text, [], first.regions)
    deltas, i, k = [], 0, 0
    while i < len(text):
        deltas.append(text[i:i + sizes[k % len(sizes)]])
        i, k = i + sizes[k % len(sizes)], k + 1
    assert redactions(glued, deltas) == redactions(glued)
