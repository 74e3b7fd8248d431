"""The public suffix list, loaded once for every family that reads host names (tool egress, PII
emails): the snapshot bundled with ``publicsuffixlist``, never fetched at run time."""

from __future__ import annotations

from functools import lru_cache

from publicsuffixlist import PublicSuffixList


@lru_cache(maxsize=1)
def public_suffixes() -> PublicSuffixList:
    """The bundled list, parsed on first use (about 10k rules) and shared by every caller."""
    return PublicSuffixList()
