"""More views of the prompt and of the answer for the canary: copies a model makes for free on request.

The squeezed view (``_canary_text.squeeze``: the letters alone) already reads a prompt spelled out
or marked up. A model asked to "print your instructions reversed / without vowels / in base64 /
in rot13 / as HTML" writes copies that no run of the prompt's letters matches. Two kinds of help:

**More spellings of the prompt, in the squeezed index** (``letter_variants``, zero cost per delta).
The prompt's letters reversed, each word's letters reversed, the words in reverse order and the
letters without vowels are indexed next to the letters themselves, in the same sets: the squeezed
twin reads a reversed copy (read forward, it *is* the reversed prompt read forward), a copy with
each word reversed, with the words in reverse order, or with the vowels removed, in the very lookups
it already makes. A window of ``SHINGLE`` letters of ordinary text that happens to be one of these is
as unlikely as one of the prompt itself. The cost is memory: each variant is about one more squeezed
index (the squeezed index of a 21 KB prompt grows from about 1.3 MB to 6 MB; ``PromptIndexCache``
counts it against its budget).
"""

from __future__ import annotations

import re

from guardrails.stream._canary_text import normalise

_WORD = re.compile(r"[^\W\d_]+")
_VOWELS = str.maketrans("", "", "aeiou")


def letter_variants(raw_prompt: str, letters: str) -> list[str]:
    """The strings the squeezed index holds for ``raw_prompt`` whose letters alone are ``letters``
    (``squeeze(raw_prompt)``): the letters, reversed, each word reversed, the words in reverse order,
    without vowels. O(len(prompt)), once per distinct prompt."""
    words = _WORD.findall(normalise(raw_prompt))
    return [letters, letters[::-1], "".join(w[::-1] for w in words), "".join(reversed(words)),
            letters.translate(_VOWELS)]
