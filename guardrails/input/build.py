"""The policy's ``[[input_guardrails]]`` built once per policy load: a span finder per span kind, the
message check each message kind reuses (judge, webhook, moderation), and what each does on a hit."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx

from config.policy import (
    InputGuardrailSpec,
    InputHiddenTextGuardrail,
    InputJudgeGuardrail,
    InputModerationGuardrail,
    InputPiiGuardrail,
    InputRegexGuardrail,
    InputSecretsGuardrail,
    InputWebhookGuardrail,
    PolicyError,
)
from guardrails.input.finders import Cached, HiddenTextFinder, PiiFinder, RegexFinder, SecretsFinder
from guardrails.message import build_message_guardrails
from guardrails.seams import MessageGuardrail

_TAINT_BY_DEFAULT = frozenset({"hidden_text", "regex", "llm_judge", "webhook", "moderation"})


@dataclass(frozen=True, slots=True)
class SpanCheck:
    id: str
    kind: str
    action: str
    """``redact`` | ``reject`` | ``log``."""
    parts: frozenset[str]
    taints: bool
    finder: Cached


@dataclass(frozen=True, slots=True)
class TextCheck:
    """A message check over one input text (judge, webhook, moderation): async, time-bounded, fails open."""

    id: str
    kind: str
    action: str
    """``reject`` | ``log``."""
    parts: frozenset[str]
    taints: bool
    guardrail: MessageGuardrail
    timeout_s: float
    on_content_error: str
    """``block`` | ``pass``: when the content itself makes the check fail."""


InputCheck = SpanCheck | TextCheck


def build_input_checks(specs: Sequence[InputGuardrailSpec], base_dir: Path, http: httpx.AsyncClient,
                       default_replacement: str) -> list[InputCheck]:
    """The enabled entries in policy order. A bad entry (a pattern RE2 cannot run, an unknown
    category, a judge template without ``{agent_output}``) raises ``PolicyError`` now."""
    checks: list[InputCheck] = []
    for spec in specs:
        if not spec.enabled:
            continue
        taints = spec.taints if spec.taints is not None else spec.kind in _TAINT_BY_DEFAULT
        parts = frozenset(spec.parts)
        try:
            match spec:
                case InputSecretsGuardrail():
                    finder = Cached(SecretsFinder(spec, base_dir))
                case InputPiiGuardrail():
                    finder = Cached(PiiFinder(spec))
                case InputRegexGuardrail():
                    finder = Cached(RegexFinder(spec))
                case InputHiddenTextGuardrail():
                    finder = Cached(HiddenTextFinder(spec))
                case InputJudgeGuardrail() | InputWebhookGuardrail() | InputModerationGuardrail():
                    built = build_message_guardrails([spec], default_replacement, base_dir, http)
                    checks.append(TextCheck(spec.id, spec.kind, spec.action, parts, taints, built[0],
                                            spec.timeout_s, spec.on_content_error))
                    continue
        except ValueError as exc:
            raise PolicyError(f"input_guardrails: {exc}") from exc
        checks.append(SpanCheck(spec.id, spec.kind, spec.action, parts, taints, finder))
    return checks
