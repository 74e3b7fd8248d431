"""Whether a signed token's claims were written for documentation or a test (JWT, PASETO).

A token is a credential when it names a principal a service would act for. A sample's claims
give themselves away: placeholder people and domains (``{"sub": "1234567890", "name": "John
Doe"}``), a claim filled with its own name (``{"sub": "subject"}``), no claim at all or only
times, claims that name nobody and never expire (``{"iss": "auth0"}``). A claim that names
someone real (a UUID, a random id, a tenant's host, a numeric account id) keeps the token a
credential, whatever else it says. A token that expired before a fixed date (``EXPIRED_BEFORE``)
authenticates nobody: every verifier refuses it (a fixture, or a token quoted from an old log); nor
does one that says it was issued before JWTs existed (``iat`` before ``ISSUED_BEFORE_JWT``: the
epoch, ``1234567890``). Pure functions of the decoded text: never of the clock, so a text gets the
same verdict streamed, whole, replayed or benchmarked a year later.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import json
import re

from guardrails.stream._scan import looks_random

# Claim values that mark a documentation or test token: placeholder names and domains.
SAMPLE_MARKS = frozenset(("example", "test", "foo", "bar", "baz", "john", "jane", "doe", "alice", "bob",
                          "acme", "demo", "sample", "dummy", "fake", "localhost", "1234567890", "string",
                          "johndoe", "janedoe", "qux", "lorem", "ipsum"))
# Marks strong enough on their own, when no claim names anyone real (``acme`` and ``string`` are
# words a real tenant or claim may hold).
STRONG_MARKS = frozenset(("example", "test", "demo", "sample", "dummy", "fake", "foo", "bar", "baz", "qux",
                          "john", "jane", "doe", "alice", "bob", "johndoe", "janedoe", "lorem", "ipsum"))
SAMPLE_WEAK = frozenset(("user", "username", "admin", "name", "email", "com", "org", "net", "http", "https",
                         "www", "company", "my", "your", "data", "sub", "role", "roles", "read", "write",
                         "localhost", "127", "0", "1", "b", "a", "c", "x", "y", "z", "something", "anything",
                         "value", "claim", "property"))
TIME_CLAIMS = frozenset(("iat", "exp", "nbf", "auth_time"))
# Claims that are random in every token and name nobody: the token's own id, a nonce, hashes.
_PER_TOKEN = frozenset(("jti", "nonce", "at_hash", "c_hash", "s_hash", "sid"))
# What a claim's own name spells out (``"sub": "subject"``): a value written by someone who had no
# subject to name.
_CLAIM_WORDS = {"sub": "subject", "iss": "issuer", "aud": "audience", "azp": "party", "scope": "scope",
                "name": "name", "email": "email", "role": "role", "username": "username", "user": "user",
                "tenant": "tenant", "client_id": "client", "cid": "client", "uid": "user"}
_HOST = re.compile(r"(?:@|//)([A-Za-z0-9.-]+\.[A-Za-z]{2,})")
_RUN = re.compile(r"[A-Za-z0-9]{8,}")


def jwt_payload_sample(payload: str) -> bool:
    """A JWT payload (base64url after its leading ``eyJ``, whole) written for docs or a test
    (``claims_sample``). A payload that does not decode to a JSON object is no sample."""
    try:
        claims = json.loads(base64.urlsafe_b64decode("eyJ" + payload + "=" * (-(len(payload) + 3) % 4)))
    except (binascii.Error, ValueError):
        return False
    return isinstance(claims, dict) and claims_sample(claims)


def paseto_public_sample(token: str) -> bool:
    """A PASETO ``public`` token (``v2.public.<base64url of the JSON message and its signature>``)
    whose message is a sample's claims. A ``local`` token is encrypted: nothing to read."""
    parts = token.split(".")
    if len(parts) < 3 or parts[1] != "public" or not re.fullmatch(r"v[1-4]", parts[0]):
        return False
    try:
        raw = base64.urlsafe_b64decode(parts[2] + "=" * (-len(parts[2]) % 4)).decode("latin-1")
        claims, _ = json.JSONDecoder().raw_decode(raw)
    except (binascii.Error, ValueError):
        return False
    return isinstance(claims, dict) and claims_sample(claims)


def claims_sample(claims: dict[str, object]) -> bool:
    """Claims written for documentation or a test (see the module docstring): no claim or only
    times; a claim named like a sample (``foo``, ``http://example.com/is_root``); every string
    claim a placeholder, one a sample's mark; or a strong mark (a placeholder person, ``demo``,
    a claim filled with its own name) while no claim names anyone real."""
    if not claims or set(claims) <= TIME_CLAIMS:
        return True  # nobody is named
    if expired(claims.get("exp")) or issued_before_jwt(claims.get("iat")):
        return True  # every verifier refuses it: a fixture, or a token quoted long after its use
    if "exp" not in claims and not _principal(claims):
        return True  # ``{"iss": "auth0"}``, ``{"name": [1, 2, 3]}``: grants nothing to anyone, ever
    if any(_marked(key) for key in _keys(claims)):
        return True
    values = _strings(claims)
    if any(_names_someone(v) for k, v in _pairs(claims) if k not in _PER_TOKEN) or _numeric_id(claims):
        return False
    if _self_named(claims) or any(w in STRONG_MARKS or "example" in w for v in values for w in _words(v)):
        return True
    marked = False
    for value in values:
        words = _words(value)
        if not words:
            continue
        if not all(w in SAMPLE_MARKS or w in SAMPLE_WEAK or w.isdigit() and len(w) <= 3 or "test" in w
                   for w in words):
            return False
        marked = marked or any(w in SAMPLE_MARKS or "test" in w for w in words)
    return marked


# Claims that name whom a token acts for (``sub``, ``user_id``, ``client_id``, ``email``, ``scope``,
# ``roles``, a namespaced claim such as ``https://hasura.io/jwt/claims``).
_PRINCIPAL = re.compile(r"sub|user|uid|oid|email|upn|login|account|client|azp|app_?id|tenant|tid|org|role|scope|"
                        r"scp|perm|group|^id$|_id$|[a-z]Id$|kubernetes|://", re.IGNORECASE)


def _principal(claims: dict[str, object]) -> bool:
    """A claim, at any depth, that names whom the token acts for, with a value (not null, not empty).
    A token with neither one nor an expiry is a parser's test vector: a credential names someone
    or expires (every identity provider's tokens do one or both)."""
    def walk(value: object) -> bool:
        if isinstance(value, dict):
            return any(_PRINCIPAL.search(str(k)) and v not in (None, "", [], {}) or walk(v) for k, v in value.items())
        if isinstance(value, list):
            return any(walk(v) for v in value)
        return False
    return walk(claims)


EXPIRED_BEFORE = 1_767_225_600
"""2026-01-01T00:00:00Z. A token whose ``exp`` lies before this date is refused by every verifier,
now and at any later time. A fixed date rather than the clock: with the clock, a verdict would
depend on when a text is read (a token that trips today passes next month; a replay of a logged
stream could disagree with the stream). A token that expired after it is judged on its claims
(it may trip: an error towards blocking, never towards passing a live key). Moved forward with a
release, when its tests' dates are."""

ISSUED_BEFORE_JWT = 1_262_304_000
"""2010-01-01T00:00:00Z: JSON Web Tokens were first drafted in December 2010, so a token that says
it was issued before (``"iat": 0``, ``1234567890``: 2009-02-13) was written by hand for a test."""


def expired(exp: object, before: float = EXPIRED_BEFORE) -> bool:
    """``exp`` (seconds since the epoch, or an ISO 8601 time as PASETO writes it) lies before
    ``before``. A token without one, or with one that does not parse, is live."""
    seconds = _seconds(exp)
    return seconds is not None and seconds < before


def issued_before_jwt(iat: object) -> bool:
    """``iat`` lies before ``ISSUED_BEFORE_JWT`` (a test's hand-made time)."""
    seconds = _seconds(iat)
    return seconds is not None and seconds < ISSUED_BEFORE_JWT


def _seconds(value: object) -> float | None:
    """A NumericDate (seconds since the epoch) or an ISO 8601 time, in seconds; None otherwise.
    (A number is compared as it is: ``float()`` of a 400-digit integer claim would raise.)"""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    if isinstance(value, str):
        try:
            when = datetime.datetime.fromisoformat(value)
        except ValueError:
            return None
        # (a time without a zone is read as UTC, not as this machine's zone: the same verdict anywhere)
        return (when if when.tzinfo else when.replace(tzinfo=datetime.UTC)).timestamp()
    return value


def _words(value: str) -> list[str]:
    return [w for w in re.split(r"[^a-z0-9]+", value.lower()) if w]


def _self_named(claims: dict[str, object]) -> bool:
    """A string claim whose value is its own name, or what the name stands for (``"sub": "subject"``,
    ``"aud": "audience"``, ``"name": "name"``)."""
    for key, value in claims.items():
        if isinstance(value, str) and value.strip():
            word = value.strip().lower()
            if word == key.lower() or word == _CLAIM_WORDS.get(key.lower()):
                return True
    return False


def _names_someone(value: str) -> bool:
    """A claim value that identifies a real principal or tenant: a UUID, a random id
    (``auth0|5f7c8ec7c33c6c004bbafe82``), or a host that is not a placeholder's."""
    if re.search(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", value, re.IGNORECASE):
        return True
    if any(looks_random(run, min_classes=2) for run in _RUN.findall(value)):
        return True
    host = _HOST.search(value)
    return host is not None and not all(
        label in SAMPLE_MARKS or label in SAMPLE_WEAK or "example" in label or "test" in label
        for label in host.group(1).lower().split("."))


def _numeric_id(claims: dict[str, object]) -> bool:
    """A number of five or more digits in a claim other than a time (a user's or an account's id)."""
    return any(isinstance(v, int) and not isinstance(v, bool) and abs(v) >= 10_000 and k not in TIME_CLAIMS
               for k, v in claims.items())


def _marked(key: str) -> bool:
    return any(w in SAMPLE_MARKS and w not in ("string", "localhost") or "example" in w or w == "test"
               for w in _words(key))


def _keys(value: object) -> list[str]:
    if isinstance(value, dict):
        return [k for k, v in value.items() for k in (k, *_keys(v)) if isinstance(k, str)]
    if isinstance(value, list):
        return [k for v in value for k in _keys(v)]
    return []


def _pairs(value: object, key: str = "") -> list[tuple[str, str]]:
    """Every string in ``value`` with the name of the claim that holds it."""
    if isinstance(value, str):
        return [(key, value)]
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _pairs(v, str(k))]
    if isinstance(value, list):
        return [p for v in value for p in _pairs(v, key)]
    return []


def _strings(value: object) -> list[str]:
    return [v for _, v in _pairs(value)]
