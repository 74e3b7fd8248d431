"""Whether a candidate that a secrets rule matched is a credential rather than an example.

A real key is random (``looks_random``); a format with a checksum (GitHub and npm tokens: the
last six base62 characters are the CRC32 of the thirty before them) passes on the checksum alone.
A JWT's header must decode to JSON naming ``alg`` or ``typ``. A URL's password must not be a
placeholder. A generic assignment's value must not be a path, a URL, a template, a digest or a
UUID, nor a camelCase or snake_case identifier; a value with a word prefix (``tok_``, ``key-``)
is judged on its random body, so a prefixed hex token below the whole value's threshold counts.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import itertools
import re
import string
import urllib.parse
import zlib

from guardrails.stream._scan import PLACEHOLDER_WORDS, looks_random
from guardrails.stream.token_claims import jwt_payload_sample, paseto_public_sample

_BASE62 = string.digits + string.ascii_uppercase + string.ascii_lowercase
_HEX_DIGEST = re.compile(r"(?:[0-9a-f]{32}|[0-9a-f]{40}|[0-9a-f]{64}|[0-9a-f]{128})", re.IGNORECASE)
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.IGNORECASE)
_DIGEST_NAMES = ("sha", "md5", "blake", "sum", "hash", "git", "commit", "rev", "digest", "crc")
# Names that hold an identifier or a place, not the secret itself (``credentialId``, ``SECRET_NAME``).
_NOT_SECRET_NAMES = ("id", "name", "url", "uri", "file", "path",
                     # a configuration section's name (``ScopeKeySection = "DownstreamB2CApi:Scopes"``)
                     "section",
                     # what is derived from a secret and shown in its place (``accessTokenHash``)
                     "hash", "digest", "checksum", "fingerprint", "signature", "thumbprint")
_SECRET_NAMES = ("secret", "token", "passw", "credential", "apikey", "api_key", "api-key", "api.key",
                 "accesskey", "access_key", "access-key")
# A short type letter or two before hex (``SK`` + 32 hex, a Twilio key sid): judged on the hex.
_LETTERS_THEN_HEX = re.compile(r"[A-Za-z]{1,4}([0-9a-f]{24,}|[0-9A-F]{24,})")
# A URL's scheme and host (and port), with no user or password in it (those are ``url_credentials``'):
# ``OPENAI_BASE_URL=http://guardproxy:8790/v1`` names where a client sends its requests, not a key.
_URL_ORIGIN = re.compile(r"[A-Za-z][A-Za-z0-9+.-]{0,15}://[A-Za-z0-9.-]+(?::[0-9]{1,5})?(?=[/?#]|$)")
# Published sample values that documentation repeats (the jwt.io sample's payload prefix), and the
# example keys of popular frameworks' docs and tutorials: a value published in a framework's docs is
# public, and a model that learned from those docs repeats it. Prefixes of at least 20 characters,
# or whole values of at least 10 that no generator would repeat.
KNOWN_SAMPLES = (
    "eyJzdWIiOiIxMjM0NTY3ODkw",
    "09d25e094faa6ca2556c818166b7a9563b93f7099f6f0f4caa6cf63b88e8d3e7",  # FastAPI's OAuth2/JWT tutorial
    "192b9bdd22ab9ed4d12e236c78afcb9a393ec15f71bbf5dc987d54727823bcbf",  # Flask's config and deploy docs
    "5f352379324c22463451387a0aec5d2f",                                  # Flask's config docs
    "3b7cd727ee24e8444053437c36cc66c3",                                  # Rails 4.1 release notes
    "YehXdfzxVKpoLvKseJMJIEGs2JxerkB8",                                  # Rails guides: Active Record
    "uhtk2DYS80OweAPnMLtrV2FhYIXaceAy",                                  #   encryption keys
    "g7Q66StqUQDQk9SJ81sWbYZXgiRogBwS",
    "99eYu7ZO0JEwXUcpxmja5PnoRJMaazVZ",                                  # Rails guides: command line
    "lGRKzINTrMTDSuuOIr6r5kdq2sH6S6Ii",
    "aoOUutSgvw788fvO3z0",
    "6013280bda2fcbdbeda1732859df557a067ac81c423855aedba057f7a9b1416",
    "6819b57a326945c1968f45236589",                                      # Ktor's sessions docs
    "MIIBVQIBADANBgkqhkiG9w0BAQEFAASCAT8wggE7",                          # Ktor's RS256 JWT sample
    "J63qRTDLub5NuZvP+kb8YIorGS6qFYHKVo6u7179stY",                       # Laravel's encryption docs
    "2nLsGFGzyoae2ax3EF2Lyq/hH6QghBGLIq5uL+Gp8/w",
    "cc86c7ca937636d5ddf1b754beb22a10",                                  # Symfony's quick tour
    "j17M97ffSVoKI0briFoo9a",                                            # Symfony's Messenger docs
    "hPRYyVRiMyxpw5sBB1XeCMN1kFsDCqKvBi2QJxBVHQk",                       # Rocket's config docs
    "itlYmFR2vYKrOmFhupMIn/hyB6lYCCTXz4yaQX89XVg",                       # Rocket's cookies example
    "a6aa65a71538a56faffe1b1c9e96c0dc600de5dd14172f03c35cc48c3b27affe",  # Hanami's generators guide
    "43n080musdfjt54t-09sdgr",                                           # Starlette's config docs
    # The examples of the standards every OAuth and JOSE library quotes in its docs and tests:
    # RFC 6749 (access, refresh and code values, s6BhdRkqt3's secret and Basic login), RFC 7636
    # (PKCE verifier and challenge), RFC 7515 (the HMAC key of its JWS example), RFC 5849 (OAuth
    # 1.0 client and token secrets), jwt.io's sample signature; Stripe's published docs test keys.
    "2YotnFZFEjr1zCsicMWpAA", "tGzv3JOkF0XG5Qx2TlKWIA", "SplxlOBeZQQYbYS6WxSbIA",
    "7Fjfp0ZBr1KtDRbnfVdmIw", "czZCaGRSa3F0MzpnWDFmQmF0M2JW", "8xLOxBtZp8",
    "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk", "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
    "AyM1SysPpbyDfgZld3umj1qzKObwVMkoqQ-EstJQLr_T-1qS0gZH75aKtMN3Yj0iPS4hcgUuTwjAzZr1Z9CAow",
    "kd94hf93k423kf44", "pfkkdhi9sl3r4s00", "hh5s93j4hdidpola", "hdhd0244k9j7ao03", "nnch734d00sl2jdk",
    "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
    # RFC 5849 (OAuth 1.0) sections 1.2, 3.1 and 3.5.1; RFC 7009 (revocation); OpenID Connect Core
    # (its authorization code, access token and at_hash examples).
    "dpf43f3p2l4k3l03", "hfdp7dh39dks9884", "kllo9940pd9333jh", "9djdj82h48djs9d2", "kkk9d7dh3k39sjv7",
    "j49sk3j29djd", "dh893hdasih9", "0685bd9184jfhq22", "ad180jjd733klru7", "wOJIO9A2W5mFwDgiDvZbTSMK/PY",
    "bYT5CMsGcbgUdFHObYMEfcx6bsw", "45ghiukldjahdnhzdauz", "SlAV32hkKG",
    "Qcb0Orv1zh30vL1MPRsbm-diHiMwcLyZvn1arpZv-Jxf_11jnpEX3Tgfvk", "jHkWEdUXMU1BwAsC4vtUsZwnNvTIxEl0z9K3vx5KF0Y",
    "77QmUPtjPfzWtF2AnpK9RQ",
    # PyJWT's usage docs: the RSA, Ed25519 and EC private keys of its examples (the first 32
    # characters of each key's body, which is what the private-key rule reads).
    "MIIEpAIBAAKCAQEAwhvqCC+37A+UXgcv", "MIIEogIBAAKCAQEAuNhCS6bodtd+PvKq", "MC4CAQAwBQYDK2VwBCIEIPtUxyxlhjOW",
    "MHcCAQEEIHAhM7P6HG3LgkDvgvfDeaMA",
    "sk_test_4eC39HqLyjWDarjtT1zdp7dc", "pk_test_TYooMQauvdEDq54NiTphI7jx",
)
_PASSWORD_PLACEHOLDERS = frozenset((
    "password", "passwd", "pass", "pwd", "secret", "changeme", "admin", "root", "user", "username",
    "postgres", "mysql", "redis", "guest", "test", "demo", "default", "xxx", "xxxx", "xxxxxx", "token",
    "apikey", "api_key", "mypassword", "yourpassword", "pa55word", "p@ssw0rd", "letmein", "foobar", "foo",
    "bar", "baz", "null", "none", "empty", "example", "sample", "dummy", "fake", "mysecretpassword",
    "opensesame", "secure", "qwerty", "hunter", "abc", "abcd", "passw", "s3cret", "supersecret", "tiger",
    "scott",
))
# Digests of the empty input, which examples and tests paste everywhere.
EMPTY_DIGESTS = frozenset(hashlib.new(name, b"").hexdigest() for name in ("md5", "sha1", "sha256", "sha512"))
REPEAT = re.compile(r"(.)\1{5}")
_WORD_SPLIT = re.compile(r"[_.:~-]")
_CAMEL_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
_KEBAB = re.compile(r"[A-Za-z0-9]+(?:[-_./:][A-Za-z0-9]+)+")
# (a TypeScript non-null ``!`` after it: ``process.env.AUTH0_PASSWORD!``)
_DOTTED_NAME = re.compile(r"[A-Za-z_]\w*(?:(?:\.|::)[A-Za-z_]\w*)+(?:\(.*)?!?")


def base62_crc32_ok(body: str) -> bool:
    """GitHub/npm token body (after the ``xxx_`` prefix): 30 random characters and their CRC32."""
    if len(body) != 36:
        return False
    number, out = zlib.crc32(body[:30].encode()), ""
    while number:
        number, digit = divmod(number, 62)
        out = _BASE62[digit] + out
    return out.rjust(6, "0") == body[30:]


def auth_header_ok(scheme_text: str, value: str) -> bool:
    """An ``Authorization`` header's credential: not elided (``eyJhbGci...``); a Basic login that
    decodes to ``user:password`` needs a real password (``dXNlcm5hbWU6cGFzc3dvcmQ=`` is
    ``username:password``, RFC 7617's ``YWxhZGRpbjpvcGVuc2VzYW1l`` is ``aladdin:opensesame``)."""
    if any(mark in value for mark in _ELIDED):
        return False
    if paseto_public_sample(value):
        return False
    if value.startswith("eyJ") and value.count(".") >= 1 and jwt_ok(value):
        parts = value.split(".")
        return jwt_credential(value, parts[1][3:] or None, len(parts) > 2 and len(parts[2]) >= 16)
    if "basic" in scheme_text.lower() and _B64_TEXT.fullmatch(value):
        login = _b64_ascii(value)
        if login is not None and ":" in login:
            user, _, password = login.partition(":")
            return url_password_ok(user, password)
    if not_a_value(value) or _kebab_words(value) or hand_typed(value):
        return False
    return looks_random(value, min_classes=2)


# PEM labels whose body is DER (PKCS #1, SEC 1, PKCS #8, encrypted PKCS #8, DSA); an OpenSSH, PGP
# or PuTTY key has a format of its own.
_DER_LABEL = re.compile(r"-----BEGIN ((?:RSA |EC |DSA |ENCRYPTED )?)PRIVATE KEY-----")


def der_key_start(match_text: str, body: str) -> bool:
    """Whether the first characters of a PEM private key's body (``body``: 32 base64 characters,
    24 bytes) begin a DER private key, for the labels whose body is DER: a SEQUENCE (``0x30`` and
    a length), then a version INTEGER of 0 or 1 (``02 01 00``, ``02 01 01``), or, in an encrypted
    PKCS #8 key, the SEQUENCE of its encryption algorithm. Every key ``openssl`` or a library
    writes begins so; a body typed to fill a slot (``MYPRIVATEKEYGOESHEREXXXXXXXXXXX``) does not.
    The rest of the block is not read: the check settles where the rule does, 32 characters in,
    and a whole block can be kilobytes. Other labels are not DER: always True."""
    label = _DER_LABEL.match(match_text)
    if label is None:
        return True
    try:
        raw = base64.b64decode(body, validate=True)
    except (binascii.Error, ValueError):
        return False
    if len(raw) < 8 or raw[0] != 0x30:
        return False
    at = 2 if raw[1] < 0x80 else 2 + (raw[1] & 0x7F)
    if raw[1] == 0x80 or raw[1] > 0x83 or at + 3 > len(raw):
        return False
    if raw[at] == 0x30:
        return label.group(1) == "ENCRYPTED " or label.group(1) == ""
    return raw[at:at + 2] == b"\x02\x01" and raw[at + 2] in (0, 1)


def hand_typed(value: str) -> bool:
    """A value typed by a person, not generated: one short unit repeated (``secretsecretsecret``,
    ``ab12ab12ab12ab12``), or three or more counting runs (``abc123def456ghi``). Three runs of three
    in a random 32-hex value come about once in a few hundred draws; in base62, almost never."""
    if re.match(r"([^A-Za-z0-9+/=])\1\1", value):
        return True  # opens with a run of punctuation (``----90138490285u2o3``): typed to fill a field
    lowered = value.lower()
    n = len(lowered)
    for size in range(1, min(16, n // 2) + 1):  # (a unit of up to 16 characters, repeated at least twice)
        if lowered == (lowered[:size] * (n // size + 1))[:n]:
            return True
    runs, run = 0, 1
    for a, b in itertools.pairwise(lowered):
        run = run + 1 if ord(b) - ord(a) == 1 else 1
        runs += run == 3
    return runs >= 3


def _b64_ascii(value: str) -> str | None:
    try:
        raw = base64.b64decode(value.rstrip("=") + "=" * (-len(value.rstrip("=")) % 4), validate=True)
        text = raw.decode("ascii")
    except (binascii.Error, ValueError):
        return None
    return text if text.isprintable() else None


def jwt_ok(token: str) -> bool:
    """The header (up to the first ``.``) is base64url JSON naming ``alg`` or ``typ``, and the
    payload is not a placeholder run (``eyJxxxxxxxx``)."""
    header, _, payload = token.partition(".")
    if REPEAT.search(payload):
        return False
    try:
        raw = base64.urlsafe_b64decode(header + "=" * (-len(header) % 4))
    except (binascii.Error, ValueError):
        return False
    return raw.startswith(b'{"') and (b'"alg"' in raw or b'"typ"' in raw)


def jwt_credential(token: str, payload: str | None, signed: bool = True) -> bool:
    """A signed JWT (``jwt_ok``) whose claims are not a documentation sample's (``token_claims``).
    A token without a signature (``alg: none``, or cut before it) authenticates nobody."""
    return signed and jwt_ok(token) and not (payload is not None and jwt_payload_sample(payload))


def jws_parts(value: str) -> bool:
    """``value`` is made of a JWS's dot-separated parts, one of them base64url JSON, though not as
    the jwt rule reads a token (``.eyJpc3MiOiJhdXRoMCJ9.<sig>``, ``<header>..<sig>``): a malformed
    token written for a parser's test, or one part of a token, the jwt rule's to judge."""
    return any(part.startswith("eyJ") and b64_json_ok(part) for part in value.split("."))


def _b64_json_data(value: str) -> bool:
    """Base64url of a JSON object that holds no secret's field (``eyJpc3MiOiJhdXRoMCJ9`` is
    ``{"iss":"auth0"}``): a token's part, data. One that names a key, secret, token or password
    (a service account's key file, base64-encoded) stays to be judged."""
    if not value.startswith("eyJ") or not b64_json_ok(value):
        return False
    cut = value[:len(value) - len(value) % 4]
    raw = base64.urlsafe_b64decode(cut.replace("+", "-").replace("/", "_")).lower()
    return not any(word in raw for word in (b"key", b"secret", b"token", b"passw", b"private", b"credential"))


def jwt_prefix(value: str) -> bool:
    """``value`` starts like a JWT (a JSON header naming ``alg`` or ``typ``, then a payload that
    opens with ``{"``, or the header is all there is of it): the jwt rule's to judge, whole; or a
    token of no claims (``e30``), a test's."""
    header, dot, rest = value.partition(".")
    if not header.startswith("eyJ") or not b64_json_ok(header):
        return False
    return not dot or rest.startswith(("eyJ", "e30."))  # (``e30`` is ``{}``: no claims)


def b64_json_ok(part: str) -> bool:
    """``part`` (base64 or base64url, cut anywhere) decodes to the start of a JSON object."""
    cut = part[:len(part) - len(part) % 4].replace("-", "+").replace("_", "/")
    try:
        raw = base64.b64decode(cut, validate=True)
    except (binascii.Error, ValueError):
        return False
    return re.match(rb'\{\s*"[\w.-]{1,40}"\s*:', raw) is not None


def b64_userpass_ok(part: str) -> bool:
    """``part`` is base64 of ``user:password`` with a password that is not a placeholder, or of
    ``user:{json}`` (a registry login whose password is a service account's key file)."""
    try:
        raw = base64.b64decode(part + "=" * (-len(part) % 4), validate=True).decode("ascii")
    except (binascii.Error, ValueError):
        return False
    user, sep, password = raw.partition(":")
    if sep and user.isprintable() and re.match(r'\{\s*"[\w.-]{1,40}"\s*:', password):
        return True  # a key file as the password (Google registries: ``_json_key:{"type": ...}``)
    return (bool(sep) and raw.isprintable() and len(password) >= 4 and not any(ch.isspace() for ch in raw)
            and url_password_ok(user, password))


_LEET = str.maketrans("@0134$5!", "aoleassi")
# A template's name for the value (``ACCESS_KEY``, ``API_TOKEN``, ``PASSWORD``): upper-case words.
_CONSTANT = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*")
_DEMO_PASSWORD_WORDS = ("pass", "secret", "secure", "admin", "changeme")
_PLACEHOLDER_PARTS = ("password", "passwd", "secret", "username", "pass", "pwd")


def constant_name(value: str) -> bool:
    """A template's upper-case name for a value (``ACCESS_TOKEN``, ``API_SECRET``, ``PASSWORD``)."""
    return bool(_CONSTANT.fullmatch(value)) and all(
        part.isdigit() or any(v in part for v in "AEIOUY") and not re.search(r"[^AEIOUY]{4}", part)
        for part in value.split("_") if part)


def url_password_ok(user: str, password: str) -> bool:
    """A URL's (or a basic login's) password that is not a placeholder: not a word of the
    placeholder list (also spelled with digits for letters, ``p@ssw0rd``, or with a number after it,
    ``password123``), not the user's name, not a template's upper-case name (``API_TOKEN``), not
    words joined by ``-``/``_`` with a placeholder among them (``the-password``), not text
    (percent-encoded words: ``a%20secret``)."""
    if "%" in password:
        password = urllib.parse.unquote(password)
        if any(ch.isspace() for ch in password):
            return False
    lowered = password.lower()
    if lowered in _PASSWORD_PLACEHOLDERS or lowered == user.lower() or len(set(password)) < 3:
        return False
    bare = lowered.rstrip("0123456789!")
    bare = bare if len(bare) >= 6 else lowered  # ``password123``, not ``pass456``
    if bare in _PASSWORD_PLACEHOLDERS or bare.translate(_LEET) in _PASSWORD_PLACEHOLDERS or constant_name(password):
        return False
    parts = [p for p in re.split(r"[^a-z0-9]+", lowered) if p]
    if len(parts) > 1 and any(part in _PLACEHOLDER_PARTS for part in parts):
        return False
    if any(ch in password for ch in "${}<>*[]"):
        return False
    if password.isalpha() and password.islower() and (
            len(user) >= 3 and user.lower() in lowered or lowered[:len(lowered) // 2] * 2 == lowered
            or any(word in lowered for word in _DEMO_PASSWORD_WORDS)):
        return False  # a demo's word password: the user again, a word doubled, ``supersecure``
    return not any(word in lowered for word in PLACEHOLDER_WORDS)


def names_no_secret(name: str) -> bool:
    """A keyed rule's name part (the provider's word up to the separator: ``AzureAd ClientId =``)
    that ends in a word for an identifier, a place or something derived (``id``, ``url``, ``hash``),
    with no word for a secret after it."""
    words = re.findall(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+", name)
    return bool(words) and words[-1].lower() in _NOT_SECRET_WORDS


# (Not ``url`` nor ``sid``: a webhook URL carries its key in its path, and a Twilio ``SK`` sid is
# the catalog's key format; ``keyed_value_ok`` reads a URL's parts.)
_NOT_SECRET_WORDS = frozenset(("id", "ids", "name", "region", "file", "path", "hash", "digest", "checksum",
                               "fingerprint", "signature", "thumbprint", "tenant", "instance", "audience",
                               "scope", "scopes", "version"))


def generic_value_ok(value: str, name: str = "") -> bool:
    """Whether an assigned value looks like a credential (see the module docstring). A value of
    digest length in hex is a digest, unless the name says it holds a secret (``client_secret``,
    ``api_token``, ``credentials``) and nothing about a digest (``token_sha``)."""
    if name.lower().endswith(_NOT_SECRET_NAMES):
        return False
    nested = _NESTED_ASSIGNMENT.match(value)
    if nested:  # ``Client('client_key', signature_method=SIGNATURE_HMAC_SHA256)``: another setting
        value = nested.group(1)
        if len(value) < 16:
            return False
    query = _QUERY_PAIR.search(value)
    if query:  # a URL's query parameter: its own value ends at the next ``&``
        value = value[:query.start()]
        if len(value) < 16:
            return False
    if not_a_value(value) or jwt_prefix(value) or jws_parts(value) or hand_typed(value):
        return False  # (a JWT is the jwt rule's to judge, whole: this value may be cut at GENERIC_MAX)
    lowered = value.lower()
    if _HEX_DIGEST.fullmatch(value):
        return (_hex_secret_name(name.lower()) and lowered not in EMPTY_DIGESTS
                and looks_random(value, min_classes=2))
    if (value.startswith(("/", "./", "~/", "$", "%", "{")) or "://" in value or UUID.fullmatch(value)
            or value.count(".") > 2 and value.replace(".", "").isalpha()):
        return False
    if any(word in lowered for word in PLACEHOLDER_WORDS) or code_like(value) or _kebab_words(value):
        return False
    body = max(_WORD_SPLIT.split(value), key=len)
    if body != value and len(body) >= 16:
        if re.fullmatch("[0-9a-fA-F]{32,}", body) and lowered.startswith(_DIGEST_NAMES):
            return False
        if _random_value(body):
            return True
    return _random_value(value)


# What an assigned value is when it is not a credential, whatever its letters look like.
_ELIDED = ("...", "\u2026")
_QUERY_PAIR = re.compile(r"&[A-Za-z_][\w.-]{0,40}=")
_FILE_NAME = re.compile(r"\.(?:html?|md|rst|txt|py|js|mjs|ts|tsx|json|ya?ml|xml|toml|php|rb|rs|go|java|kt|cs|css|"
                        r"png|jpe?g|gif|svg|pdf|zip|gz|tar|sh|cfg|ini|conf|lock|log|"
                        # key and certificate files, keystores: the value names where a key is kept
                        r"pem|key|crt|cer|csr|der|p8|p12|pfx|jks|keystore|truststore|pub|gpg|asc)(?:$|#)",
                        re.IGNORECASE)
# A resource URL without ``//`` (Spring's ``classpath:``, ``file:``) or an address (``@localhost:6379/``,
# ``db.internal:5432``): where something is, not a credential.
_RESOURCE = re.compile(r"(?i:^(?:classpath\*?|file|env|vault|secretsmanager|ssm|keyvault):|localhost)|"
                       r"(?:^|@)[a-z][a-z0-9-]*(?:\.[a-z0-9-]+)*:\d{2,5}(?:/|$)")
# A password's stored hash (modular crypt ``$2b$12$...``, ``$argon2id$...``, Django's
# ``pbkdf2_sha256$600000$...``, LDAP's ``{SSHA}...``): a digest of the secret, not the secret.
_PASSWORD_HASH = re.compile(r"\$(?:2[abxy]?|argon2(?:id|i|d)|scrypt|pbkdf2(?:-sha\d+)?|[156]|y|gy|7)\$"
                            r"|(?:pbkdf2_sha\d+|bcrypt(?:_sha256)?|argon2|scrypt|sha1|md5|unsalted_\w+)\$"
                            r"|\{(?:S?SHA\d*|S?MD5|CRYPT|PBKDF2[\w-]*|ARGON2|BCRYPT|SSHA\d+)\}", re.IGNORECASE)
_IDENTIFIER = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
_WORD_OR_NUMBER = re.compile(r"[A-Z]{2,}(?![a-z])|[A-Z]?[a-z]+|[A-Z]|\d+")
_B64_TEXT = re.compile(r"[A-Za-z0-9+/]{12,}={0,2}")
# A package's coordinate with its version (``io.jsonwebtoken:jjwt-jackson:0.11.0:deprecated``).
_COORDINATE = re.compile(r"[A-Za-z][\w.-]*:v?\d+\.\d+(?:\.\d+)?(?:[-.:][\w.-]*)?$")
_CODE = re.compile(r"!=|===|&&|\|\||=>")
# A URN (``urn:ietf:params:oauth:token-type:jwt``), percent-encoded in a query string or not: a
# registered name, never a credential.
_URN = re.compile(r"urn(?::|%3A)[A-Za-z0-9][A-Za-z0-9-]{0,31}(?::|%3A)", re.IGNORECASE)
# The next line's assignment read as this one's value (``<...-key>\nAWS_REGION=us-east-1``).
_NEXT_ASSIGNMENT = re.compile(r"([A-Z][A-Z0-9_]*)=")
# A name of its own and ``=`` at the start of a value (``--ulimit nofile=262144:262144`` after a
# provider's word): another setting, whose value is what follows.
_NESTED_ASSIGNMENT = re.compile(r"[A-Za-z_][\w.-]{1,40}=([^=].*)", re.DOTALL)  # (not base64's ``=`` padding)


def slug(value: str) -> bool:
    """An article's URL slug: three or more words joined by ``-``, then perhaps an id
    (``faunadb-and-fastapi-23dbb275bc5b``, ``text-embedding-3-small``)."""
    parts = value.lower().split("-")
    return (len(parts) >= 3 and sum(p.isalpha() for p in parts[:-1]) >= 2
            and all(p.isalpha() and any(v in p for v in "aeiouy") or p.isdigit() and len(p) <= 4 for p in parts[:-1])
            and parts[-1].isalnum() and len(parts[-1]) <= 16)


def counting(value: str) -> bool:
    """A value that counts once repeated characters are read as one (``00112233445566778899aabb``):
    six or more characters each one after the last."""
    collapsed = re.sub(r"(.)\1+", r"\1", value.lower())
    run = 1
    for a, b in itertools.pairwise(collapsed):
        run = run + 1 if ord(b) - ord(a) == 1 or a == "9" and b == "a" else 1
        if run >= 6:
            return True
    return False


def not_a_value(value: str, *, identifiers: bool = True) -> bool:
    """A value that is not a credential whatever its letters look like: elided (``eyJhbGci...``),
    a file name (``ch16-02-message-passing.html``),
    percent-encoded or base64-encoded text (``secure%20password``, the WebSocket RFC's
    ``dGhlIHNhbXBsZSBub25jZQ==``, "the sample nonce"), or an identifier made of words
    (``OAuth2PasswordRequestForm``, ``defaultToConfig2``, ``chimichangas4life``)."""
    if (any(mark in value for mark in _ELIDED) or _FILE_NAME.search(value) or _CODE.search(value)
            or _RESOURCE.search(value) or _PASSWORD_HASH.match(value)):
        return True
    after = _NEXT_ASSIGNMENT.match(value)
    if after and constant_name(after.group(1)) and "_" in after.group(1) or slug(value) or counting(value):
        return True
    if _COORDINATE.search(value):
        return True
    if "%20" in value or "%2520" in value or _URN.match(value):
        return True
    if _B64_TEXT.fullmatch(value) and _decodes_to_text(value):
        return True
    if identifiers and "_" in value and constant_name(value):
        return True  # a constant's name (``SIGNATURE_HMAC_SHA256``)
    return identifiers and bool(_IDENTIFIER.fullmatch(value)) and word_identifier(value)


def _decodes_to_text(value: str) -> bool:
    """Base64 of printable text with a space in it (words, not key material)."""
    try:
        raw = base64.b64decode(value + "=" * (-len(value) % 4), validate=True)
    except (binascii.Error, ValueError):
        return False
    return len(raw) >= 8 and re.fullmatch(rb"[A-Za-z]+(?:[ ,.'-]{1,2}[A-Za-z0-9]+)+[.!?]?", raw) is not None


def word_identifier(value: str) -> bool:
    """camelCase, PascalCase or snake_case words with a number or two (``OAuth2PasswordBearer``,
    ``defaultToConfig2``, ``jwtTestEC256PrivateKey``): every lower-case run of four or more letters
    is pronounceable (a vowel, no run of four consonants), an upper-case run is an acronym of at
    most five, at most two numbers of at most four digits, and four fifths of the letters are in
    words of four or more or acronyms, with at most one short run without a vowel (``jwt``). A
    generated key of sixteen or more characters breaks one of these almost always (``UBENM81QDKGJ``:
    five numbers; ``hRtqLmPz``: ``Rtq``; ``TIq793kryasjZxa``: mostly two- and three-letter runs)."""
    parts = [p for p in re.split(r"[_$]", value) if p]
    words = [w for p in parts for w in _WORD_OR_NUMBER.findall(p)]
    numbers = [w for w in words if w.isdigit()]
    if not words or len(numbers) > 2 or any(len(n) > 5 for n in numbers):
        return False
    letters = [w for w in words if not w.isdigit()]
    good = short_bare = 0
    for word in letters:
        lowered = word.lower()
        vowel = any(v in lowered for v in "aeiouy")
        if word.isupper() and len(word) > 1:
            if len(word) > 5:
                return False
            good += len(word)
        elif len(word) >= 4:
            if not vowel or re.search(r"[^aeiouy]{4}", lowered):
                return False
            good += len(word)
        elif not vowel:
            short_bare += 1
        elif len(word) == 3 and word[0].isupper() or len(word) == 2 and word[0].isupper() and vowel:
            good += len(word)  # a capitalised short word: ``Key``, ``Get``, ``My`` (``MySqlTableWithColumns``)
    total = sum(len(w) for w in letters)
    return (short_bare <= 1 and good >= 0.8 * total
            and any(len(w) >= 4 and not w.isupper() for w in letters))


def _hex_secret_name(name: str) -> bool:
    return any(w in name for w in _SECRET_NAMES) and not any(w in name for w in _DIGEST_NAMES + ("etag", "fingerprint"))


def _random_value(value: str) -> bool:
    if value.isalpha():
        return random_letters(value)
    return looks_random(value, need_digit=True) or (
        sum(not ch.isalnum() for ch in value) >= 2 and looks_random(value, min_classes=3))


def random_letters(value: str) -> bool:
    """Letters only: random when mixed-case and not a run of camelCase words (``SecretKeyManager``)."""
    if not looks_random(value, min_classes=2):
        return False
    words = _CAMEL_WORD.findall(value)
    return not all(w.isupper() and len(w) <= 5 or len(w) >= 2 and any(v in w.lower() for v in "aeiouy")
                   for w in words)


def _kebab_words(value: str) -> bool:
    """Words and short numbers joined by ``-``, ``_``, ``.``, ``/`` or ``:`` (``token-counting-2024-11-01``,
    a path ``etc/auth.d/50_auth.env``, a configuration key ``DownstreamApis:TodoList:Scopes:0``).
    A few short parts of at most three letters and digits (``d``, ``v1``, ``ec2``, ``b2c``) may
    stand among the words, fewer than the words of three letters or more."""
    if not _KEBAB.fullmatch(value):
        return False
    words = short = 0
    for part in _WORD_SPLIT.split(value.lower().replace("/", "-")):
        if part.isdigit() and len(part) <= 4:
            continue
        if part.isalpha() and any(v in part for v in "aeiouy"):
            words += len(part) >= 3
        elif len(part) <= 3:
            short += 1
        else:
            return False
    return short == 0 or words >= 2 and short < words


def code_like(value: str) -> bool:
    """An attribute path (``base64.b64encode``, ``im.tag_v2.tagtype``) or a file or URL path whose
    segments are words (``org/pytest-dev/py/issues/71``): code, not a credential."""
    if _DOTTED_NAME.fullmatch(value):
        return True
    segments = [seg for seg in re.split(r"[/\\]", value) if seg]
    return value.count("/") + value.count("\\") >= 2 and not any(
        len(seg) >= 8 and looks_random(seg) for seg in segments)


def keyed_value_ok(value: str, short_shape: str | None = None) -> bool:
    """A value after a provider's name: random, with a digit, and not code or a path. A value of
    the provider's own short shape (``short_shape``: a Sumo Logic ``su`` and 12 base62) needs no
    digit: twelve random base62 have none about once in nine, but must not be words."""
    nested = _NESTED_ASSIGNMENT.match(value)
    if nested:  # ``nofile=262144:262144``: the value is what a nested name is given
        value = nested.group(1)
        if len(value) < 12:
            return False
    if not_a_value(value, identifiers=False) or _kebab_words(value) or _b64_json_data(value):
        return False
    if "_" in value and constant_name(value):
        return False  # another setting's name (``(AUTH0_DOMAIN, AUTH0_CLIENT_ID) are not set``)
    if short_shape is not None and re.fullmatch(short_shape, value):
        return random_letters(value) if value.isalpha() else looks_random(value, min_classes=2)
    if UUID.fullmatch(value):
        return looks_random(value.replace("-", ""), min_classes=1)
    typed = _LETTERS_THEN_HEX.fullmatch(value)
    if typed:
        return looks_random(typed.group(1), min_classes=2)
    origin = _URL_ORIGIN.match(value)
    if origin:  # a host and port name no key; a long label or a path segment still may (``https://host/v1/<key>``)
        # (a UUID among a URL's segments names a resource or a tenant: ``login.microsoftonline.com/<tenant>/v2.0``)
        parts = re.split(r"[/?#&=.:]", value[value.index("://") + 3:])
        return any(len(part) >= 15 and not UUID.fullmatch(part) and keyed_value_ok(part) for part in parts)
    return not code_like(value) and looks_random(value, need_digit=True)
