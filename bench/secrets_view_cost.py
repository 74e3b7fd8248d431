"""What reading the rendered view costs the ``secrets`` check (#29 class 4), side by side in one run.

Run: ``.venv/bin/python -m bench.secrets_view_cost``. The check alone, armed through ``ArmedSet`` as
the proxy runs it, over this checkout's docs and ``guardrails`` sources (code and Markdown: ``*``,
backticks, ``<``, ``&`` all over) fed in random 3-8 character deltas; rounds alternate between the
view off (the markup search never finds a start: the raw text, as before) and on. Prints CPU
microseconds per delta for each round and the ratio of the medians.
"""

from __future__ import annotations

import random
import re
import statistics
import time
from pathlib import Path

import guardrails.stream.secrets as secrets_module
from config.policy import SecretsGuardrail
from guardrails.seams import StreamContext
from guardrails.stream import ArmedSet
from guardrails.stream.secrets import SecretsProvider

ROOT = Path(__file__).resolve().parent.parent
ROUNDS = 3
_NEVER = re.compile(r"(?!)")


def _feeds() -> list[list[str]]:
    rng = random.Random(1)
    out = []
    for path in sorted([*ROOT.glob("docs/*.md"), *ROOT.glob("guardrails/**/*.py")]):
        text, i, deltas = path.read_text(), 0, []
        while i < len(text):
            n = rng.randint(3, 8)
            deltas.append(text[i:i + n])
            i += n
        out.append(deltas)
    return out


def _round(feeds: list[list[str]], provider: SecretsProvider) -> float:
    ctx = StreamContext(system_prompt="")
    count = sum(map(len, feeds))
    started = time.process_time()
    for deltas in feeds:
        armed, text = ArmedSet.arm([provider], ctx), ""
        for delta in deltas:
            text += delta
            if not isinstance(armed.check_horizon(text, delta), int):
                armed = ArmedSet.arm([provider], ctx)
        armed.finish(text)
    return (time.process_time() - started) / count * 1e6


def main() -> None:
    feeds = _feeds()
    provider = SecretsProvider(SecretsGuardrail(id="s", kind="secrets"), "x")
    special = secrets_module.SPECIAL
    got: dict[str, list[float]] = {"off": [], "on": []}
    for _ in range(ROUNDS):
        for mode in ("off", "on"):
            secrets_module.SPECIAL = _NEVER if mode == "off" else special
            got[mode].append(_round(feeds, provider))
            print(f"view {mode}: {got[mode][-1]:.2f} us per delta")
    secrets_module.SPECIAL = special
    off, on = statistics.median(got["off"]), statistics.median(got["on"])
    print(f"{sum(map(len, feeds))} deltas; medians: off {off:.2f}, on {on:.2f} us per delta ({on / off:.2f}x)")


if __name__ == "__main__":
    main()
