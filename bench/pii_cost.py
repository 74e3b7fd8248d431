"""CPU per delta of the ``pii`` check armed alone, and of every guardrail armed, on three kinds of text.

Run: ``.venv/bin/python -m bench.pii_cost [--baseline DIR] [--rounds 5]``. ``--baseline`` runs the same
measurement in another tree beside this one (``git archive REV | tar -x -C DIR``), alternating
rounds, each in a fresh process, so both see the same machine. Texts, each 10,000 deltas of 3-8
characters fed as the pipeline does (``acc += delta`` then ``check_horizon``):

- ``prose+code``: ``bench.guard_cost``'s clean deltas (a paragraph and a Python function);
- ``log lines``: timestamps, ids, durations, versions, IPs and JSON numbers, no personal data;
- ``with PII``: prose with an email, a phone, a card and an IBAN every few hundred characters
  (redacted: each ``Redact`` is answered as the pipeline does, with another call).

Prints medians per text and contender (µs per delta, ``time.process_time``) and their ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench.guard_cost import CODE, PROSE, clean_deltas  # the same prose, code and cuts as the all-armed cost

HERE = Path(__file__).resolve()
DELTAS = 10_000

LOGS = (
    "2024-05-13 10:20:31,442 INFO worker-3 took 1234 ms for job 88123 (retry 2/5) v1.22.3 at 10.0.12.7:8080\n"
    '{"id": 123456, "price": 19.99, "qty": 3, "ts": 1700000000, "ratio": 0.4512}\n'
    "2024-05-13 10:20:32,017 WARN pool=db-7 wait 87 ms, 14/64 in use, sha 3f786850e387 build 20240513.4\n"
)
WITH_PII = PROSE + (
    "Write to jane.roe@corp-mail.co.uk or call +44 20 7946 0958 about order 112-7654321-1234567. "
    "The card on file is 4111 1111 1111 1111 and the refund goes to DE89 3704 0044 0532 0130 00. "
) + CODE


def deltas(source: str, n: int = DELTAS, seed: int = 1) -> list[str]:
    return clean_deltas(n, seed, source)


TEXTS = {"prose+code": PROSE + CODE, "log lines": LOGS, "with PII": WITH_PII}


def measure() -> dict[str, dict[str, float]]:
    """In this process: µs per delta for each text, pii alone and everything armed."""
    from config.policy import (
        CanaryGuardrail,
        HiddenTextGuardrail,
        MaxLengthGuardrail,
        PiiGuardrail,
        RegexGuardrail,
        SecretsGuardrail,
    )
    from guardrails.decision import Redact
    from guardrails.seams import StreamContext
    from guardrails.stream import ArmedSet, Trip, build_stream_guardrails

    pii = PiiGuardrail(id="pii", kind="pii", action="redact")
    every = [CanaryGuardrail(id="canary", kind="canary", min_chars=40), SecretsGuardrail(id="secrets", kind="secrets"),
             RegexGuardrail(id="deny", kind="regex", flags=["i"], patterns=[r"project\s+nightingale"]), pii,
             MaxLengthGuardrail(id="len", kind="max_length", max_chars=10_000_000),
             HiddenTextGuardrail(id="hidden", kind="hidden_text")]
    prompt = "You are a careful senior engineer helping with a Python code base. " * 30
    out: dict[str, dict[str, float]] = {}
    for name, source in TEXTS.items():
        row = {}
        for armed_name, specs in (("pii", [pii]), ("all", every)):
            guards = build_stream_guardrails(specs, "[withheld]")  # type: ignore[arg-type]
            armed = ArmedSet.arm(guards, StreamContext(system_prompt=prompt))
            acc = ""
            start = time.process_time()
            for delta in deltas(source):
                acc += delta
                result = armed.check_horizon(acc, delta)
                while isinstance(result, Trip) and isinstance(result.decision, Redact):
                    result = armed.check_horizon(acc, "")
            row[armed_name] = (time.process_time() - start) / DELTAS * 1e6
        out[name] = row
    return out


def run_in(tree: Path) -> dict[str, dict[str, float]]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run([sys.executable, str(HERE), "--measure"], cwd=tree, env=env, check=True,
                          capture_output=True, text=True)
    result: dict[str, dict[str, float]] = json.loads(done.stdout)
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--baseline", type=Path, help="another tree to measure beside this one")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure()))
        return
    trees = {"now": HERE.parents[1]}
    if args.baseline:
        trees = {"before": args.baseline.resolve(), **trees}
    runs: dict[str, list[dict[str, dict[str, float]]]] = {name: [] for name in trees}
    for _ in range(args.rounds):
        for name, tree in trees.items():
            runs[name].append(run_in(tree))
    print("| text | armed | " + " | ".join(f"{name} µs/delta" for name in trees)
          + (" | now / before |" if args.baseline else " |"))
    print("|---|---|" + "---:|" * (len(trees) + bool(args.baseline)))
    for text in TEXTS:
        for armed in ("pii", "all"):
            medians = {name: statistics.median(r[text][armed] for r in rs) for name, rs in runs.items()}
            ratio = f" | {medians['now'] / medians['before']:.2f}x" if args.baseline else ""
            print(f"| {text} | {armed} | " + " | ".join(f"{m:.2f}" for m in medians.values()) + ratio + " |")


if __name__ == "__main__":
    main()
