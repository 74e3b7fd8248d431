"""``guardproxy scan PATH``: what the policy's stream guardrails would trip on in a folder of files.

An operator tunes a policy on their own repositories before turning it on: every text file under
PATH (``.git`` and other dot folders, files over ``MAX_FILE_BYTES`` and files that are not UTF-8
are skipped) is read as if a model had written it, through the same armed checks the proxy runs
(``ArmedSet``, fed in ``CHUNK`` pieces). Each trip is one line: the file, line and column, the
guardrail, the rule (a secrets rule id, else the reason code or a redaction's mask) and what the
guardrail would do. The value itself is never printed. After a block the checks are armed afresh
on the text that follows, so one file can list several trips. Exit 0 when nothing trips, 1 when
something does, 2 when the policy cannot be used.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from config.policy import PolicyError, load_policy
from guardrails.decision import Block, Redact
from guardrails.seams import DeltaCheck, StreamContext, StreamGuardrail
from guardrails.stream import ArmedSet, build_stream_guardrails

MAX_FILE_BYTES = 4_000_000
CHUNK = 4096
_CTX = StreamContext(system_prompt="")


@dataclass(frozen=True, slots=True)
class Finding:
    path: str
    line: int
    column: int
    guardrail: str
    rule: str
    action: str


def scan_text(guardrails: Sequence[StreamGuardrail], text: str) -> Iterator[tuple[int, str, str]]:
    """``(offset, guardrail id, rule)`` of every trip over ``text``. After a block the checks are
    armed afresh from the next line (one block per line and guardrail: a match is not listed again
    from its middle)."""
    pos = 0
    while pos < len(text):
        armed = [(g.id, c) for g in guardrails if (c := g.arm(_CTX)) is not None]
        if not armed:
            return
        guard, checks = ArmedSet(armed), dict(armed)
        acc, blocked = "", -1
        for at in range(pos, len(text), CHUNK):
            piece = text[at:at + CHUNK]
            acc += piece
            trip = guard.check(acc, piece)
            while trip is not None and isinstance(trip.decision, Redact):
                yield pos + trip.decision.start, trip.guardrail_id, trip.decision.rule or trip.decision.mask
                trip = guard.check(acc, "")
            if trip is not None:
                blocked = pos + _report(checks[trip.guardrail_id], len(acc))
                yield blocked, trip.guardrail_id, _rule(trip.decision)
                break
        else:
            trip = guard.finish(acc)
            while trip is not None and isinstance(trip.decision, Redact):
                yield pos + trip.decision.start, trip.guardrail_id, trip.decision.rule or trip.decision.mask
                trip = guard.finish(acc)
            if trip is None:
                return
            blocked = pos + _report(checks[trip.guardrail_id], len(acc))
            yield blocked, trip.guardrail_id, _rule(trip.decision)
        line_end = text.find("\n", blocked)
        pos = line_end + 1 if line_end >= 0 else len(text)


def _report(check: DeltaCheck, default: int) -> int:
    start = getattr(check, "last_start", -1)
    return start if isinstance(start, int) and start >= 0 else max(0, default - 1)


def _rule(decision: Block | Redact) -> str:
    return decision.rule or decision.reason_code


def text_files(root: Path) -> Iterator[Path]:
    if root.is_file():
        yield root
        return
    for path in sorted(root.rglob("*")):
        if any(part.startswith(".") for part in path.relative_to(root).parts) or not path.is_file():
            continue
        if path.stat().st_size <= MAX_FILE_BYTES:
            yield path


def scan(args: argparse.Namespace) -> int:
    try:
        policy = load_policy(args.policy)
        base = Path(args.policy).parent if args.policy else Path(".")
        guardrails = build_stream_guardrails(policy.stream_guardrails, policy.defaults.replacement, base)
    except (PolicyError, ValueError) as exc:
        print(f"guardproxy: {exc}", file=sys.stderr)
        return 2
    actions = {spec.id: spec.action for spec in policy.stream_guardrails}
    root = Path(args.path)
    found = 0
    for path in text_files(root):
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        for offset, guardrail_id, rule in scan_text(guardrails, text):
            line = text.count("\n", 0, offset) + 1
            column = offset - (text.rfind("\n", 0, offset) + 1) + 1
            hit = Finding(str(path), line, column, guardrail_id, rule, actions.get(guardrail_id, "replace"))
            found += 1
            if args.json:
                print(json.dumps(asdict(hit)))
            else:
                print(f"{hit.path}:{hit.line}:{hit.column}: {hit.guardrail} {hit.rule} ({hit.action})")
    if not args.json:
        print(f"{found} trip(s)", file=sys.stderr)
    return 1 if found else 0
