"""The canary armed against a coding agent's real system prompt, as the canary's unit tests share it:
Gemini CLI's own (captured from the pinned CLI, paths scrubbed; Apache-2.0), ``min_chars`` 40, and an
excerpt of it that the copies are made from."""

from __future__ import annotations

from pathlib import Path

from config.policy import CanaryGuardrail
from guardrails.seams import StreamContext, passes_whole_of
from guardrails.stream import build_stream_guardrails

AGENT_PROMPT = (Path(__file__).parent.parent / "data" / "gemini_cli_system_prompt.txt").read_text(encoding="utf-8")
MIN_CHARS = 40
CANARY = build_stream_guardrails([CanaryGuardrail(id="leak", kind="canary", min_chars=MIN_CHARS)], "[withheld]")[0]
CTX = StreamContext(system_prompt=AGENT_PROMPT)
WHOLE = passes_whole_of(CANARY)
EXCERPT = ("Rigorously adhere to existing project conventions when reading or modifying code. Analyze "
           "surrounding code, tests, and configuration first.")
