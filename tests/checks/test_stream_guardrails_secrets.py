"""The ``secrets`` stream guardrail: true positives, a false-positive corpus, streaming behaviour."""

from __future__ import annotations

import random
import string

import pytest

from config.policy import SecretsGuardrail
from guardrails.decision import SECRET_LEAK
from guardrails.seams import DeltaCheck, StreamContext
from guardrails.stream._scan import looks_random
from guardrails.stream.secrets import SecretsProvider
from tests.stream_support import one_char, random_chunks, run, summary

CTX = StreamContext(system_prompt="")
_rng = random.Random(20240601)
B62 = string.ascii_letters + string.digits


def rand(n: int, alphabet: str = B62) -> str:
    """A random value that looks random (resampled in the rare case the check itself would miss)."""
    while True:
        value = "".join(_rng.choice(alphabet) for _ in range(n))
        if looks_random(value, need_digit=True):
            return value


def arm(**spec: object) -> DeltaCheck:
    check = SecretsProvider(SecretsGuardrail(id="no-secrets", kind="secrets", **spec), "[withheld]").arm(CTX)  # type: ignore[arg-type]
    assert check is not None
    return check


SECRETS_WINDOW = arm().window


# Built at run time so that no credential-shaped literal sits in the repository.
SAMPLES = {
    "aws": "AK" + "IA" + rand(16, string.ascii_uppercase + "234567"),
    "aws_secret": "aws_secret_access_key = " + rand(40, B62 + "/+"),
    "gcp": "AI" + "za" + rand(35),
    "gcp_client_secret": "GOC" + "SPX-" + rand(28),
    "google_oauth": "ya" + "29." + rand(80),
    "openai": "sk-" + rand(48),
    "openai_project": "sk-" + "proj-" + rand(150, B62 + "_-"),
    "anthropic": "sk-" + "ant-api03-" + rand(90),
    "github": "gh" + "p_" + rand(36),
    "github_pat": "github" + "_pat_" + rand(22) + "_" + rand(59),
    "gitlab": "gl" + "pat-" + rand(20),
    "slack": "xo" + "xb-" + "1234567890" + "-" + rand(24),
    "slack_webhook": "https://hooks.slack.com/services/T" + rand(10, string.ascii_uppercase + string.digits)
                     + "/B" + rand(10, string.ascii_uppercase + string.digits) + "/" + rand(24),
    "stripe": "sk" + "_live_" + rand(24),
    "private_key": "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA" + rand(48, B62 + "+/") + "\n",  # (DER's start)
    "jwt": "eyJhbGciOiJSUzI1NiIsImtpZCI6IjEifQ." + "eyJ" + rand(60, B62 + "_-") + "." + rand(43),
    "generic": 'DB_PASSWORD = "' + rand(24) + '"',
    "generic_camel": "const apiKey = '" + rand(32) + "';",
}

FALSE_POSITIVES = [
    "The request id is 550e8400-e29b-41d4-a716-446655440000, keep it for support.",
    "token = 550e8400-e29b-41d4-a716-446655440000\n",
    "Checked out commit 3f786850e387550fdab836ed7e6dc881de23001b on main.",
    "sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    'secret_key = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"',
    "export OPENAI_API_KEY=sk-XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX\n",
    "export OPENAI_API_KEY=sk-your-api-key-here-replace-me-with-the-real-one\n",
    'api_key = "your-api-key-here"',
    "AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE\n",
    "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n",
    "key: AKIAAAAAAAAAAAAAAAAA ok",
    "ghp_" + "x" * 36 + " is the shape of a GitHub token.",
    "token = tokenizer.encode(text)\n",
    "password = os.environ['DB_PASSWORD']\n",
    "self.secret_key_manager = SecretKeyManagerFactory()\n",
    "key_path = '/etc/ssl/private/server-2024.key'\n",
    "The header of a PEM file is -----BEGIN RSA PRIVATE KEY----- followed by base64.",
    "Use Authorization: Bearer <token> and keep the token secret.",
    ("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0Ijox"
    "NTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c is the jwt.io sample."),
    "class SkDropdownMenuItemContainerLarge: pass  # sk-dropdown-menu-item-container-large",
    "In 2023, the tokenizer vocabulary had 100277 tokens and the key insight was caching.",
    "def get_secret(name: str) -> str:\n    return vault.read(name)\n",
    "password: ${DB_PASSWORD}\n",
]


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_blocks_each_kind_of_credential_in_prose(name: str) -> None:
    text = f"Here is the config you asked for: {SAMPLES[name]} and that is all."
    out = run(arm(), one_char(text))
    assert out.block is not None and out.block.reason_code == SECRET_LEAK
    assert out.block.replacement == "[withheld]"


@pytest.mark.parametrize("text", FALSE_POSITIVES)
def test_false_positive_corpus_passes(text: str) -> None:
    assert run(arm(), one_char(text)).block is None
    assert run(arm(), [text]).block is None


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_decision_is_the_same_whatever_the_chunking(name: str) -> None:
    text = f"prefix {SAMPLES[name]} suffix"
    expected = summary(run(arm(), [text]))
    assert summary(run(arm(), one_char(text))) == expected
    for seed in range(5):
        assert summary(run(arm(), random_chunks(text, seed))) == expected


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_blocks_before_the_secret_start_leaves_the_window(name: str) -> None:
    secret = SAMPLES[name]
    text = "Sure. " + secret + " " + "and more prose follows here. " * 10
    out = run(arm(), one_char(text))
    assert out.blocked_at is not None, "must block during the stream, not at finish"
    assert text.index(secret) >= out.blocked_at - SECRETS_WINDOW


def test_blocks_an_unbounded_secret_once_its_distinctive_prefix_has_arrived() -> None:
    secret = SAMPLES["openai_project"]
    out = run(arm(), one_char(secret + " trailing"))
    assert out.blocked_at is not None and out.blocked_at <= len("sk-") + 32


def test_a_fixed_length_key_at_the_very_end_is_caught_at_finish() -> None:
    out = run(arm(), one_char("my key is " + SAMPLES["aws"]))
    assert out.block is not None and out.at_finish


def test_rationale_never_contains_the_secret() -> None:
    for secret in SAMPLES.values():
        out = run(arm(), [secret + " "])
        assert out.block is not None
        assert secret not in out.block.rationale and secret[:12] not in out.block.rationale


def test_allow_lists_known_safe_values() -> None:
    value = SAMPLES["openai"]
    assert run(arm(allow=[value]), one_char(value + " ok")).block is None
    assert run(arm(allow=["something-else"]), one_char(value + " ok")).block is not None


def test_categories_select_which_rules_run() -> None:
    assert run(arm(categories=["github"]), [SAMPLES["openai"] + " "]).block is None
    assert run(arm(categories=["github"]), [SAMPLES["github"] + " "]).block is not None


def test_unknown_category_is_rejected_when_the_policy_loads() -> None:
    with pytest.raises(ValueError, match="unknown secrets categories"):
        SecretsProvider(SecretsGuardrail(id="s", kind="secrets", categories=["nope"]), "")


def test_scan_never_reaches_further_back_than_the_window() -> None:
    check = arm()
    text = ("Some prose about tokens, keys and passwords = nothing here. " * 200)
    acc = ""
    for delta in random_chunks(text, 3):
        acc += delta
        check.check(acc, delta)
        assert check.horizon(acc) >= len(acc) - SECRETS_WINDOW
