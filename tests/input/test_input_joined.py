"""A mask over a span that crosses part boundaries, split at the boundaries (``guardrails.input.joined``)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import httpx

from config.policy import parse_policy
from guardrails.input.build import SpanCheck, build_input_checks
from guardrails.input.finders import Finder, Hit
from guardrails.input.joined import spread
from tests.secret_samples import TEMPLATES, fill


def _spread(lengths: list[int], hit: Hit, sep: int = 0) -> list[list[Hit]]:
    per: list[list[Hit]] = [[] for _ in lengths]
    spread((hit,), lengths, sep, per)
    return per


def test_each_part_keeps_a_piece_and_the_pieces_glued_are_the_mask() -> None:
    mask = "[REDACTED:aws]"
    for lengths, start, end in (([5, 5], 2, 8), ([3, 1, 6], 1, 9), ([10, 1, 1, 1], 0, 13), ([4, 20], 3, 24)):
        per = _spread(lengths, Hit(start, end, mask, "aws"))
        pieces = [h.mask for hits in per for h in hits]
        assert "".join(pieces) == mask and all(pieces)
        assert sum(h.end - h.start for hits in per for h in hits) == end - start


def test_a_mask_shorter_than_the_parts_still_covers_each_and_a_separator_is_not_rewritten() -> None:
    per = _spread([2, 2, 2], Hit(1, 5, "*", "x"))
    assert [(h.start, h.end) for hits in per for h in hits] == [(1, 2), (0, 2), (0, 1)]
    assert "".join(h.mask for hits in per for h in hits) == "*"
    assert _spread([2, 2], Hit(2, 3, "*", "x"), sep=1) == [[], []]  # the newline between them alone
    per = _spread([2, 2], Hit(1, 4, "ab", "x"), sep=1)  # across the newline
    assert [[(h.start, h.end, h.mask) for h in hits] for hits in per] == [[(1, 2, "a")], [(0, 1, "b")]]


def _line_local_finders() -> list[Finder]:
    policy = parse_policy("".join(f'[[input_guardrails]]\nid = "{k}"\nkind = "{k}"\naction = "redact"\n'
                                  for k in ("secrets", "pii", "hidden_text")), source="<test>")
    return [c.finder.inner for c in build_input_checks(policy.input_guardrails, Path("."), httpx.AsyncClient(), "x")
            if isinstance(c, SpanCheck)]


def test_a_line_local_finder_finds_each_texts_own_hits_with_its_neighbours_on_other_lines() -> None:
    """What lets a group's parts go unread alone (``Finder.line_local``): over the labelled PII samples
    and a key of each catalog rule, every hit of a text alone is covered by the hits on it joined to
    random neighbours by newlines."""
    rng = random.Random(7)
    texts = [json.loads(line)["text"] for line in (Path(__file__).parents[1] / "data" / "pii_labelled.jsonl")
             .read_text().splitlines()]
    texts += [f"key {fill(t, rng)} here" for t in TEMPLATES.values()]
    texts += ["a\u200bb", "x\u202eevil\u202c", "SSN:", "123-45-6789", "+1 415 555 0100"]
    checked = 0
    for finder in _line_local_finders():
        assert finder.line_local
        for _ in range(400):
            group = rng.sample(texts, rng.randint(2, 3))
            per: list[list[Hit]] = [[] for _ in group]
            spread(finder.find("\n".join(group)), [len(t) for t in group], 1, per)
            for text, hits in zip(group, per, strict=True):
                covered = {i for h in hits for i in range(h.start, h.end)}
                for own in finder.find(text):
                    assert set(range(own.start, own.end)) <= covered, (finder.reason_code, group)
                    checked += 1
    assert checked > 200
