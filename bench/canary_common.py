"""What the canary benches share: the agent prompt they run against, the texts, how a message is
streamed and timed, and the off-against-on run that alternates rounds and takes medians.

``bench.canary_lookalikes``, ``bench.canary_spelled`` and ``bench.canary_encodings`` each switch one
of the canary's readings off and measure the same things with it off and on, in one run.
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

from bench.holdback import real_text
from config.policy import CanaryGuardrail
from guardrails.seams import StreamContext
from guardrails.stream.canary import CanaryProvider
from tests.stream_support import armed_passes

ROOT = Path(__file__).resolve().parents[1]
PROMPT = (ROOT / "tests" / "data" / "gemini_cli_system_prompt.txt").read_text(encoding="utf-8")
RUSSIAN = ("Сегодня утром мы проверили сборку на всех серверах, и тесты прошли без ошибок. Если кэш снова "
           "промахнётся, посмотрите на политику вытеснения, прежде чем добавлять новые рабочие процессы. ")
GREEK = ("Σήμερα το πρωί ελέγξαμε την κατασκευή σε όλους τους διακομιστές και οι δοκιμές πέρασαν χωρίς "
         "σφάλματα. Αν η κρυφή μνήμη αστοχήσει ξανά, κοιτάξτε την πολιτική εκκαθάρισης. ")
MESSAGE_DELTAS = 2000
"""Deltas a message, as ``bench.holdback`` streams the project's text."""
RUNS = 5
ROUNDS = 3

Row = dict[str, float | int]


def fresh() -> tuple[CanaryProvider, StreamContext]:
    """A canary with the default settings, and a stream context holding the agent prompt."""
    return CanaryProvider(CanaryGuardrail(id="canary", kind="canary"), "[withheld]"), StreamContext(system_prompt=PROMPT)


def corpus() -> str:
    """The project's README, sources and docs: text that is not the prompt."""
    docs = [p.read_text(encoding="utf-8") for p in sorted((ROOT / "docs").glob("*.md"))]
    return "\n".join([real_text(), *docs])


def random_deltas(text: str, rng: random.Random) -> list[str]:
    out, i = [], 0
    while i < len(text):
        n = rng.randint(1, 6)
        out.append(text[i:i + n])
        i += n
    return out


def messages(deltas: list[str]) -> list[list[str]]:
    return [deltas[i:i + MESSAGE_DELTAS] for i in range(0, len(deltas), MESSAGE_DELTAS)]


def blocked_streamed(provider: CanaryProvider, ctx: StreamContext, deltas: list[str]) -> bool:
    """Whether the armed canary blocks the message streamed in ``deltas`` (the tests' own oracle)."""
    return not armed_passes(provider, ctx, deltas)


def cpu_us_per_delta(provider: CanaryProvider, ctx: StreamContext, deltas: list[str], runs: int = RUNS) -> float:
    """The canary's CPU (``process_time``) per delta over ``deltas`` in messages, arming excluded; the
    median of ``runs``."""
    def once() -> float:
        total = 0.0
        for message in messages(deltas):
            check = provider.arm(ctx)
            assert check is not None
            acc = ""
            start = time.process_time()
            for delta in message:
                acc += delta
                check.check_horizon(acc, delta)
            total += time.process_time() - start
        return total
    return statistics.median(once() for _ in range(runs)) / len(deltas) * 1e6


def off_against_on(off: Callable[[], AbstractContextManager[None]], verdicts: Callable[[], Row],
                   costs: Callable[[], Row], rounds: int = ROUNDS) -> tuple[Row, Row]:
    """(before, after): ``verdicts`` once with the reading ``off`` and once on; ``costs`` in ``rounds``
    alternating rounds (off, on, off, on...) so a busy machine weighs on both alike, medians."""
    with off():
        before = verdicts()
    after = verdicts()
    taken: dict[bool, list[Row]] = {False: [], True: []}
    for _ in range(rounds):
        with off():
            taken[False].append(costs())
        taken[True].append(costs())
    for on, target in ((False, before), (True, after)):
        for key in taken[on][0]:
            target[key] = round(statistics.median(r[key] for r in taken[on]), 2)
    return before, after


def print_table(before: Row, after: Row, off: str, on: str) -> None:
    print(f"| measure | {off} | {on} |")
    print("|---|---:|---:|")
    for key in after:
        print(f"| {key} | {before[key]} | {after[key]} |")
