"""The canary's look-alike skeleton, on against off, side by side in one run.

Run: ``PYTHONPATH=. .venv/bin/python -m bench.canary_lookalikes``. "Off" swaps the skeleton's table
for an empty one (the canary as it was before look-alikes were folded). Against Gemini CLI's own
system prompt (captured from the pinned CLI, ``tests/data/gemini_cli_system_prompt.txt``, 21 KB):

- **False positives**: the project's README and sources streamed in token-sized deltas (as
  ``bench.holdback`` streams them, one message per 2,000 deltas) and checked whole per message, plus
  Russian and Greek prose: messages blocked.
- **Detection**: 200 excerpts of the prompt (60-200 characters) with a random half of the letters
  that have a look-alike swapped for one, streamed in random deltas and checked whole: blocked.
- **Cost**: canary CPU per delta (``process_time``) on the ASCII stream and on a Russian one, and
  the prompt index's build time for 15 KB and 57 KB prompts (ASCII and with Cyrillic look-alikes),
  in alternating rounds (off, on, off, on...) so a busy machine weighs on both alike.

Prints a table; writes nothing.
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import guardrails.stream._canary_text as canary_text
from bench.holdback import real_text, token_deltas
from config.policy import CanaryGuardrail
from guardrails.decision import PASS
from guardrails.seams import StreamContext
from guardrails.stream.canary import CanaryProvider

ROOT = Path(__file__).resolve().parents[1]
PROMPT = (ROOT / "tests" / "data" / "gemini_cli_system_prompt.txt").read_text(encoding="utf-8")
LOOKALIKES = {"a": "аα", "c": "сᴄ", "e": "е", "i": "іι", "j": "ј", "o": "оο", "p": "рρ", "s": "ѕ", "x": "хχ",
              "y": "у", "h": "һ", "v": "ν", "A": "АΑ", "B": "ВΒ", "E": "ЕΕ", "H": "НΗ", "K": "КΚ", "M": "МΜ",
              "O": "ОΟ", "P": "РΡ", "T": "ТΤ", "X": "ХΧ", "C": "С", "S": "Ѕ"}
RUSSIAN = ("Сегодня утром мы проверили сборку на всех серверах, и тесты прошли без ошибок. Если кэш снова "
           "промахнётся, посмотрите на политику вытеснения, прежде чем добавлять новые рабочие процессы. ")
GREEK = ("Σήμερα το πρωί ελέγξαμε την κατασκευή σε όλους τους διακομιστές και οι δοκιμές πέρασαν χωρίς "
         "σφάλματα. Αν η κρυφή μνήμη αστοχήσει ξανά, κοιτάξτε την πολιτική εκκαθάρισης. ")
MESSAGE_DELTAS = 2000
RUNS = 5
ROUNDS = 3


@contextmanager
def skeleton_off() -> Iterator[None]:
    """The canary normalising without look-alikes (``normalise`` looks the table up by name)."""
    real = canary_text.skeleton_table
    canary_text.skeleton_table = dict  # type: ignore[assignment] # an empty table
    try:
        yield
    finally:
        canary_text.skeleton_table = real


def lookalike_copy(text: str, rng: random.Random) -> str:
    return "".join(rng.choice(LOOKALIKES[c]) if c in LOOKALIKES and rng.random() < 0.5 else c for c in text)


def random_deltas(text: str, rng: random.Random) -> list[str]:
    out, i = [], 0
    while i < len(text):
        n = rng.randint(1, 6)
        out.append(text[i:i + n])
        i += n
    return out


def blocked_streamed(provider: CanaryProvider, ctx: StreamContext, deltas: list[str]) -> bool:
    check = provider.arm(ctx)
    assert check is not None
    acc = ""
    for delta in deltas:
        acc += delta
        if check.check(acc, delta) is not PASS:
            return True
    return check.finish(acc) is not PASS


def messages(deltas: list[str]) -> list[list[str]]:
    return [deltas[i:i + MESSAGE_DELTAS] for i in range(0, len(deltas), MESSAGE_DELTAS)]


def false_positives(provider: CanaryProvider, ctx: StreamContext) -> dict[str, int]:
    own = messages(token_deltas(real_text()))
    prose = messages(token_deltas((RUSSIAN + GREEK) * 40))
    return {"own messages": len(own),
            "own streamed blocked": sum(blocked_streamed(provider, ctx, m) for m in own),
            "own whole blocked": sum(not provider.passes_whole(ctx, ["".join(m)]) for m in own),
            "ru/el streamed blocked": sum(blocked_streamed(provider, ctx, m) for m in prose),
            "ru/el whole blocked": sum(not provider.passes_whole(ctx, ["".join(m)]) for m in prose)}


def detection(provider: CanaryProvider, ctx: StreamContext) -> dict[str, int]:
    rng = random.Random(7)
    leaks = []
    for _ in range(200):
        start = rng.randrange(0, len(PROMPT) - 200)
        leaks.append(lookalike_copy(PROMPT[start:start + rng.randint(60, 200)], rng))
    return {"leaks": len(leaks),
            "streamed blocked": sum(blocked_streamed(provider, ctx, random_deltas(t, rng)) for t in leaks),
            "whole blocked": sum(not provider.passes_whole(ctx, [t]) for t in leaks)}


def cpu_us_per_delta(provider: CanaryProvider, ctx: StreamContext, deltas: list[str]) -> float:
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
    return statistics.median(once() for _ in range(RUNS)) / len(deltas) * 1e6


def index_ms(provider: CanaryProvider, prompt: str) -> float:
    def once() -> float:
        start = time.process_time()
        provider.index_of(prompt)
        return time.process_time() - start
    return statistics.median(once() for _ in range(RUNS)) * 1e3


def verdicts() -> dict[str, float | int]:
    provider = CanaryProvider(CanaryGuardrail(id="canary", kind="canary"), "[withheld]")
    ctx = StreamContext(system_prompt=PROMPT)
    return {**false_positives(provider, ctx), **detection(provider, ctx)}


def costs() -> dict[str, float | int]:
    provider = CanaryProvider(CanaryGuardrail(id="canary", kind="canary"), "[withheld]")
    ctx = StreamContext(system_prompt=PROMPT)
    base = real_text()
    row: dict[str, float | int] = {
        "ascii us/delta": round(cpu_us_per_delta(provider, ctx, token_deltas(base)[:10_000]), 2),
        "russian us/delta": round(cpu_us_per_delta(provider, ctx, token_deltas(RUSSIAN * 200)[:10_000]), 2)}
    for kb in (15, 57):
        prompt = base[:kb * 1024]
        row[f"index {kb} KB ms"] = round(index_ms(provider, prompt), 1)
        row[f"index {kb} KB look-alike ms"] = round(index_ms(provider, lookalike_copy(prompt, random.Random(1))), 1)
    return row


def main() -> None:
    """Verdicts once each; costs in ``ROUNDS`` alternating rounds (off, on, off, on...), medians."""
    with skeleton_off():
        before = verdicts()
    after = verdicts()
    rounds: dict[bool, list[dict[str, float | int]]] = {False: [], True: []}
    for _ in range(ROUNDS):
        with skeleton_off():
            rounds[False].append(costs())
        rounds[True].append(costs())
    for on, target in ((False, before), (True, after)):
        for key in rounds[on][0]:
            target[key] = round(statistics.median(r[key] for r in rounds[on]), 2)
    print("| measure | skeleton off (before) | skeleton on (after) |")
    print("|---|---:|---:|")
    for key in after:
        print(f"| {key} | {before[key]} | {after[key]} |")


if __name__ == "__main__":
    main()
