"""``ToolAssessor``: observe through the probe, then decide with the pure rules."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from config.policy import ToolsPolicy
from guardrails.datamodel import HistoryToolCall, ToolCall
from guardrails.tools import taint
from guardrails.tools.egress import too_broad
from guardrails.tools.observe import SessionFold, observe
from guardrails.tools.probe import CachingProbe, FileSystemProbe, WorldProbe
from guardrails.tools.rules import decide
from guardrails.tools.shell_worker import pool
from guardrails.tools.verdict import Assessment, policy_fingerprint, policy_snapshot


class ToolAssessor:
    """Assesses complete tool calls against the ``[tools]`` policy. One instance serves every request.

    ``assess`` returns exactly one ``Assessment`` per call: the first blocking rule in the order of
    ``guardrails.tools.rules`` wins, and the observations of all rules are kept. Fails closed:
    a probe error (permissions, I/O) propagates rather than passing the call unchecked.
    """

    def __init__(self, policy: ToolsPolicy, base_dir: Path = Path("."),
                 probe: WorldProbe | None = None) -> None:
        broad = [e for e in policy.egress_allow if too_broad(e)]
        if broad:
            raise ValueError(f"tools.egress_allow: suffix entries broader than one registrable domain: {broad} "
                             "(name the domain, e.g. \".example.com\", or list exact hosts)")
        self.policy = policy
        # A relative workspace_root is relative to the policy file's folder (Policy.base_dir).
        self._base_dir = str(base_dir.absolute())
        self._probe: WorldProbe = probe if probe is not None else FileSystemProbe()
        self._snapshot = policy_snapshot(policy)
        self._fingerprint = policy_fingerprint(policy)
        if policy.enabled:
            pool().start()  # the shell parser's worker processes, ready before the first call

    def assess(self, call: ToolCall, history: Sequence[HistoryToolCall],
               grants: frozenset[str] = frozenset(), flagged: Sequence[str] = ()) -> Assessment:
        """Judge ``call`` given the conversation's earlier tool calls and the session's egress grants
        (hosts from ``x-guardproxy-egress-grant``, same syntax as ``egress_allow``); ``flagged``: the
        request's content an input guardrail flagged (``RequestView.tainted``)."""
        return self.assess_all([call], history, grants, flagged)[0]

    def assess_all(self, calls: Sequence[ToolCall], history: Sequence[HistoryToolCall],
                   grants: frozenset[str] = frozenset(), flagged: Sequence[str] = ()) -> list[Assessment]:
        """``assess`` of each call, all against the same history and the same view of the disk: the
        history is folded once for all of them (``SessionFold``), not once per call."""
        probe = CachingProbe(self._probe)
        session = SessionFold(history)
        tainted = taint.sources(history, self.policy, flagged) if self.policy.tainted_egress != "allow" else []
        return [self._assess(call, history, grants, probe, session, tainted) for call in calls]

    def _assess(self, call: ToolCall, history: Sequence[HistoryToolCall], grants: frozenset[str],
                probe: CachingProbe, session: SessionFold, tainted: list[str]) -> Assessment:
        if not self.policy.enabled:
            return Assessment(call.name, "none", "allow", None, None, "", {}, call.call_id,
                              self._snapshot, self._fingerprint)
        effect, observations = observe(call.name, call.arguments, history, self.policy, probe,
                                       self._base_dir, grants, session)
        if tainted:  # (only then: what a call sends is read for the taint rule alone)
            observations["taint"] = {"sources": tainted, "sends": taint.sends(call.name, call.arguments, effect,
                                                                             observations, self.policy)}
        verdict = decide(call.name, effect, observations, self.policy, grants)
        return Assessment(verdict.tool, verdict.effect, verdict.decision, verdict.rule,
                          verdict.reason_code, verdict.rationale, verdict.observations, call.call_id,
                          self._snapshot, self._fingerprint)
