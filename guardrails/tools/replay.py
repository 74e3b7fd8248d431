"""``guardproxy replay``: re-make recorded tool-call decisions from their observations.

Replay never touches the filesystem: it runs only the pure rules (``decide``) over what was
observed at the time. With ``--policy`` it is a dry-run of a new policy over recorded traffic; without,
each record is re-decided under the tools policy snapshot it carries, which checks that the rules
still reproduce the recorded decisions.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TextIO

from pydantic import ValidationError

from config.errors import GuardproxyError
from config.policy import PolicyError, ToolsPolicy, load_policy
from guardrails.tools.rules import decide

TOOL_CALL_ASSESSED = "tool_call.assessed"


class ReplayError(GuardproxyError):
    """A record that cannot be replayed (malformed, or no policy to judge it by)."""


@dataclass(frozen=True, slots=True)
class Difference:
    request_id: str
    tool: str
    call_id: str
    recorded_decision: str
    recorded_reason: str | None
    new_decision: str
    new_reason: str | None

    def line(self) -> str:
        call = f" {self.call_id}" if self.call_id else ""
        return (f"{self.request_id} {self.tool}{call}: {self.recorded_decision}/{self.recorded_reason or '-'}"
                f" -> {self.new_decision}/{self.new_reason or '-'}")


@dataclass(slots=True)
class ReplayReport:
    replayed: int = 0
    differences: list[Difference] = field(default_factory=list)

    @property
    def reproduced(self) -> bool:
        return not self.differences

    def lines(self) -> list[str]:
        return [d.line() for d in self.differences]


def _str(record: Mapping[str, object], key: str, required: bool = True) -> str:
    value = record.get(key)
    if isinstance(value, str):
        return value
    if required:
        raise ReplayError(f"record is missing {key!r}")
    return ""


def _policy_of(record: Mapping[str, object], given: ToolsPolicy | None) -> ToolsPolicy:
    if given is not None:
        return given
    snapshot = record.get("policy")
    if not isinstance(snapshot, dict):
        raise ReplayError("record carries no tools policy; pass --policy")
    try:
        return ToolsPolicy.model_validate(snapshot)
    except ValidationError as exc:
        raise ReplayError(f"recorded tools policy is invalid: {exc.error_count()} error(s)") from exc


def replay(records: Iterable[Mapping[str, object]], policy: ToolsPolicy | None) -> ReplayReport:
    """Re-decide every ``tool_call.assessed`` record; other events are skipped. Raises ReplayError."""
    report = ReplayReport()
    for record in records:
        if record.get("event") != TOOL_CALL_ASSESSED:
            continue
        observations = record.get("observations")
        if not isinstance(observations, dict):
            raise ReplayError("record is missing 'observations'")
        grants = observations.get("grants")
        granted = frozenset(g for g in grants if isinstance(g, str)) if isinstance(grants, list) else frozenset()
        tool, effect = _str(record, "tool"), _str(record, "effect")
        try:
            new = decide(tool, effect, observations, _policy_of(record, policy), granted)
        except ReplayError:
            raise
        except Exception as exc:  # noqa: BLE001 - a crafted record is bad input (exit 2), not a difference
            raise ReplayError(f"a {TOOL_CALL_ASSESSED} record cannot be replayed "
                              f"({type(exc).__name__}): its observations are not what guardproxy writes") from None
        report.replayed += 1
        old_decision = _str(record, "decision")
        old_reason = record.get("reason_code")
        old_reason = old_reason if isinstance(old_reason, str) else None
        if (new.decision, new.reason_code) != (old_decision, old_reason):
            report.differences.append(Difference(_str(record, "request_id", False), tool,
                                                 _str(record, "call_id", False), old_decision,
                                                 old_reason, new.decision, new.reason_code))
    return report


def read_records(lines: Iterable[str]) -> Iterator[dict[str, object]]:
    """Parse JSON lines; blank lines are skipped, anything else unparseable is a ReplayError."""
    for number, text in enumerate(lines, 1):
        if not text.strip():
            continue
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ReplayError(f"line {number}: not JSON ({exc.msg})") from exc
        except RecursionError:
            raise ReplayError(f"line {number}: JSON nested too deeply") from None
        if not isinstance(value, dict):
            raise ReplayError(f"line {number}: not a JSON object")
        yield value


def main_replay(argv: Sequence[str], out: TextIO | None = None, err: TextIO | None = None) -> int:
    """``guardproxy replay AUDIT.jsonl [--policy FILE]`` (``argv`` excludes the word ``replay``).

    Prints one line per difference; exits 0 when every decision reproduces, 1 when any differs,
    2 when the log or the policy cannot be read or a record is not one guardproxy writes (bad input
    never exits 1, which means "decisions differ").
    """
    out = out or sys.stdout
    err = err or sys.stderr
    parser = argparse.ArgumentParser(prog="guardproxy replay",
                                     description="Re-decide recorded tool calls from their observations.")
    parser.add_argument("audit_log", help="audit log (JSON lines) written by guardproxy")
    parser.add_argument("--policy", help="policy file to dry-run instead of each record's own policy")
    args = parser.parse_args(list(argv))
    try:
        policy = None
        if args.policy:
            tools = load_policy(args.policy).tools
            policy = tools if tools is not None else ToolsPolicy(enabled=False)
        with open(args.audit_log, encoding="utf-8") as fh:
            report = replay(read_records(fh), policy)
    except (OSError, UnicodeDecodeError, PolicyError, ReplayError) as exc:
        print(f"guardproxy replay: {exc}", file=err)
        return 2
    for line in report.lines():
        print(line, file=out)
    print(f"replayed {report.replayed} tool-call decision(s), {len(report.differences)} differ", file=err)
    return 0 if report.reproduced else 1
