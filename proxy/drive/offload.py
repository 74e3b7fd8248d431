"""Keeping big checks off the event loop: one request's text must not stall every other stream."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")

OFF_LOOP_CHARS = 32_768
"""Checks over more text than this run in a worker thread: at 1-3 µs per character (all checks,
adversarial text) they would otherwise hold the event loop, and every other stream, past 100 ms.
The thread still takes the GIL, but CPython hands it back to the loop every few milliseconds."""


async def off_loop_if_large(size: int, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """``fn(*args)``, in a worker thread when ``size`` (characters or bytes to check) is large. The
    caller owns the state ``fn`` touches and awaits it, so nothing else runs on it meanwhile."""
    if size <= OFF_LOOP_CHARS:
        return fn(*args, **kwargs)
    return await asyncio.to_thread(fn, *args, **kwargs)
