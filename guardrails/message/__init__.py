"""End-of-message guardrails (``llm_judge``, ``webhook``, ``moderation``) and their one runner."""

from guardrails.message.base import ConfiguredGuardrail, Skipped, Undecided
from guardrails.message.build import build_message_guardrails, specs_by_id, timeouts_by_id
from guardrails.message.judge import LlmJudge, parse_verdict, render_prompt
from guardrails.message.moderation import Moderation
from guardrails.message.runner import CheckResult, MessageVerdict, run_message_guardrails
from guardrails.message.webhook import Webhook

__all__ = [
    "CheckResult",
    "ConfiguredGuardrail",
    "LlmJudge",
    "MessageVerdict",
    "Moderation",
    "Skipped",
    "Undecided",
    "Webhook",
    "build_message_guardrails",
    "parse_verdict",
    "render_prompt",
    "run_message_guardrails",
    "specs_by_id",
    "timeouts_by_id",
]
