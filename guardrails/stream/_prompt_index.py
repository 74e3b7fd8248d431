"""What the canary keeps of one system prompt, and the cache that makes turn N of a conversation free.

``PromptIndex`` holds the normalised prompt's shingle hashes (detection) and its ``qgram`` hashes
(the horizon), and the same of the prompt's letters alone (``squeezed``: the view a
spelled-out copy is compared in). ``PromptIndexCache`` keys them by the *raw* prompt itself: a hit costs Python's own
string hash (computed once per string object) and one comparison with the kept copy, so it is exact
(no digest collision can hand a stream another prompt's index) and cheaper than a digest (a BLAKE2b
pass plus the UTF-8 encoding cost ~30 us at 15 KB). It evicts the least recently used index once the
kept prompts and indexes' estimated size passes ``budget_bytes``.
"""

from __future__ import annotations

import sys
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

# A set entry costs its slot (about 2 x 8 bytes at the load factor CPython keeps) plus an int
# object for a 64-bit hash (32 bytes).
_BYTES_PER_ENTRY = 48


@dataclass(frozen=True, slots=True)
class PromptIndex:
    shingles: frozenset[int]
    qgrams: frozenset[int]
    normalised_chars: int
    squeezed: PromptIndex | None = None
    """The index of the prompt's letters alone (``_canary_text.squeeze``); None when
    there are fewer than the canary's ``min_chars`` of them."""

    @property
    def size_bytes(self) -> int:
        own = (sys.getsizeof(self.shingles) + sys.getsizeof(self.qgrams)
               + _BYTES_PER_ENTRY * (len(self.shingles) + len(self.qgrams)))
        return own + (self.squeezed.size_bytes if self.squeezed is not None else 0)


class PromptIndexCache:
    """LRU by bytes. Not thread-safe: one per provider, used from the event loop."""

    def __init__(self, budget_bytes: int) -> None:
        self.budget_bytes = budget_bytes
        self.used_bytes = 0
        self.hits = 0
        self.misses = 0
        self._entries: OrderedDict[str, PromptIndex] = OrderedDict()

    def get(self, prompt: str, build: Callable[[str], PromptIndex]) -> PromptIndex:
        index = self._entries.get(prompt)
        if index is not None:
            self.hits += 1
            self._entries.move_to_end(prompt)
            return index
        self.misses += 1
        index = build(prompt)
        self._keep(prompt, index)
        return index

    def has(self, prompt: str) -> bool:
        """Whether ``prompt``'s index is cached (not counted as a hit or a miss)."""
        return prompt in self._entries

    def put(self, prompt: str, index: PromptIndex) -> None:
        """Keep an index built elsewhere (in a worker thread: the cache itself stays on the loop)."""
        if prompt not in self._entries:
            self._keep(prompt, index)

    def _keep(self, prompt: str, index: PromptIndex) -> None:
        size = _size(prompt, index)
        if size > self.budget_bytes:
            return  # larger than the whole budget: used for this stream, not kept
        self._entries[prompt] = index
        self.used_bytes += size
        while self.used_bytes > self.budget_bytes:
            evicted, evicted_index = self._entries.popitem(last=False)
            self.used_bytes -= _size(evicted, evicted_index)

    def __len__(self) -> int:
        return len(self._entries)


def _size(prompt: str, index: PromptIndex) -> int:
    return sys.getsizeof(prompt) + index.size_bytes
