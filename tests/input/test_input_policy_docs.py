"""The copy-paste example of ``[[input_guardrails]]`` in docs/policy.md is a policy that loads, with the
keys other clients of the policy format rely on (section, ``kind``, ``action``, ``parts``)."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest

from config.policy import PolicyError, parse_policy
from guardrails.input.build import build_input_checks

DOCS = Path(__file__).resolve().parents[2] / "docs" / "policy.md"


def _examples() -> list[str]:
    blocks = re.findall(r"```toml\n(.*?)```", DOCS.read_text(), re.DOTALL)
    return [b for b in blocks if "[[input_guardrails]]" in b]


def test_the_documented_example_loads_and_builds() -> None:
    [example] = _examples()
    policy = parse_policy(example, source="docs/policy.md")
    assert [(g.kind, g.action, g.parts) for g in policy.input_guardrails][:2] == [
        ("pii", "redact", ["user", "tool_result"]), ("pii", "reject", ["user", "tool_result"])]
    checks = build_input_checks(policy.input_guardrails, Path("."), httpx.AsyncClient(), "x")
    assert [c.id for c in checks] == [g.id for g in policy.input_guardrails]


@pytest.mark.parametrize("entry", [
    'id = "a"\nkind = "llm_judge"\nprompt = "{agent_output}"\naction = "redact"',   # a message check cannot redact
    'id = "a"\nkind = "secrets"\nparts = ["assistant"]',                              # not a part
    'id = "a"\nkind = "secrets"\nparts = []',
    'id = "a"\nkind = "secrets"\naction = "retry"',
    'id = "a"\nkind = "pii"\nreplacement = "shown to nobody"',                     # an answer's key
    'id = "a"\nkind = "regex"\npatterns = ["x"]\nmandate = "retry politely"',
])
def test_entries_the_schema_refuses(entry: str) -> None:
    with pytest.raises(PolicyError):
        parse_policy(f"[[input_guardrails]]\n{entry}\n")
