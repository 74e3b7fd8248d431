"""Secrets precision, round 3 (#32): shapes the tune half still tripped on that are no credential by
construction, each beside a real-looking value in the same place that must still trip; the rule
that names a provider's key held by an assignment; verdicts on tokens that never read the clock.

Each benign line is a shape, not a repository's value: a configuration section's name, a generic
type written in words, another setting's name as a keyed value, a display name in a list of
values, a tenant's UUID in an issuer URL, a token that says it was issued before JWTs existed, a
name that says its value does not work (``invalid``, ``dummy``), a PEM block whose body does not
begin as DER.
"""

from __future__ import annotations

import base64
import json
import random
import re
import string
import time
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

from config.policy import SecretsGuardrail
from guardrails.decision import Block
from guardrails.seams import StreamContext
from guardrails.stream import token_claims
from guardrails.stream.secrets import SecretsProvider
from tests.checks.test_secrets_catalog import blocked_category
from tests.checks.test_secrets_redact import GITHUB, masked
from tests.stream_support import random_chunks

KEY = "Zx9Qw3Er7Ty1Ui5Op2As"
SIG = "Kx8vQ2mZp9LrT4wYb7NcH1sJf6GdE3uAq0oViXyW5Rk"
TENANT = "3f6c1a2e-8d4b-4c7a-9e21-5b0d7f3a9c84"
_RNG = random.Random(323)
STRIPE = "sk_live_" + "".join(_RNG.choice(string.ascii_letters + string.digits) for _ in range(24))


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _jwt(claims: dict[str, object]) -> str:
    header = _b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    return f"{header}.{_b64(json.dumps(claims).encode())}.{SIG}"


def _every_split(text: str) -> set[str | None]:
    return {blocked_category(text, [text]), blocked_category(text),
            blocked_category(text, list(random_chunks(text, seed=11)))}


@pytest.mark.parametrize("text", [
    # a configuration section's name: where settings live, not a secret
    '[AuthorizeForScopes(ScopeKeySection = "DownstreamB2CApi:Scopes", UserFlow = "b2c_1_susi")]\n',
    # a generic type's name in words, a short capitalised word among them
    "export type DefaultMySqlVerificationTokenTable = MySqlTableWithColumns<{\n",
    # another setting's name where a keyed rule reads a value
    'echo "Error: One or both environment variables (AUTH0_DOMAIN, AUTH0_CLIENT_ID) are not set."\n',
    # a display name in a list of values, then an avatar's address
    ('u := newUser("someTestId", "someone@example.com", "Twitch user", '
     '"https://s.gravatar.com/avatar/0c4f1e8a9b2d7e36f5a1c8d9e0b4a7f2")\n'),
    # a tenant's UUID in an issuer's URL
    f'const IssuerAzureMicrosoft = "https://login.microsoftonline.com/{TENANT}/v2.0"\n',
    # tokens that say they were issued before JWTs existed: at the epoch, at 1234567890
    f'let token = "{_jwt({"sub": "Custom DateTime ser/de", "iat": 0, "exp": 9223372036854775807})}";\n',
    f'token = "{_jwt({"sub": "user-8812", "iat": 1234567890, "exp": 4102444800})}"\n',
    # a name that says its value does not work: made to fail, or to stand in
    f'\tinvalidWrongExponentKey = "{KEY}{SIG}"\n',
    f"DUMMY_API_TOKEN={KEY}\n",
    # a PEM block whose body does not begin a DER key: typed to fill the slot
    "-----BEGIN RSA PRIVATE KEY-----\nYourRsaPrivateKeyBodyGoesHere012\n-----END RSA PRIVATE KEY-----\n",
    "key = '''-----BEGIN PRIVATE KEY-----\nabcdefghijklmnopqrstuvwxyzABCDEF\n-----END PRIVATE KEY-----'''\n",
])
def test_round3_shapes_pass(text: str) -> None:
    assert _every_split(text) == {None}, text


@pytest.mark.parametrize(("text", "family"), [
    (f'[AuthorizeForScopes(ScopeKeySecret = "{KEY}")]\n', "generic"),
    (f"export type DefaultMySqlVerificationTokenTable = {KEY}\n", "generic"),
    (f'\tvalidPrivateKey = "{KEY}{SIG}"\n', "generic"),
    (f'\tsamlTestPrimaryKey = "{KEY}{SIG}"\n', "generic"),
    (f"STAGING_API_TOKEN={KEY}\n", "generic"),
    (f"AUTH0_CLIENT_SECRET={KEY}\n", "auth0"),
    (f'u := newUser("twitch_client_secret", "{KEY}")\n', "twitch"),
    (f'creds := []string{{"Twitch client secret", "{KEY}"}}\n', "twitch"),
    (f'AZURE_CLIENT_SECRET = "{TENANT}"\n', "azure"),
    (f'const AzureWebhook = "https://login.microsoftonline.com/{TENANT}/{KEY}"\n', "azure"),
    (f'let token = "{_jwt({"sub": "auth0|5f7c8ec7c33c6c004bbafe82", "iat": 1764547200, "exp": 4102444800})}";\n',
     "jwt"),
])
def test_round3_neighbours_still_trip(text: str, family: str) -> None:
    assert _every_split(text) == {family}, text


def _pem(key: rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey | ed25519.Ed25519PrivateKey,
         fmt: serialization.PrivateFormat, password: bytes | None = None) -> str:
    encryption = (serialization.BestAvailableEncryption(password) if password
                  else serialization.NoEncryption())
    return key.private_bytes(serialization.Encoding.PEM, fmt, encryption).decode()


@pytest.mark.parametrize("pem", [
    _pem(rsa.generate_private_key(65537, 2048), serialization.PrivateFormat.TraditionalOpenSSL),
    _pem(rsa.generate_private_key(65537, 2048), serialization.PrivateFormat.PKCS8),
    _pem(rsa.generate_private_key(65537, 2048), serialization.PrivateFormat.PKCS8, b"pw"),
    _pem(rsa.generate_private_key(65537, 2048), serialization.PrivateFormat.TraditionalOpenSSL, b"pw"),
    _pem(ec.generate_private_key(ec.SECP256R1()), serialization.PrivateFormat.TraditionalOpenSSL),
    _pem(ec.generate_private_key(ec.SECP384R1()), serialization.PrivateFormat.PKCS8),
    _pem(ed25519.Ed25519PrivateKey.generate(), serialization.PrivateFormat.PKCS8),
], ids=["pkcs1", "pkcs8", "pkcs8-encrypted", "pkcs1-encrypted", "sec1", "ec-pkcs8", "ed25519"])
def test_every_key_a_library_writes_still_trips(pem: str) -> None:
    escaped = pem.replace("\n", "\\n")  # (as a JSON string holds it)
    for text in (f"key = '''{pem}'''\n", f'"key": "{escaped}"\n'):
        assert _every_split(text) == {"private_key"}, text


@pytest.mark.parametrize(("text", "secret", "rule"), [
    (f'api_key = "{STRIPE}"\n', STRIPE, "stripe-key"),
    (f'{{"access_token": "{GITHUB}"}}\n', GITHUB, "github-token"),
    (f"GITHUB_TOKEN={GITHUB}\n", GITHUB, "github-token"),
])
def test_a_provider_key_in_an_assignment_is_named_by_its_provider(text: str, secret: str, rule: str) -> None:
    """Masked, and named by the provider's rule, not ``generic-assignment``: in every split."""
    want = text.replace(secret, f"[redacted by no-secrets: {rule}]")
    for deltas in ([text], list(text), *(list(random_chunks(text, seed)) for seed in range(8))):
        assert masked(text, deltas) == (want, [rule]), deltas
    provider = SecretsProvider(SecretsGuardrail(id="no-secrets", kind="secrets"), "[withheld]")
    for deltas in ([text], list(text), list(random_chunks(text, 5))):
        check, acc, decision = provider.arm(StreamContext(system_prompt="")), "", None
        assert check is not None
        for delta in deltas:
            acc += delta
            decision = check.check(acc, delta)
            if isinstance(decision, Block):
                break
        else:
            decision = check.finish(acc)
        assert isinstance(decision, Block) and decision.rule == rule, deltas


def test_a_tokens_verdict_never_reads_the_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """A token that expired before the fixed date passes and one that expires after it trips,
    whatever the clock says (a stream, its replay, the bench a year later)."""
    old = f'token = "{_jwt({"sub": "auth0|5f7c8ec7c33c6c004bbafe82", "iat": 1572000000, "exp": 1572006964})}"\n'
    live = f'token = "{_jwt({"sub": "auth0|5f7c8ec7c33c6c004bbafe82", "iat": 1764547200, "exp": 1893456000})}"\n'
    for now in (1_500_000_000.0, time.time(), 1_900_000_000.0, 4_200_000_000.0):
        monkeypatch.setattr(time, "time", lambda now=now: now)
        assert _every_split(old) == {None}, now
        assert _every_split(live) == {"jwt"}, now


def test_the_claims_module_never_reads_the_clock() -> None:
    source = Path(token_claims.__file__).read_text(encoding="utf-8")
    assert re.search(r"\btime\.time\(|\.now\(|utcnow\(|import time\b", source) is None
