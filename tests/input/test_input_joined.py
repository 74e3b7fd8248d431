"""A mask over a span that crosses part boundaries, split at the boundaries (``guardrails.input.joined``)."""

from __future__ import annotations

from guardrails.input.finders import Hit
from guardrails.input.joined import spread


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
