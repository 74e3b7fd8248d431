"""What the canary keeps of one system prompt, and the cache that makes turn N of a conversation free.

``PromptIndex`` holds the normalised prompt's shingle hashes (detection) and its ``qgram`` hashes
(the horizon). ``PromptIndexCache`` keys them by a BLAKE2b digest of the *raw* prompt, so a hit
costs one pass of a C hash over the prompt (no normalisation, no slicing), and evicts the least
recently used index once the cached indexes' estimated size passes ``budget_bytes``.
"""

from __future__ import annotations

import hashlib
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

    @property
    def size_bytes(self) -> int:
        return (sys.getsizeof(self.shingles) + sys.getsizeof(self.qgrams)
                + _BYTES_PER_ENTRY * (len(self.shingles) + len(self.qgrams)))


class PromptIndexCache:
    """LRU by bytes. Not thread-safe: one per provider, used from the event loop."""

    def __init__(self, budget_bytes: int) -> None:
        self.budget_bytes = budget_bytes
        self.used_bytes = 0
        self.hits = 0
        self.misses = 0
        self._entries: OrderedDict[bytes, PromptIndex] = OrderedDict()
        self._last: tuple[str, bytes] = ("", _key(""))
        """The last prompt digested, with its key: one request asks for the same prompt object twice
        (warming, then arming), and a 15 KB agent prompt costs ~10 us to digest."""

    def get(self, prompt: str, build: Callable[[str], PromptIndex]) -> PromptIndex:
        key = self._key(prompt)
        index = self._entries.get(key)
        if index is not None:
            self.hits += 1
            self._entries.move_to_end(key)
            return index
        self.misses += 1
        index = build(prompt)
        self._keep(key, index)
        return index

    def has(self, prompt: str) -> bool:
        """Whether ``prompt``'s index is cached (not counted as a hit or a miss)."""
        return self._key(prompt) in self._entries

    def put(self, prompt: str, index: PromptIndex) -> None:
        """Keep an index built elsewhere (in a worker thread: the cache itself stays on the loop)."""
        key = self._key(prompt)
        if key not in self._entries:
            self._keep(key, index)

    def _key(self, prompt: str) -> bytes:
        last, key = self._last
        if prompt is not last:  # the very same object: same text (no content comparison)
            key = _key(prompt)
            self._last = (prompt, key)
        return key

    def _keep(self, key: bytes, index: PromptIndex) -> None:
        size = index.size_bytes
        if size > self.budget_bytes:
            return  # larger than the whole budget: used for this stream, not kept
        self._entries[key] = index
        self.used_bytes += size
        while self.used_bytes > self.budget_bytes:
            _, evicted = self._entries.popitem(last=False)
            self.used_bytes -= evicted.size_bytes

    def __len__(self) -> int:
        return len(self._entries)


def _key(prompt: str) -> bytes:
    return hashlib.blake2b(prompt.encode("utf-8", "surrogatepass"), digest_size=16).digest()
