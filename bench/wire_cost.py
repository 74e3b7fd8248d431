"""CPU cost per frame of decoding and guarding a clean stream, per wire format.

Run: ``.venv/bin/python -m bench.wire_cost [out.json]``. Each API's stream of ``N`` (``--deltas``)
small text deltas (the fake upstream's exact frames) is fed in 4 KiB reads through the codec and
the stream guard the driver uses (``ChoiceGuard``, with every built-in stream guardrail armed, or
none), and every released frame through ``note_sent``: the whole per-frame path of a guarded
stream except the sockets. Reports the median over ``RUNS`` runs of ``time.process_time`` per frame,
and ``sent``: ``note_sent`` alone per frame, each read's frames noted right after they were decoded
(as a live stream sends them).

``--baseline DIR`` measures another checkout of the repository beside this one (``git archive REV |
tar -x -C DIR``): ``--rounds`` alternating rounds, each a child process per checkout running this
file against that checkout's modules, same interpreter; it prints each figure before and after, the
median over the rounds, and their ratio.
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

from bench.guard_cost import arm, clean_deltas
from guardrails.stream import ArmedSet
from proxy.core.choice_guard import ChoiceGuard
from proxy.wire.anthropic import AnthropicMessages
from proxy.wire.base import WireFormat
from proxy.wire.gemini import Gemini
from proxy.wire.openai_chat import OpenAIChat
from proxy.wire.openai_responses import OpenAIResponses
from tests.fakes.upstream import Reply, anthropic_frames, chat_frames, gemini_chunks, responses_frames

N = 2000
RUNS = 7
READ = 4096
WIRES: dict[str, WireFormat] = {"chat": OpenAIChat(), "anthropic": AnthropicMessages(),
                                "responses": OpenAIResponses(), "gemini": Gemini()}


def stream_bytes(api: str, deltas: list[str]) -> bytes:
    r = Reply(text="".join(deltas), deltas=deltas)
    if api == "chat":
        return b"".join(chat_frames(r, "m", False))
    if api == "anthropic":
        return b"".join(anthropic_frames(r, "m"))
    if api == "responses":
        return b"".join(responses_frames(r, "m"))
    return b"".join(f"data: {json.dumps(c)}\r\n\r\n".encode() for c in gemini_chunks(r, "m"))


def run_once(api: str, data: bytes, armed: bool) -> float:
    codec = WIRES[api].new_stream()

    def arm_for(_: str) -> ArmedSet | None:
        return arm() if armed else None

    guard = ChoiceGuard(arm_for, holdback=64, retext=codec.retext, rearm=lambda _call=None: arm_for("tool"))
    t = time.process_time()
    for i in range(0, len(data), READ):
        for frame in codec.feed(data[i:i + READ]):
            for sent in guard.push(frame).send:
                codec.note_sent(sent)
    guard.end()
    for sent in guard.release_all():
        codec.note_sent(sent)
    return time.process_time() - t


def sent_once(api: str, data: bytes) -> float:
    """``note_sent`` alone, per frame: each read's frames noted right after they were decoded."""
    codec = WIRES[api].new_stream()
    spent, frames = 0.0, 0
    for i in range(0, len(data), READ):
        decoded = codec.feed(data[i:i + READ])
        t = time.process_time()
        for frame in decoded:
            codec.note_sent(frame)
        spent += time.process_time() - t
        frames += len(decoded)
    return spent / frames


def measure(runs: int, n: int = N, quiet: bool = False) -> dict[str, float]:
    deltas = clean_deltas(n)
    results: dict[str, float] = {}
    for api in WIRES:
        data = stream_bytes(api, deltas)
        for armed in (False, True):
            us = statistics.median(run_once(api, data, armed) for _ in range(runs)) / n * 1e6
            results[f"{api}/{'armed' if armed else 'none'}"] = round(us, 2)
            if not quiet:
                print(f"{api:10s} {'armed' if armed else 'none':5s} {us:7.2f} us/frame", flush=True)
        us = statistics.median(sent_once(api, data) for _ in range(runs)) * 1e6
        results[f"{api}/sent"] = round(us, 2)
        if not quiet:
            print(f"{api:10s} sent  {us:7.2f} us/frame (note_sent alone)", flush=True)
    return results


def child(tree: Path, runs: int, n: int) -> dict[str, float]:
    """This file's ``measure`` run against the modules of ``tree`` (a checkout), in a fresh process."""
    code = (f"import json, runpy, sys; sys.argv = ['wire_cost', '--child', '--runs', '{runs}', '--deltas', '{n}']; "
            f"runpy.run_path({str(Path(__file__).resolve())!r}, run_name='__main__')")
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run([sys.executable, "-c", code], cwd=tree, env=env, capture_output=True, text=True,
                         timeout=600, check=True).stdout
    return dict(json.loads(out.splitlines()[-1]))


def side_by_side(baseline: Path, rounds: int, runs: int, n: int) -> dict[str, dict[str, float]]:
    here = Path(__file__).resolve().parent.parent
    seen: dict[str, list[dict[str, float]]] = {"before": [], "after": []}
    for r in range(rounds):
        order = [("before", baseline), ("after", here)]
        for label, tree in order if r % 2 == 0 else order[::-1]:
            seen[label].append(child(tree, runs, n))
            print(f"round {r + 1}/{rounds} {label} done", file=sys.stderr, flush=True)
    medians = {label: {k: round(statistics.median(run[k] for run in runs_), 2) for k in runs_[0]}
               for label, runs_ in seen.items()}
    print(f"{'figure':18s} {'before':>8s} {'after':>8s} {'after/before':>12s}  (us per frame, median of {rounds} rounds)")
    for k in medians["after"]:
        before, after = medians["before"].get(k), medians["after"][k]
        ratio = f"{after / before:.2f}x" if before else "-"
        print(f"{k:18s} {before if before is not None else '-':>8} {after:8.2f} {ratio:>12s}")
    return medians


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("out", nargs="?", help="write the figures here as JSON")
    parser.add_argument("--baseline", type=Path, help="another checkout to measure beside this one")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--runs", type=int, default=RUNS)
    parser.add_argument("--deltas", type=int, default=N, help="text deltas per stream")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.runs, args.deltas, quiet=True)))
        return
    results: object = side_by_side(args.baseline, args.rounds, args.runs, args.deltas) if args.baseline \
        else measure(args.runs, args.deltas)
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
