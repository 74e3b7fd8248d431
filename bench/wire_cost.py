"""CPU cost per frame of decoding and guarding a clean stream, per wire format.

Run: ``.venv/bin/python -m bench.wire_cost [out.json]``. Each API's stream of ``N`` small text deltas
(the fake upstream's exact frames) is fed in 4 KiB reads through the codec and the stream guard the
driver uses (``ChoiceGuard``, with every built-in stream guardrail armed, or none), and every released
frame through ``note_sent``: the whole per-frame path of a guarded stream except the sockets. Reports
the median over ``RUNS`` runs of ``time.process_time`` per frame.
"""

from __future__ import annotations

import json
import statistics
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


def main() -> None:
    deltas = clean_deltas(N)
    results: dict[str, float] = {}
    for api in WIRES:
        data = stream_bytes(api, deltas)
        for armed in (False, True):
            us = statistics.median(run_once(api, data, armed) for _ in range(RUNS)) / N * 1e6
            results[f"{api}/{'armed' if armed else 'none'}"] = round(us, 2)
            print(f"{api:10s} {'armed' if armed else 'none':5s} {us:7.2f} us/frame", flush=True)
    if len(sys.argv) > 1:
        Path(sys.argv[1]).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
