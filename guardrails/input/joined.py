"""Adjacent text parts of one message read as the model reads them: as one text.

A provider hands the model the text parts of one message (a chat ``content`` array, Anthropic text
blocks, Gemini ``parts``, Responses ``input_text`` items, a tool result's content list) as one run of
text. None of the three documents the separator it puts between them, and the servers that speak
their APIs differ: vLLM joins chat text parts with a newline, mlx-lm with nothing, others with a
space or a blank line. A secret, a deny pattern or an injection cut in two at a part boundary is
whole again in the model's reading, though no part holds it. So a group of adjacent parts is read
both ways, glued (``""``) and on separate lines (``"\\n"``), and each part alone where a finder
could find in a part what the line reading does not (``Finder.line_local``); whatever any reading
finds is masked in the parts (at least what reading each part alone finds).

A mask over a span that crosses a boundary is *split at the boundary*: each part keeps a piece of
the mask in place of its share of the span (pieces in proportion to the shares, none empty while
the mask has a character for each), so the parts glued read exactly as the whole text redacted.
Characters a separator stands for are the provider's, not the body's: a hit on those alone has
nothing to rewrite and is dropped (it is an artefact of the reading guessed, not text anybody sent).

Pure, no I/O. Cost: ``len(JOINS)`` scans of the group's text per check (one more, of each part alone,
for a finder that is not ``line_local``: a deny pattern may be anchored to a text's start), paid only
on groups of two or more parts, and cached with the group's other verdicts (``proxy.drive.input_guard``).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise

from guardrails.input.finders import Finder, Hit, Hits, disjoint, redacted

JOINS = ("", "\n")
"""The separators a group of parts is read with: none (what a tokenizer sees when a provider
concatenates) and a newline (vLLM's ``"\\n".join``). A space or a blank line breaks a token as a
newline does, so the newline reading stands for them for secrets and personal data; a deny pattern
that means any whitespace should say ``\\s+``."""


def _split(mask: str, shares: Sequence[int]) -> list[str]:
    """``mask`` cut into ``len(shares)`` pieces in proportion to ``shares`` (all positive), each
    piece non-empty while the mask has a character for each; the pieces glued are ``mask``."""
    n, total, m = len(shares), sum(shares), len(mask)
    cuts, covered = [0], 0
    for k, share in enumerate(shares[:-1], start=1):
        covered += share
        cut = round(m * covered / total)
        if m >= n:  # this piece gets a character, and enough are left for the pieces after it
            cut = min(max(cut, cuts[-1] + 1), m - (n - k))
        cuts.append(max(cut, cuts[-1]))
    cuts.append(m)
    return [mask[a:b] for a, b in pairwise(cuts)]


def spread(hits: Hits, lengths: Sequence[int], sep: int, per: list[list[Hit]]) -> None:
    """Add to ``per`` (one list per part) each hit on the parts joined with a separator of ``sep``
    characters, as hits on the parts it covers, its mask split at the boundaries."""
    starts, at = [], 0
    for n in lengths:
        starts.append(at)
        at += n + sep
    for h in hits:
        covers = [(i, max(h.start, s) - s, min(h.end, s + n) - s)
                  for i, (s, n) in enumerate(zip(starts, lengths, strict=True)) if max(h.start, s) < min(h.end, s + n)]
        if len(covers) == 1:
            i, a, b = covers[0]
            per[i].append(Hit(a, b, h.mask, h.category))
            continue
        pieces = _split(h.mask, [b - a for _, a, b in covers]) if covers else []
        for (i, a, b), piece in zip(covers, pieces, strict=True):
            per[i].append(Hit(a, b, piece, h.category))


def find_joined(finder: Finder, texts: Sequence[str]) -> tuple[Hits, ...]:
    """One finder's hits on a group of adjacent parts, per part: on each part alone and on every
    reading of the parts joined (``JOINS``), merged where they overlap (``disjoint``). A finder that
    is ``line_local`` finds each part's own hits in the newline reading: its parts are not read alone."""
    per: list[list[Hit]] = [[] for _ in texts] if finder.line_local else [list(finder.find(t)) for t in texts]
    lengths = [len(t) for t in texts]
    for sep in JOINS:
        found = finder.find(sep.join(texts))
        if found:
            spread(found, lengths, len(sep), per)
    return tuple(disjoint(p) for p in per)


def redact_all(texts: Sequence[str], hits: Sequence[Hits]) -> list[str]:
    """Each part with its hits redacted."""
    return [redacted(t, h) if h else t for t, h in zip(texts, hits, strict=True)]
