"""A generic value must look like a secret, not like where one is kept (issue #32, second round).

Benign shapes from docs, samples and test suites that the ``secrets`` check tripped on: key and
keystore file names, resource URLs and addresses, a hyphenated name after a provider's word, a
nested setting, values typed by a person, a site search's public key, tokens whose claims were
written for a test, and the examples the OAuth and JOSE standards publish. Each has a real-looking
neighbour of the same shape that still blocks, so a filter that let everything through fails here
too. Whole text, one character at a time and in random chunks."""

from __future__ import annotations

import base64
import json

import pytest

from tests.checks.test_secrets_catalog import blocked_category
from tests.stream_support import random_chunks

KEY = "Zx9Qw3Er7Ty1Ui5Op2As"
HEX = "8f3a1c9e27d04b6a5e1f9c3d7b2a6e40"
SIG = "Kx8vQ2mZp9LrT4wYb7NcH1sJf6GdE3uAq0oViXyW5Rk"
UUID = "0f64bca9-b588-41aa-ad41-2afd368df51d"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _jwt(claims: dict[str, object]) -> str:
    header = _b64(json.dumps({"alg": "RS256", "typ": "JWT"}).encode())
    return f"{header}.{_b64(json.dumps(claims).encode())}.{SIG}"


def _paseto(claims: dict[str, object]) -> str:
    signature = bytes(range(7, 71))  # 64 bytes, as an Ed25519 signature is long
    return "v2.public." + _b64(json.dumps(claims).encode() + signature)


def _every_split(text: str) -> set[str | None]:
    return {blocked_category(text, [text]), blocked_category(text),
            blocked_category(text, list(random_chunks(text, seed=5)))}


@pytest.mark.parametrize("text", [
    # where a key is kept: key, certificate and keystore files, resource URLs, addresses
    'key = "private/ecdsa_nistp256_sha256_key_pkcs8.pem"\n',
    "    key-store: 'classpath:./certs/server.p12'\n",
    "server.ssl.key-store=classpath:api-keystore.p12\n",
    "\t// Example: redis://<user>:<pass>@localhost:6379/<db>\n",
    # a hyphenated name after a provider's word, a nested setting after it
    "/@someone/how-to-deploy-gofiber-app-to-firebase-functions-8d4d537a4464\n",
    "docker run --name some-clickhouse-server --ulimit nofile=262144:262144 clickhouse/clickhouse-server\n",
    # typed by a person: a repeated unit, counting runs, a run of punctuation to fill a field
    'api_key = "x7Kq9Lm2Pw4Zx7Kq9Lm2Pw4Z"\n',
    'client_secret = "abc123def456ghi789"\n',
    '    input.password = "----90138490285u2o3hndslkv".into();\n',
    "-H 'Authorization: Bearer abcdabcdabcdabcdabcdabcd'\n",
    "-H 'Authorization: Bearer valid_access_token_for_tests'\n",
    # a site search's key, published by design
    "docsearch({\n  apiKey: '69274449268769eb3878f6a13dd112f9',\n  indexName: 'hanamirb_guides',\n})\n",
    "algolia: {\n  appId: '4AFTIR2HGK',\n  apiKey: 'b92d819e8e37b59dc5d564d763542682',\n},\n",
    # tokens whose claims were written for a test
    f'String noScopesToken = "{_jwt({"sub": "subject", "exp": 2164245880, "jti": UUID, "scope": ["none"]})}";\n',
    f'"{_jwt({"stringClaim": "string", "intClaim": -1, "objectClaim": {"property": "something"}})}",\n',
    f"-H 'Authorization: Bearer {_paseto({'aud': 'gofiber.gophers', 'data': 'john', 'sub': 'user-token', 'jti': UUID})}'\n",
    # tokens that name nobody and never expire, tokens long expired, malformed tokens, token parts
    f'String token = "{_jwt({"iss": "auth0"})}";\n',
    f'DecodedJWT jwt = JWT.decode("{_jwt({"name": [1, 2, 3]})}");\n',
    f"-H 'Authorization: Bearer {_jwt({'sub': 'auth0|5f7c8ec7c33c6c004bbafe82', 'exp': 1572006964})}'\n",
    f'String token = ".{_jwt({"iss": "auth0"}).split(".", 1)[1]}";\n',
    'private static final String auth0IssPayload = "eyJpc3MiOiJhdXRoMCJ9";\n',
    # names that say the value is derived or code: a hash, a namespaced constant, a type
    '\tgoogleAccessTokenHash = "piwt8oCH-K2D9pXlaS1Y-w"\n',
    "    credentials = ActionController::HttpAuthentication::Basic.encode_credentials user, pass\n",
    "    def sign(self, msg: bytes, key: Ed25519PrivateKey) -> bytes:\n",
    "        client = Client('client_key', signature_method=SIGNATURE_HMAC_SHA256)\n",
    # a password's stored hash; a provider's name that says an identifier
    'password = "pbkdf2_sha256$600000$Zx9Qw3Er7Ty1Ui5Op2As$aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5bC7dE9f="\n',
    'AzureAdClientId = "fdb91ff5-5ce6-41f3-bdbd-8267c817015d"\n',
    # a badge's token, published in a README by design
    "[![GuardRails](https://api.guardrails.io/v2/badges/21183?token=66768ce8f6995814df81f65a2cff40f739f688492704f973e62809e15599bb62)](https://x)\n",
    # the standards' own examples
    'oauth_consumer_key="9djdj82h48djs9d2",\n    oauth_token="kkk9d7dh3k39sjv7",\n',
    '{"access_token":"2YotnFZFEjr1zCsicMWpAA","token_type":"example","refresh_token":"tGzv3JOkF0XG5Qx2TlKWIA"}\n',
    "Authorization: Basic czZCaGRSa3F0MzpnWDFmQmF0M2JW\n",
    'code_verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"\n',
])
def test_benign_values_pass(text: str) -> None:
    assert _every_split(text) == {None}, text


@pytest.mark.parametrize(("text", "family"), [
    (f'key = "{KEY}{KEY}"\n', "generic"),
    (f"    key-store-password: '{KEY}'\n", "generic"),
    (f"FIREBASE_SERVER_KEY={KEY}\n", "firebase"),
    (f"clickhouse password: {KEY}\n", "clickhouse"),
    (f'client_secret = "{KEY}"\n', "generic"),
    (f'    input.password = "{KEY}".into();\n', "generic"),
    (f"-H 'Authorization: Bearer {SIG}'\n", "auth_header"),
    (f"ALGOLIA_ADMIN_KEY={HEX}\n", "algolia"),
    (f"const client = algoliasearch('4AFTIR2HGK', '{HEX}'); // algolia_api_key = '{HEX}'\n", "algolia"),
    (f'String token = "{_jwt({"sub": "subject", "tid": UUID, "exp": 2164245880})}";\n', "jwt"),
    (f'"{_jwt({"stringClaim": "string", "user_id": 4823941})}",\n', "jwt"),
    (f"-H 'Authorization: Bearer {_paseto({'aud': 'api.acme-corp.net', 'sub': 'auth0|5f7c8ec7c33c6c004bbafe82'})}'\n",
     "auth_header"),
    (f'{{"access_token":"{SIG}","token_type":"bearer"}}\n', "generic"),
    (f'String token = "{_jwt({"iss": "auth0", "exp": 4102444800})}";\n', "jwt"),
    (f'String token = "{_jwt({"iss": "auth0", "user_id": "u-8812"})}";\n', "jwt"),
    (f"token = {_jwt({'sub': 'auth0|5f7c8ec7c33c6c004bbafe82', 'exp': 4102444800})}\n", "jwt"),
    ('AUTH0_CLIENT_KEY = "' + _b64(b'{"type":"service_account","private_key_id":"8f3a1c9e"}') + '"\n', "auth0"),
    (f'\tgoogleAccessTokenSecret = "{KEY}"\n', "generic"),
    (f'password = "pbkdf2{KEY}"\n', "generic"),
    (f'AzureAdClientSecret = "{KEY}"\n', "azure"),
    ('SUMO_ACCESS_ID = "suGyI5imvADdvU"\n', "sumologic"),
    (f"https://api.acme-corp.net/v2/items/21183?token={HEX}{HEX}\n", "generic"),
    (f"        client = Client('client_key', client_secret={KEY})\n", "generic"),
])
def test_real_looking_neighbours_still_block(text: str, family: str) -> None:
    assert _every_split(text) == {family}, text
