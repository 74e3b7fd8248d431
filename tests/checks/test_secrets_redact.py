"""``secrets`` with ``action = "redact"`` masks the credential in place and the rest of the answer
flows (issue #32): the span is the secret part of an assignment, or the whole token with its own
prefix and every character of it after the part the rule matched, whatever the split into deltas.
In tool-call arguments a redaction withholds the call (a masked value would change what the tool
writes). Trips name the guardrail and the rule, never the value; the operator can allowlist by rule
id or category, by a regex on the match, by a stopword."""

from __future__ import annotations

import json
import random
import re
import string
from collections.abc import Iterator

import pytest

from config.policy import SecretsGuardrail
from guardrails.decision import Block, Redact
from guardrails.seams import StreamContext
from guardrails.stream import ArmedSet
from guardrails.stream.secrets import SecretsProvider
from tests.adversarial import client_sees
from tests.apis import raw_call
from tests.fakes.proxy import ProxyServer
from tests.fakes.upstream import FakeUpstream, Reply
from tests.secret_samples import TEMPLATES, fill
from tests.stream_support import random_chunks

CTX = StreamContext(system_prompt="")
_RNG = random.Random(32)
_B62 = string.ascii_letters + string.digits
OPENAI = "sk-proj-" + "".join(_RNG.choice(_B62 + "_-") for _ in range(120))
GITHUB = "ghp_" + "".join(_RNG.choice(_B62) for _ in range(36))
VALUE = "Zx9Qw3Er7Ty1Ui5Op2As"


def _provider(**kw: object) -> SecretsProvider:
    spec = SecretsGuardrail(id="no-secrets", kind="secrets", action="redact", **kw)  # type: ignore[arg-type]
    return SecretsProvider(spec, "[withheld]")


def masked(text: str, deltas: list[str], provider: SecretsProvider | None = None) -> tuple[str, list[str]]:
    """The text as the client would get it (every redaction applied), and the rules that redacted."""
    armed = ArmedSet.arm([provider or _provider()], CTX)
    acc, spans = "", []
    for delta in deltas:
        acc += delta
        trip = armed.check(acc, delta)
        while trip is not None:
            assert isinstance(trip.decision, Redact), trip
            spans.append(trip.decision)
            trip = armed.check(acc, "")
    trip = armed.finish(acc)
    while trip is not None:
        assert isinstance(trip.decision, Redact)
        spans.append(trip.decision)
        trip = armed.finish(acc)
    out = acc
    for r in sorted(spans, key=lambda r: r.start, reverse=True):
        out = out[:r.start] + r.mask + out[r.end:]
    return out, [r.rule for r in spans]


def _splits(text: str) -> list[list[str]]:
    return [[text], list(text), *(list(random_chunks(text, seed)) for seed in range(8))]


@pytest.mark.parametrize(("text", "want", "rules"), [
    (f"Use {GITHUB} for the CI.", "Use [redacted by no-secrets: github-token] for the CI.", ["github-token"]),
    (f"The key is {OPENAI}. Keep it safe.", "The key is [redacted by no-secrets: openai-key]. Keep it safe.",
     ["openai-key"]),
    (f'api_key = "{VALUE}"\nprint(1)', 'api_key = "[redacted by no-secrets: generic-assignment]"\nprint(1)',
     ["generic-assignment"]),
    (f"{GITHUB} and {OPENAI}", "[redacted by no-secrets: github-token] and [redacted by no-secrets: openai-key]",
     ["github-token", "openai-key"]),
])
def test_a_credential_is_masked_in_place_whatever_the_split(text: str, want: str, rules: list[str]) -> None:
    for deltas in _splits(text):
        assert masked(text, deltas) == (want, rules), deltas


def test_a_structured_token_is_masked_whole_whatever_the_split() -> None:
    """A Discord bot token on its own: its id and timestamp segments go with its HMAC (they left in
    clear before, one character at a time before the mask settled)."""
    token = fill(TEMPLATES["discord-bot-token"], random.Random(5)).split("=", 1)[1]
    text = f"The bot logs in with {token} today."
    for deltas in _splits(text):
        assert masked(text, deltas) == ("The bot logs in with [redacted by no-secrets: discord-bot-token] today.",
                                        ["discord-bot-token"]), deltas


def test_a_token_longer_than_the_rule_held_until_it_ends() -> None:
    """The OpenAI rule matches a key's first 32 characters; its other 96 must not leak after the
    mask: the span waits (the horizon stays at the key's start) until the token ends."""
    text = f"key: {OPENAI}"
    check = _provider().arm(CTX)
    assert check is not None
    acc = ""
    for delta in random_chunks(text, 5):
        acc += delta
        decision = check.check(acc, delta)
        assert not isinstance(decision, Redact), "redacted before the token ended"
        assert check.horizon(acc) <= len("key: ")
    decision = check.finish(acc)
    assert isinstance(decision, Redact) and acc[decision.start:decision.end] == OPENAI


def _keys() -> dict[str, str]:
    """Real private keys, as a model would print them: PEM of each kind, encrypted, long."""
    from cryptography.hazmat.primitives import serialization as ser
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    plain, pkcs8 = ser.PrivateFormat.TraditionalOpenSSL, ser.PrivateFormat.PKCS8
    pem = ser.Encoding.PEM
    return {
        "rsa": rsa_key.private_bytes(pem, plain, ser.NoEncryption()).decode(),
        "pkcs8-ec": ec.generate_private_key(ec.SECP256R1()).private_bytes(pem, pkcs8, ser.NoEncryption()).decode(),
        "ed25519": ed25519.Ed25519PrivateKey.generate().private_bytes(pem, pkcs8, ser.NoEncryption()).decode(),
        "encrypted": rsa_key.private_bytes(pem, plain, ser.BestAvailableEncryption(b"pw")).decode(),
        "rsa-8192": rsa.generate_private_key(public_exponent=65537, key_size=8192).private_bytes(
            pem, plain, ser.NoEncryption()).decode(),
    }


KEYS = _keys()
QUOTES = "'" * 3


def _body_lines(key: str) -> list[str]:
    return [line for line in key.splitlines() if line and not line.startswith("-----") and ":" not in line]


def _framed(key: str, frame: str) -> tuple[str, str]:
    """(an answer holding ``key`` as ``frame`` shows it, what must end the masked answer)."""
    if frame == "prose":
        return f"Here is the key:\n{key}\nKeep it safe.", "Keep it safe."
    if frame == "json":
        return json.dumps({"private_key": key}) + " was the config.", " was the config."
    if frame == "indented":
        return f"def load():\n    return {QUOTES}\n    " + key.replace("\n", "\n    ") + QUOTES + "\n", QUOTES + "\n"
    return f"Start of it:\n{key[:400]}\n\nThat is all of it, friend.", "That is all of it, friend."


@pytest.mark.parametrize("kind", sorted(KEYS))
@pytest.mark.parametrize("frame", ["prose", "json", "indented", "truncated"])
def test_a_private_key_is_masked_through_its_end_whatever_the_split(kind: str, frame: str) -> None:
    """The rule names a key's first line only; a redaction masked those 32 characters and the rest
    of the body went to the client. Now the mask runs through the end marker (or, for a key cut
    short, through its base64 lines), and every split masks the same span."""
    key = KEYS[kind]
    text, tail = _framed(key, frame)
    results = {(out, frozenset(rules)) for out, rules in (masked(text, d) for d in _splits(text)[:6])}
    assert len(results) == 1, "the split decided what was masked"  # (a body past REDACT_TAIL_MAX: in pieces)
    ((out, rules),) = results
    assert rules == {"private-key"}
    body = _body_lines(key[:400] if frame == "truncated" else key)
    assert not [line for line in body if line.strip() in out], "lines of the key's body reached the client"
    assert out.endswith(tail)


def test_an_indented_private_key_trips() -> None:
    """In code a key sits indented under its string's opening line: more than the four whitespace
    characters the rule allowed between the marker and the body (it passed whole before)."""
    text = f"    key = {QUOTES}\n        " + KEYS["rsa"].replace("\n", "\n        ")
    check = SecretsProvider(SecretsGuardrail(id="s", kind="secrets"), "[withheld]").arm(CTX)
    assert check is not None
    assert isinstance(check.finish(text), Block)


def test_replace_names_the_guardrail_and_rule_never_the_value() -> None:
    spec = SecretsGuardrail(id="no-secrets", kind="secrets")
    provider = SecretsProvider(spec, "[withheld: {rule} ({category}) found by {guardrail}]")
    check = provider.arm(CTX)
    assert check is not None
    decision = check.finish(f"token {GITHUB} ")
    assert isinstance(decision, Block)
    assert decision.replacement == "[withheld: github-token (github) found by no-secrets]"
    assert decision.rule == "github-token" and GITHUB not in decision.rationale + decision.replacement


@pytest.mark.parametrize(("allow", "text"), [
    ({"allow_rules": ["generic-assignment"]}, f'api_key = "{VALUE}"\n'),
    ({"allow_rules": ["github"]}, f"Use {GITHUB} now.\n"),
    ({"allow_patterns": [r"^ghp_"]}, f"Use {GITHUB} now.\n"),
    ({"stopwords": ["zx9qw"]}, f'api_key = "{VALUE}"\n'),
])
def test_the_operator_can_allowlist_by_rule_pattern_and_stopword(allow: dict[str, list[str]], text: str) -> None:
    out, rules = masked(text, list(text), _provider(**allow))
    assert rules == [] and out == text
    other = f"Use {OPENAI} now.\n"
    assert masked(other, list(other), _provider(**allow))[1] == ["openai-key"]  # only what was allowed


# --- through the proxy, the SDKs as the judge ---------------------------------------------------

POLICY = """
[[stream_guardrails]]
id = "no-secrets"
kind = "secrets"
action = "redact"
replacement = "[withheld: {rule} found by {guardrail}]"
"""


@pytest.fixture(scope="module")
def proxy(upstream_server: FakeUpstream) -> Iterator[ProxyServer]:
    with ProxyServer(upstream_server.url, POLICY) as p:
        yield p


@pytest.mark.parametrize("api", ["chat", "responses", "anthropic", "gemini"])
def test_the_client_sees_the_answer_with_the_key_masked(proxy: ProxyServer, upstream: FakeUpstream, api: str) -> None:
    text = f"Set the token to {OPENAI} and run the deploy. Done."
    reply = Reply(text=text, deltas=list(random_chunks(text, 3, 2, 12)))
    seen = client_sees(proxy.url, api, lambda: upstream.queue(reply))
    assert OPENAI[:12] not in seen.everything() and OPENAI[-20:] not in seen.everything()
    assert seen.sdk is not None, seen.sdk_error
    assert seen.sdk.text == "Set the token to [redacted by no-secrets: openai-key] and run the deploy. Done."


@pytest.mark.parametrize("api", ["chat", "responses", "anthropic", "gemini"])
def test_the_client_sees_a_private_key_masked_through_its_end(proxy: ProxyServer, upstream: FakeUpstream,
                                                             api: str) -> None:
    key = KEYS["rsa"]
    text = f"Here is the deploy key:\n{key}\nStore it in the vault."
    reply = Reply(text=text, deltas=list(random_chunks(text, 4, 2, 40)))
    seen = client_sees(proxy.url, api, lambda: upstream.queue(reply))
    assert seen.sdk is not None, seen.sdk_error
    everything = seen.everything()
    assert not [line for line in _body_lines(key) if line in everything]
    assert seen.sdk.text == ("Here is the deploy key:\n-----BEGIN RSA PRIVATE KEY-----\n"
                             "[redacted by no-secrets: private-key]\n\nStore it in the vault.")


@pytest.mark.parametrize("api", ["chat", "anthropic"])
def test_a_key_in_tool_arguments_withholds_the_call(proxy: ProxyServer, upstream: FakeUpstream, api: str) -> None:
    args = json.dumps({"file_path": ".env", "content": f"GITHUB_TOKEN={GITHUB}\n"})
    upstream.queue(Reply(text="Saving.", tool_calls=[("write_file", args)]))
    res = raw_call(proxy.url, api, stream=True)
    body = res.raw.decode("utf-8", "replace")
    assert GITHUB not in body and "write_file" not in body
    assert re.search(r"\[withheld: (github-token|generic-assignment) found by no-secrets\]", body), body
