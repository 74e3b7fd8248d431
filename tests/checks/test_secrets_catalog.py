"""The secrets catalog, rule by rule: each blocks its own format and passes its placeholder; the
generic assignment forms; checksums; the horizon contract (safe, monotone, bounded)."""

from __future__ import annotations

import base64
import random
import re
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from config.policy import SecretsGuardrail
from guardrails.decision import SECRET_LEAK, Block
from guardrails.seams import DeltaCheck, StreamContext
from guardrails.stream import secret_checks
from guardrails.stream.keyword_scan import KeywordScanner
from guardrails.stream.secret_rules import GENERIC, KEYED, RULES, keyed_rule
from guardrails.stream.secrets import CATEGORIES, SecretsCheck, SecretsProvider
from tests.secret_samples import NO_FAKE, TEMPLATES, fake, fill, keyed_template
from tests.stream_support import one_char, random_chunks, run

CTX = StreamContext(system_prompt="")
PROVIDER = SecretsProvider(SecretsGuardrail(id="s", kind="secrets"), "[withheld]")
RULE_IDS = [rule.id for rule in (*RULES, GENERIC)]
FAMILY = {rule.id: rule.family for rule in (*RULES, GENERIC)}
# A format that a broader rule also matches, from the same offset: either name is right.
ALSO = {"cloudinary-url": "url_credentials"}


def arm(provider: SecretsProvider = PROVIDER) -> DeltaCheck:
    check = provider.arm(CTX)
    assert check is not None
    return check


def blocked_category(text: str, chunks: list[str] | None = None) -> str | None:
    out = run(arm(), chunks if chunks is not None else one_char(text))
    if out.block is None:
        return None
    assert out.block.reason_code == SECRET_LEAK
    found = re.search(r"category: (\w+)", out.block.rationale)
    assert found is not None
    return found.group(1)


def test_every_rule_has_a_sample_and_a_unique_id() -> None:
    assert sorted(TEMPLATES) == sorted(RULE_IDS)
    assert len(set(RULE_IDS)) == len(RULE_IDS)


@pytest.mark.parametrize("rule_id", RULE_IDS)
def test_each_rule_blocks_its_format_in_prose(rule_id: str) -> None:
    rng = random.Random(rule_id)
    for _ in range(3):
        secret = fill(TEMPLATES[rule_id], rng)
        text = f"Here is the config you asked for:\n{secret}\nand that is all."
        assert blocked_category(text) in (FAMILY[rule_id], ALSO.get(rule_id)), secret
        assert blocked_category(text, [text]) in (FAMILY[rule_id], ALSO.get(rule_id))


@pytest.mark.parametrize("rule_id", sorted(set(RULE_IDS) - NO_FAKE))
def test_each_rule_passes_its_placeholder(rule_id: str) -> None:
    text = f"Replace {fake(TEMPLATES[rule_id])} with your own value."
    assert blocked_category(text) is None, text


@pytest.mark.parametrize("family", sorted(KEYED))
def test_each_keyed_provider_is_found_by_its_name(family: str) -> None:
    rng = random.Random(family)
    for keyword in KEYED[family]:
        secret = fill(keyed_template(keyword), rng)
        assert blocked_category(f"settings:\n  {secret}\n") is not None, secret
    text = f"{KEYED[family][0]} token - '{fill('{hex:32}', rng)}'\n"
    assert blocked_category(text) == family or blocked_category(text) == "generic"


def test_keyed_providers_pass_prose_and_identifiers() -> None:
    for keyword in ("datadog", "twilio", "azure"):
        assert blocked_category(f"The {keyword} integration is configured in settings.py, see docs.\n") is None
        assert blocked_category(f"{keyword}_client = {keyword.title()}ClientFactory.from_settings(cfg)\n") is None


@pytest.mark.parametrize("text", [
    "OPENAI_BASE_URL=http://guardproxy:8790/v1",
    "export OPENAI_API_BASE=https://llm-gw7.acme-corp.net:8443/openai/v1\n",
    "openai_base_url: http://127.0.0.1:8790/v1",
    "DATADOG_SITE_URL=https://us5.datadoghq.com",
])
def test_a_keyed_url_to_a_host_is_not_a_key(text: str) -> None:
    """A provider's name before a URL (where its client is pointed) names no key: the host and port
    are not judged as a random value."""
    assert blocked_category(text) is None


def test_a_key_in_the_path_of_a_keyed_url_is_still_found() -> None:
    key = "Zx9Qw3Er7Ty1Ui5Op2As"
    assert blocked_category(f"OPENAI_WEBHOOK_URL=https://hooks.acme-corp.com/v1/{key}") == "openai"
    assert blocked_category(f"OPENAI_API_KEY=http://{key}") == "openai"  # a key dressed as a host
    assert blocked_category(f"OPENAI_API_KEY=https://{key}.acme-corp.com:8443/v1") == "openai"


@pytest.mark.parametrize("text", [
    'password = "hRtqLmPzXwKvNbYsQe"',                          # letters only, mixed case
    "api_key = tok_3f9a0b1c2d3e4f5a6b7c8d9e0f1a2b3c",           # prefixed hex under the whole-value threshold
    "secret: ab9.Xk2:Qz7~Lm4%Rt8pWw",                           # . : ~ % inside the value
    "<password>Zx9Qw3Er7Ty1Ui5Op</password>",                    # XML element
    '<add key="DbPassword" value="Zx9Qw3Er7Ty1Ui5Op"/>',        # XML attribute pair
    'props.setProperty("db.password", "Zx9Qw3Er7Ty1Ui5Op");',   # setProperty(...)
    'os.environ["API_TOKEN"] = "Zx9Qw3Er7Ty1Ui5Op"',
    "export AUTH_TOKEN=Zx9Qw3Er7Ty1Ui5Op",
])
def test_generic_assignment_forms(text: str) -> None:
    assert blocked_category(text + "\n") == "generic"


@pytest.mark.parametrize("text", [
    "self.secret_key_manager = SecretKeyManagerFactory()",
    "token = tokenizer.encode(text)",
    "password = os.environ.get('DB_PASSWORD')",
    "key: https://vault.internal/v1/secret/data/app",
    "secret_key = 550e8400-e29b-41d4-a716-446655440000",
    "commit_sha_key = sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "<password>${DB_PASSWORD}</password>",
    'setProperty("password", "your-password-here")',
    "hash(password, salt)",
    "tokens > 1000 and keys < 20",
    "The key insight: tokenization is cheap.",
    "api_key = settings.DEFAULT_PROVIDER_API_KEY",
])
def test_generic_near_misses_pass(text: str) -> None:
    assert blocked_category(text + "\n") is None


def test_url_credentials_need_a_real_password() -> None:
    assert blocked_category("DATABASE_URL=postgres://app:Q7x2Lp9Zr4Tk@db:5432/app\n") == "url_credentials"
    for text in ("postgresql://user:password@localhost/db", "redis://:${REDIS_PASSWORD}@cache:6379",
                 "mongodb://postgres:postgres@localhost", "https://user:<password>@example.com",
                 "See https://docs.python.org/3/library/re.html for details."):
        assert blocked_category(text + "\n") is None, text


def test_github_checksum() -> None:
    rng = random.Random(5)
    body = "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(30))
    number, suffix = 0, ""
    import zlib
    number = zlib.crc32(body.encode())
    alphabet = string.digits + string.ascii_uppercase + string.ascii_lowercase
    while number:
        number, digit = divmod(number, 62)
        suffix = alphabet[digit] + suffix
    token = body + suffix.rjust(6, "0")
    assert secret_checks.base62_crc32_ok(token)
    assert not secret_checks.base62_crc32_ok(token[:-1] + ("A" if token[-1] != "A" else "B"))
    # A low-entropy token with a valid checksum is blocked: the checksum says it is real.
    low = "aaaabbbbccccddddeeeeffffgggghh"
    number, suffix = zlib.crc32(low.encode()), ""
    while number:
        number, digit = divmod(number, 62)
        suffix = alphabet[digit] + suffix
    assert blocked_category(f"token ghp_{low}{suffix.rjust(6, '0')} here") == "github"
    assert blocked_category(f"token ghp_{low}abcdef here") is None


def test_jwt_short_payload_and_long_header() -> None:
    sig = fill("{b64u:43}", random.Random(1))
    short = f"eyJhbGciOiJIUzI1NiJ9.eyJ1aWQiOjF9.{sig}"  # {"uid": 1}: a principal, however short
    assert blocked_category(f"see {short} end") == "jwt"
    long_header = "eyJhbGciOiJSUzI1NiIsIng1YyI6WyI" + fill("{b64u:400}", random.Random(2))
    claims = base64.urlsafe_b64encode(b'{"sub":"auth0|5f7c8ec7c33c6c004bbafe82","exp":4102444800}').decode().rstrip("=")
    assert blocked_category(f"see {long_header}.{claims}.{sig} end") == "jwt"
    assert blocked_category(f"not a jwt: eyJ{fill('{b64u:40}', random.Random(3))}.eyJ{sig} end") is None


def test_categories_include_every_family() -> None:
    assert {rule.family for rule in RULES} | set(KEYED) | {"generic"} == set(CATEGORIES)
    assert len(CATEGORIES) >= 100
    assert keyed_rule("datadog", KEYED["datadog"])[0].family == "datadog"


# --- horizon -----------------------------------------------------------------------------------

PIECES = [fill(t, random.Random(i)) for i, t in enumerate(TEMPLATES.values())] + [
    " ", "\n", "= ", ": ", '"', "password", "api_key", "sk-", "ghp_", "xoxb-", "eyJ", "AKIA", "://", "@",
    "the ", "deploy ", "12345678", ":AA", "-----BEGIN", "Q~", "datadog_", "Bearer ", "hooks.slack.com/"]


def _last_match_start(check: DeltaCheck) -> int:
    assert isinstance(check, SecretsCheck)
    return check.last_start


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=8), st.integers(0, 10_000), st.integers(1, 12))
def test_horizon_is_safe_monotone_and_bounded(parts: list[str], seed: int, hi: int) -> None:
    text = "".join(parts)
    check = arm()
    acc, last = "", 0
    for delta in random_chunks(text, seed, 1, hi):
        acc += delta
        decision = check.check(acc, delta)
        if isinstance(decision, Block):
            assert _last_match_start(check) >= last, "a released character was part of the match"
            return
        horizon = check.horizon(acc)
        assert last <= horizon <= len(acc)
        assert horizon >= len(acc) - check.window
        last = horizon
    if isinstance(check.finish(acc), Block):
        assert _last_match_start(check) >= last


def test_horizon_releases_prose_at_once() -> None:
    check = arm()
    text = "The deployment finished in four minutes and the checks went green. "
    acc = ""
    for ch in text:
        acc += ch
        check.check(acc, ch)
    assert check.horizon(acc) == len(acc)


def test_pending_hits_die_at_the_first_impossible_character() -> None:
    check = arm()
    acc = "the task keys are here and the sk-learn docs say "
    check.check(acc, acc)
    scanner = check._scanner  # type: ignore[attr-defined]
    assert isinstance(scanner, KeywordScanner)
    assert scanner.pending == 0


def _rand(alphabet: str, n: int, seed: str) -> str:
    rng = random.Random(seed)
    while True:
        value = "".join(rng.choice(alphabet) for _ in range(n))
        if secret_checks.looks_random(value, min_classes=2):
            return value


HEX32, B62 = _rand("0123456789abcdef", 32, "hex"), _rand(string.ascii_letters + string.digits, 24, "b62")


@pytest.mark.parametrize("text", [
    f"<twilioToken>\n    {HEX32}\n</twilioToken>",            # XML element over lines
    f'DATADOG_API_KEY ?= "{HEX32}"',                          # Makefile conditional assignment
    f'DATADOG_API_KEY ::= "{HEX32}"',
    f'$datadogKey .= "{HEX32}"',                              # PHP concatenation
    f'var oktaToken string = "00{B62}=Xa-{B62[:5]}"',         # Go typed var, "=" inside the value
    f"val twilioKey: String = \"{HEX32}\"",                   # Kotlin typed val
    f'twilio_sid = "SK{HEX32}"',                              # type letters, then hex
    f"set SNYK_API_TOKEN={HEX32[:8]}-{HEX32[8:12]}-{HEX32[12:16]}-{HEX32[16:20]}-{HEX32[20:]}",  # no spaces
    f"DATADOG_API_KEY={HEX32}",
    f"AZURE_API_MANAGEMENT_SUBSCRIPTION_KEY={HEX32}",         # a long name between the word and the value
    f'sumoToken = "su{B62[:12]}"',                            # a 14-character access id
    "sumo_token: 'suCbalLsXNkFlC'",                           # ... of letters only
    f"finicityToken = '{HEX32[:10]}5678{HEX32[14:]}'",        # one counting run in a long random value
    f"npmToken: '{HEX32[:8]}-{HEX32[8:12]}-{HEX32[12:16]}-{HEX32[16:20]}-{HEX32[20:]}'",
])
def test_keyed_assignment_forms(text: str) -> None:
    assert blocked_category(text + "\n") is not None, text


@pytest.mark.parametrize("text", [
    f'linearToken = "{HEX32}"',                               # hex under a secret's name
    f'"client_secret" : "{HEX32}{HEX32}"',
    f'var genericToken string = "{B62}{B62[:8]}"',
    f'const apiKey = "{HEX32}";',                             # hex under an API key's name
    f"apiKey |{HEX32}{HEX32[:8]}",                            # a table's column
])
def test_generic_hex_and_typed_forms(text: str) -> None:
    assert blocked_category(text + "\n") == "generic", text


@pytest.mark.parametrize("text", [
    f"cache_key = {HEX32}",                                   # a digest under a plain "key"
    f"| cache key | {HEX32} |",
    "| 100000000000001|chapter_one_two_three_four_ |",       # a number and a word in a table
    f"token_sha256 = {HEX32}{HEX32}",                         # a digest named as one
    f"See https://github.com/adobe-type-tools/agl/raw/{HEX32}{HEX32[:8]}/list.txt",
    f"http://partners.adobe.com/public/developer/en/ps/5002.EPSF_Spec{HEX32[:6]}.pdf",
    "The vault reads s.Metadata before the token is issued.",
])
def test_digests_urls_and_words_pass(text: str) -> None:
    assert blocked_category(text + "\n") is None, text


def test_slack_legacy_vault_batch_and_1password_service_tokens() -> None:
    assert blocked_category(f"xoxs-4168437291-1320496541-5609968301-{HEX32[:10]}\n") == "slack"
    assert blocked_category("token - 'xoxb-65677559833-9613778673399u'\n") == "slack"  # ids, a cut tail
    assert blocked_category("token - 'xoxb-65677559833?9613778673399u'\n") is None
    assert blocked_category("xoxb-11111111111-1111111111111\n") is None
    assert blocked_category(f"token: hvb.AAAAAQ{B62}{B62}\n") == "vault"
    service = base64.b64encode(b'{"signInAddress":"my.1password.com","userAuth":{"method":"SRPg"}}').decode()
    assert blocked_category(f"OP_SERVICE_ACCOUNT_TOKEN=ops_{service}\n") == "1password"
    assert blocked_category("OP_TOKEN=ops_eyJ" + "x" * 60 + "\n") is None


def test_docker_config_auth_must_decode_to_a_login() -> None:
    login = base64.b64encode(f"ci-bot:{B62}".encode()).decode()
    assert blocked_category(f'{{"auths": {{"ghcr.io": {{"auth": "{login}"}}}}}}\n') == "docker"
    escaped = f'DOCKER_AUTH_CONFIG="{{\\"auths\\":{{\\"r.io\\":{{\\"auth\\":\\"{login}\\"}}}}}}"'
    assert blocked_category(escaped + "\n") == "docker"
    key_file = base64.b64encode(b'_json_key:{\n  "type": "service_account",\n  "private_key": "' + B62.encode() * 100).decode()
    assert blocked_category(f'{{"auths": {{"https://gcr.io": {{\n "auth": "{key_file}"}}}}}}\n') == "docker"
    for value in (base64.b64encode(b"no colon here at all").decode(), base64.b64encode(b"user:password").decode(),
                  "bm90IGJhc2U2NA"):
        assert blocked_category(f'{{"auth": "{value}"}}\n') is None, value


@pytest.mark.parametrize("text", [
    f'publicToken = "{B62}{B62[:8]}"',                        # a public token
    f'<input type="hidden" name="authenticity_token" value="{B62}{B62}">',
    f'csrf-token={B62}{B62}',
    f'"credentialId": "{B62}"',                               # an identifier named after a credential
    'LLM_SECRET_NAME = "NEXUS-GPT4-API-KEY"',
    f"ReactNativeCameraKit: {HEX32}",                         # "meraki" inside a word
    f'SetSysctl = "{B62}"',                                   # "etsy" inside a word
    "xoxe.xoxp-1-SlackAppConfigurationAccessTokenHere",       # camelCase words, not random letters
    f"video_box.ico-{HEX32}.png",                             # "ico-" inside a file name
    "node = ptr_to_next_element_in_the_list_2;",              # "ptr_" in C, words
    "sumo_token: 'suspiciousWord'",                           # a sumo id's shape made of words
    "api_key = 'abcd1234efgh5678ijkl9012'",                   # hand-typed: several counting runs
])
def test_public_values_identifiers_and_glued_words_pass(text: str) -> None:
    assert blocked_category(text + "\n") is None, text


def test_a_text_made_of_a_keyword_still_finds_the_key_after_it() -> None:
    # 'aaaa...' is twitter's keyword (21 'A's) at every offset: each pending hit searches only as
    # far as a match holding it could reach (it searched to the end before: 31 s for 40,000 'a's).
    token = "A" * 22 + "b9Xk2LmQ7pR4sT1vW8yZ3nC6dF0gH5jK9mN2qP4r"
    assert run(arm(), ["a" * 40_000]).block is None
    assert blocked_category("a" * 40_000 + " " + token, ["a" * 40_000 + " " + token]) == "twitter"
    assert blocked_category("A" * 3_000 + " " + token, ["A" * 3_000 + " ", token]) == "twitter"
