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
import re
import string
import zlib

from guardrails.stream._scan import PLACEHOLDER_WORDS, looks_random

_BASE62 = string.digits + string.ascii_uppercase + string.ascii_lowercase
_HEX_DIGEST = re.compile(r"(?:[0-9a-f]{32}|[0-9a-f]{40}|[0-9a-f]{64}|[0-9a-f]{128})", re.IGNORECASE)
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.IGNORECASE)
_DIGEST_NAMES = ("sha", "md5", "blake", "sum", "hash", "git", "commit", "rev", "digest", "crc")
# Names that hold an identifier or a place, not the secret itself (``credentialId``, ``SECRET_NAME``).
_NOT_SECRET_NAMES = ("id", "name", "url", "uri", "file", "path")
_SECRET_NAMES = ("secret", "token", "passw", "credential", "apikey", "api_key", "api-key", "api.key",
                 "accesskey", "access_key", "access-key")
# A short type letter or two before hex (``SK`` + 32 hex, a Twilio key sid): judged on the hex.
_LETTERS_THEN_HEX = re.compile(r"[A-Za-z]{1,4}([0-9a-f]{24,}|[0-9A-F]{24,})")
# A URL's scheme and host (and port), with no user or password in it (those are ``url_credentials``'):
# ``OPENAI_BASE_URL=http://guardproxy:8790/v1`` names where a client sends its requests, not a key.
_URL_ORIGIN = re.compile(r"[A-Za-z][A-Za-z0-9+.-]{0,15}://[A-Za-z0-9.-]+(?::[0-9]{1,5})?(?=[/?#]|$)")
# Published sample values that documentation repeats (the jwt.io sample's payload prefix).
KNOWN_SAMPLES = ("eyJzdWIiOiIxMjM0NTY3ODkw",)
_PASSWORD_PLACEHOLDERS = frozenset((
    "password", "passwd", "pass", "pwd", "secret", "changeme", "admin", "root", "user", "username",
    "postgres", "mysql", "redis", "guest", "test", "demo", "default", "xxx", "xxxx", "xxxxxx", "token",
    "apikey", "api_key", "mypassword", "yourpassword", "pa55word", "p@ssw0rd", "letmein", "foobar", "foo",
    "bar", "baz", "null", "none", "empty", "example", "sample", "dummy", "fake", "mysecretpassword",
))
# Digests of the empty input, which examples and tests paste everywhere.
EMPTY_DIGESTS = frozenset(hashlib.new(name, b"").hexdigest() for name in ("md5", "sha1", "sha256", "sha512"))
REPEAT = re.compile(r"(.)\1{5}")
_WORD_SPLIT = re.compile(r"[_.:~-]")
_CAMEL_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
_KEBAB = re.compile(r"[A-Za-z0-9]+(?:[-_.][A-Za-z0-9]+)+")
_DOTTED_NAME = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?:\(.*)?")


def base62_crc32_ok(body: str) -> bool:
    """GitHub/npm token body (after the ``xxx_`` prefix): 30 random characters and their CRC32."""
    if len(body) != 36:
        return False
    number, out = zlib.crc32(body[:30].encode()), ""
    while number:
        number, digit = divmod(number, 62)
        out = _BASE62[digit] + out
    return out.rjust(6, "0") == body[30:]


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


def url_password_ok(user: str, password: str) -> bool:
    lowered = password.lower()
    if lowered in _PASSWORD_PLACEHOLDERS or lowered == user.lower() or len(set(password)) < 3:
        return False
    if any(ch in password for ch in "${}<>*%[]") and not re.search(r"%[0-9A-Fa-f]{2}", password):
        return False
    return not any(word in lowered for word in PLACEHOLDER_WORDS)


def generic_value_ok(value: str, name: str = "") -> bool:
    """Whether an assigned value looks like a credential (see the module docstring). A value of
    digest length in hex is a digest, unless the name says it holds a secret (``client_secret``,
    ``api_token``, ``credentials``) and nothing about a digest (``token_sha``)."""
    lowered = value.lower()
    if name.lower().endswith(_NOT_SECRET_NAMES):
        return False
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
    """Words and short numbers joined by ``-``, ``_`` or ``.`` (``token-counting-2024-11-01``)."""
    if not _KEBAB.fullmatch(value):
        return False
    return all(part.isdigit() and len(part) <= 4 or part.isalpha() and any(v in part for v in "aeiouy")
               for part in _WORD_SPLIT.split(value.lower()))


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
    if short_shape is not None and re.fullmatch(short_shape, value):
        return random_letters(value) if value.isalpha() else looks_random(value, min_classes=2)
    if UUID.fullmatch(value):
        return looks_random(value.replace("-", ""), min_classes=1)
    typed = _LETTERS_THEN_HEX.fullmatch(value)
    if typed:
        return looks_random(typed.group(1), min_classes=2)
    origin = _URL_ORIGIN.match(value)
    if origin:  # a host and port name no key; a long label or a path segment still may (``https://host/v1/<key>``)
        parts = re.split(r"[/?#&=.:]", value[value.index("://") + 3:])
        return any(len(part) >= 15 and keyed_value_ok(part) for part in parts)
    return not code_like(value) and looks_random(value, need_digit=True)
