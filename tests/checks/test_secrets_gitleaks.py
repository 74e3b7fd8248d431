"""Operator rules from a gitleaks-format TOML file: loading, RE2 semantics, entropy, allowlists,
keywords, streaming across deltas, and the policy wiring (``rules_file``, category ``custom``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from config.policy import SecretsGuardrail, parse_policy
from guardrails.seams import DeltaCheck, StreamContext
from guardrails.stream import build_stream_guardrails
from guardrails.stream.gitleaks import GitleaksError, load_gitleaks_rules
from guardrails.stream.secrets import SecretsProvider
from tests.stream_support import one_char, random_chunks, run

CTX = StreamContext(system_prompt="")

RULES = r"""
title = "acme rules"

[allowlist]
description = "global"
stopwords = ["notreal"]

[[rules]]
id = "acme-internal-token"
description = "Acme internal service token"
regex = '''acme_(?:live|test)_([a-z0-9]{24})\b'''
secretGroup = 1
entropy = 3.0
keywords = ["acme_live", "acme_test"]

[[rules]]
id = "acme-db-password"
regex = '''(?i)acme[_-]?db[_-]?pass(?:word)?\s*[:=]\s*["']?([^\s"']{8,64})'''
keywords = ["acme"]
[rules.allowlist]
regexes = ['''^\$\{''']

[[rules]]
id = "ticket-secret"
regex = '''TKT-[0-9]{6}-[A-F0-9]{12}\z'''

[[rules]]
id = "path-only"
path = '''\.pem$'''
"""


@pytest.fixture()
def rules_file(tmp_path: Path) -> Path:
    path = tmp_path / "gitleaks.toml"
    path.write_text(RULES, encoding="utf-8")
    return path


def arm(rules_file: Path, **spec: object) -> DeltaCheck:
    provider = SecretsProvider(SecretsGuardrail(id="s", kind="secrets", rules_file=str(rules_file), **spec),  # type: ignore[arg-type]
                               "[withheld]")
    check = provider.arm(CTX)
    assert check is not None
    return check


def custom_blocks(rules_file: Path, text: str, chunks: list[str] | None = None) -> bool:
    out = run(arm(rules_file, categories=["custom"]), chunks if chunks is not None else one_char(text))
    return out.block is not None and "category: custom" in out.block.rationale


def test_loads_rules_and_skips_path_only_ones(rules_file: Path) -> None:
    rules = load_gitleaks_rules(rules_file)
    assert [r.id for r in rules.rules] == ["acme-internal-token", "acme-db-password", "ticket-secret"]
    assert rules.rules[0].secret_group == 1 and rules.rules[0].entropy == 3.0


def test_blocks_a_keyed_rule_across_any_chunking(rules_file: Path) -> None:
    text = "the token is acme_live_q8w7e6r5t4y3u2i1o9p8a7s6 ok"
    assert custom_blocks(rules_file, text)
    for seed in range(5):
        assert custom_blocks(rules_file, text, list(random_chunks(text, seed)))


def test_entropy_and_allowlists(rules_file: Path) -> None:
    assert not custom_blocks(rules_file, "acme_live_aaaaaaaaaaaaaaaaaaaaaaaa ok")      # entropy below 3.0
    assert not custom_blocks(rules_file, "acme_live_notreal7e6r5t4y3u2i1o9p8 ok")      # global stopword
    assert custom_blocks(rules_file, "ACME_DB_PASSWORD = 'Tr0ub4dor&3x' \n")
    assert not custom_blocks(rules_file, "ACME_DB_PASSWORD = ${ACME_DB_PASSWORD}\n")  # rule allowlist


def test_re2_syntax_and_rules_without_keywords(rules_file: Path) -> None:
    # \z is RE2 (and Go) syntax that Python's re rejects; the rule has no keywords and runs on the tail.
    assert custom_blocks(rules_file, "ticket TKT-123456-0A1B2C3D4E5F")
    assert not custom_blocks(rules_file, "ticket TKT-123456-0A1B2C3D4E5F and more")


def test_catalog_and_custom_rules_run_together(rules_file: Path) -> None:
    out = run(arm(rules_file), one_char("the token is acme_live_q8w7e6r5t4y3u2i1o9p8a7s6 ok"))
    assert out.block is not None
    out = run(arm(rules_file, categories=["github"]), one_char("acme_live_q8w7e6r5t4y3u2i1o9p8a7s6 ok"))
    assert out.block is None


def test_a_regex_re2_rejects_names_the_rule(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text("[[rules]]\nid = 'backref'\nregex = '''(a)\\1'''\n", encoding="utf-8")
    with pytest.raises(GitleaksError, match="backref"):
        load_gitleaks_rules(path)
    with pytest.raises(GitleaksError, match="cannot read"):
        load_gitleaks_rules(tmp_path / "missing.toml")


def test_a_pathological_regex_runs_on_the_linear_time_engine(tmp_path: Path) -> None:
    path = tmp_path / "redos.toml"
    path.write_text("[[rules]]\nid = 'redos'\nregex = '''(a+)+$'''\nkeywords = ['aaaa']\n", encoding="utf-8")
    assert type(load_gitleaks_rules(path).rules[0].regex).__module__.startswith("re2")
    # Python's backtracking engine would take minutes on this text; RE2 finishes it in one pass.
    text = "a" * 3000 + "!"
    assert run(arm(path, categories=["custom"]), [text[i:i + 50] for i in range(0, len(text), 50)]).block is None


def test_policy_resolves_the_rules_file_against_the_policy_folder(rules_file: Path) -> None:
    policy = parse_policy(
        '[[stream_guardrails]]\nid = "s"\nkind = "secrets"\nrules_file = "gitleaks.toml"\n',
        base_dir=rules_file.parent)
    (guard,) = build_stream_guardrails(policy.stream_guardrails, "[x]", Path(policy.base_dir))
    check = guard.arm(CTX)
    assert check is not None
    assert run(check, ["ticket TKT-123456-0A1B2C3D4E5F"]).block is not None
