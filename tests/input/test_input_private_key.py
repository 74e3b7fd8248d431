"""A private key in a request is masked whole: the catalog's rule names the first 32 characters of
its body (enough for an answer to trip), and the input screen's mask runs on to the key's end."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from config.policy import InputSecretsGuardrail, parse_policy
from guardrails.input.finders import SecretsFinder, redacted
from tests.secret_samples import TEMPLATES, fill

RNG = random.Random(11)
BODY = [fill("{b64:64}", RNG) for _ in range(4)] + [fill("{b64:22}", RNG) + "=="]
HEAD = fill(TEMPLATES["private-key"], RNG)
END = "-----END RSA PRIVATE KEY-----"


def _finder() -> SecretsFinder:
    spec = parse_policy('[[input_guardrails]]\nid = "k"\nkind = "secrets"\naction = "redact"\n',
                        source="<test>").input_guardrails[0]
    assert isinstance(spec, InputSecretsGuardrail)
    return SecretsFinder(spec, Path("."))


@pytest.mark.parametrize(("text", "expected"), [
    (f"key:\n{HEAD}" + "\n".join([*BODY, END]) + "\nthanks",
     "key:\n-----BEGIN RSA PRIVATE KEY-----\n[REDACTED:private_key]\nthanks"),
    (f"cut short:\n{HEAD}" + "\n".join(BODY) + "\nthanks, bye.",
     "cut short:\n-----BEGIN RSA PRIVATE KEY-----\n[REDACTED:private_key]\nthanks, bye."),
    ("escaped: " + (HEAD + "\n".join([*BODY, END])).replace("\n", "\\n") + '\\n" done',
     'escaped: -----BEGIN RSA PRIVATE KEY-----\\n[REDACTED:private_key]\\n" done'),
], ids=["to-its-end-line", "cut-short", "json-escaped-lines"])
def test_the_mask_covers_the_whole_key(text: str, expected: str) -> None:
    finder = _finder()
    assert redacted(text, finder.find(text)) == expected
