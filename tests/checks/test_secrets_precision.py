"""Ordinary code and docs do not trip the ``secrets`` check (issue #32): identifiers, query strings,
placeholder logins in URLs and Basic headers, header names, elided tokens, file names, encoded
text. Each near miss has a real-looking neighbour that still blocks, so a filter that let every
value through would fail here too. Whole text, one character at a time and in random chunks."""

from __future__ import annotations

import base64
import json

import pytest

from tests.checks.test_secrets_catalog import blocked_category
from tests.stream_support import random_chunks

KEY = "Zx9Qw3Er7Ty1Ui5Op2As"
SIG = "Kx8vQ2mZp9LrT4wYb7NcH1sJf6GdE3uAq0oViXyW5Rk"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _jwt(claims: dict[str, object], sig: str = SIG) -> str:
    header = _b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    return f"{header}.{_b64(json.dumps(claims).encode())}.{sig}"


def _every_split(text: str) -> set[str | None]:
    return {blocked_category(text, [text]), blocked_category(text),
            blocked_category(text, list(random_chunks(text, seed=3)))}


@pytest.mark.parametrize("text", [
    "from fastapi.security import OAuth2PasswordBearer, OAuth2PasswordRequestForm\n",
    'oauth2_scheme = OAuth2PasswordBearer(tokenUrl="token")\n',
    "r = requests.get('https://httpbin.org/get?key1=value1&key2=value2')\n",
    "url = 'http://user:pass@host'\n",
    'url = "https://user:password123@example.org/"\n',
    '("https://username%40gmail.com:pa%20ssword@example.com", b"...")\n',
    "httpx.URL('https://jo%40email.com:a%20secret@example.com')\n",
    "``http://the-username:the-password@example.com``\n",
    "DSN: ``sns://ACCESS_KEY:SECRET_KEY@default?region=REGION``\n",
    "DSN: ``googlechat://ACCESS_KEY:ACCESS_TOKEN@default/SPACE``\n",
    '    "authorization": "Basic dXNlcm5hbWU6cGFzc3dvcmQ=",\n',          # username:password
    "'Authorization: Basic YWxhZGRpbjpvcGVuc2VzYW1l',\n",                # RFC 7617: aladdin:opensesame
    'headers = {"authorization": request.headers["authorization"]}\n',
    '{"access_token":"eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9..."}\n',      # elided
    '-H "Authorization: Bearer eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJ1c2Vybm..."\n',
    "      withXSRFToken: defaultToConfig2,\n",
    "      cancelToken: defaultToConfig2,\n",
    'json={"email": "deadpool@example.com", "password": "chimichangas4life"},\n',
    'check_body(b"username=user&password=secure%20password").await;\n',
    'c.Request.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")\n',
    '.header("sec-websocket-key", "6D69KGBOr4Re+Nj6zx9aQA==")\n',
    "[message-passing-threads]: ch16-02-message-passing.html\n",
    "[message-passing]: ch17-02-concurrency-with-async.md#sending-data-between-two-tasks\n",
    "{\n  key: 'posts/1-dashboard-view'\n}\n",
    'couchbase://host?fetch_mutation_tokens=1&operation_timeout=30&n1ql_timeout=300"\n',
    # JWTs written for docs and tests: sample claims, no claims, only times, no signature
    f"-H 'Authorization: Bearer {_jwt({'sub': '1234567890', 'name': 'John Doe', 'iat': 1516239022})}'\n",
    f'"token": "{_jwt({"exp": 1461957136})}"\n',
    f'tokenString := "{_jwt({"foo": "bar", "iss": "test", "aud": "single"})}"\n',
    f"var TOKEN = '{_jwt({})}';\n",
    f"const token = '{_jwt({'sub': 'auth0|5f7c8ec7c33c6c004bbafe82'}, sig='')}';\n",
    f"headers: {{ Authorization: 'Bearer {_jwt({'sub': 'b@b.com', 'company': 'ACME'})}' }}\n",
    # generic: argument lists and type parameters, calls, coordinates, slugs, counting runs
    "use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, pem::PemObject};\n",
    "public interface SecretJwkBuilder extends JwkBuilder<SecretKey, SecretJwk, SecretJwkBuilder> {}\n",
    "KeyAlgorithm<Password, Password> PBES2_HS256_A128KW = Jwts.get(REGISTRY, \"PBES2-HS256+A128KW\");\n",
    "val keySpecPKCS8 = PKCS8EncodedKeySpec(Base64.getDecoder().decode(privateKeyString))\n",
    "\t\tprivateKey = jwtTestEC256PrivateKey\n",
    "compile 'io.jsonwebtoken:jjwt-jackson:0.11.0:deprecated'\n",
    "  link: https://dev.to/someone/another-boilerplate-to-fastapi-azure-pipeline-ci-pytest-3c8d9a4be0bb\n",
    "val secretEncryptKey = \"00112233445566778899aabbccddeeff\".hexToByteArray()\n",
    "<aws-secret-access-key>\nAWS_DEFAULT_REGION=us-east-1\n",
    'case"keyup":return-1!==In.indexOf(t.keyCode);\n',
    "Cashier utilizes Stripe API version `2025-06-30.basil`. The Stripe API\n",
    # published framework samples
    'SECRET_KEY = "09d25e094faa6ca2556c818166b7a9563b93f7099f6f0f4caa6cf63b88e8d3e7"\n',
    "SECRET_KEY = '192b9bdd22ab9ed4d12e236c78afcb9a393ec15f71bbf5dc987d54727823bcbf'\n",
])
def test_ordinary_code_and_docs_pass(text: str) -> None:
    assert _every_split(text) == {None}, text


def _basic(login: str) -> str:
    return base64.b64encode(login.encode()).decode()


@pytest.mark.parametrize(("text", "family"), [
    (f'headers = {{"Authorization": "Basic {_basic("deploy:" + KEY)}"}}\n', "auth_header"),
    ("url = 'https://deploy:Q7x2Lp9Zr4Tk@db.internal/app'\n", "url_credentials"),
    (f"api_key = '{KEY}'\n", "generic"),
    (f"r = requests.get('https://api.acme-corp.net/v1/items?api_key={KEY}&page=2')\n", "generic"),
    (f'props.setProperty("db.password", "{KEY}");\n', "generic"),
    # (a header that holds a JWT: the token's own rule names it, as a provider's names its key)
    (f"-H 'Authorization: Bearer {_jwt({'sub': 'auth0|5f7c8ec7c33c6c004bbafe82', 'exp': 4102444800})}'\n",
     "jwt"),
    (f"token = {_jwt({'iss': 'https://login.acme-corp.net/', 'sub': '8f2c1e', 'exp': 4102444800})}\n", "jwt"),
    (f'SECRET_KEY = "{KEY}{KEY}"\n', "generic"),
    (f"api_key = '{KEY}' # the key for io.jsonwebtoken:jjwt:0.11.0\n", "generic"),
])
def test_real_looking_neighbours_still_block(text: str, family: str) -> None:
    assert _every_split(text) == {family}, text
