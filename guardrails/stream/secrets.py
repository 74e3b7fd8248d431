"""``secrets``: block a credential in the model's output before any of it reaches the client.

Categories (policy ``categories``; empty selects all):

========================  =================================================================
``aws``                   access key ids (``AKIA``/``ASIA``/``ABIA``/``ACCA`` + 16) and
                          ``aws_secret_access_key = <40 chars>`` assignments
``gcp``                   Google API keys (``AIza`` + 35) and OAuth client secrets (``GOCSPX-``)
``google_oauth``          Google OAuth access tokens (``ya29.``)
``openai``                ``sk-``, ``sk-proj-``, ``sk-svcacct-``, ``sk-admin-`` keys
``anthropic``             ``sk-ant-`` keys
``github``                ``ghp_``/``gho_``/``ghu_``/``ghs_``/``ghr_`` tokens and ``github_pat_``
``gitlab``                ``glpat-`` personal access tokens
``slack``                 ``xox[baprs]-`` tokens and ``hooks.slack.com`` webhook urls
``stripe``                ``sk_live_`` / ``rk_live_`` keys
``private_key``           ``-----BEGIN ... PRIVATE KEY-----`` followed by key material
``jwt``                   ``eyJ<header>.eyJ<payload>`` (JSON web tokens)
``generic``               ``key/secret/token/password = <value>`` with a random-looking value
========================  =================================================================

False positives are treated as bugs. Every candidate's random part must look random
(``looks_random``: letters and digits, no placeholder word, no ``XXXX`` or ``1234`` run, entropy
near the maximum), so ``sk-XXXXXXXX``, ``your-api-key-here``, ``AKIAIOSFODNN7EXAMPLE`` and
``AAAA...`` pass. ``generic`` never fires on UUIDs or on hex of digest length (md5, git SHA,
sha256). ``allow`` lists exact values known to be safe.

Secrets of unbounded length are matched on their fixed-length distinctive prefix and blocked the
moment it has arrived. Fixed-length ones end in a one-character boundary lookahead, so they are
settled one character later (or at ``finish``). ``window`` covers the longest prefix plus that
character. Cost per delta: a search for the rules' anchors (``_ANCHORS``: ``sk-``, ``AKIA``, ``eyJ``,
a keyword and ``=``...) in the delta and the few characters before it; the rules' regex runs only
while an anchor is within ``window`` of the end, from that anchor on.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from config.policy import SecretsGuardrail
from guardrails.decision import PASS, SECRET_LEAK, Block, Decision
from guardrails.seams import DeltaCheck, StreamContext
from guardrails.stream._horizon import Closure, HorizonParts
from guardrails.stream._scan import Anchors, TailScanner, looks_random, split_lookbehinds

# A JWT header is usually 36-100 characters; longer ones are not caught (the window, and so the
# client's lag, grows with it).
JWT_HEADER_MAX = 100
# Payload characters seen before a JWT is blocked (18 bytes of claims: enough to be sure).
JWT_PAYLOAD_MIN = 24
# A generic assignment's value: shorter is too weak to call random, longer is judged on its prefix.
GENERIC_MIN = 16
GENERIC_MAX = 64

_B64URL = r"[A-Za-z0-9_-]"
_VALUE = r"[A-Za-z0-9+/=_\-!@#$%^&*]"
# No lookbehind: "apiKey" and "DB_PASSWORD" must both count.
_KEYWORD = r"(?i:(?:key|secret|token|passw(?:or)?d|pwd|credentials?)[a-z0-9_]{0,16})"

# (category, rule name, regex, final at once). Each rule's random part is its last
# ``_RANDOM_TAIL`` characters or, for ``generic`` and ``aws_secret``, the assigned value.
# Rules that are final at once have no optional part before their fixed-length tail, so the text
# they match does not depend on how much has arrived (``sk-proj-`` keys match as ``sk-`` + 32).
_RULES: tuple[tuple[str, str, str, bool], ...] = (
    ("aws", "aws_id", r"(?<![A-Z0-9])(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Za-z0-9])", False),
    ("aws", "aws_secret",
     (r"(?i:aws_?secret(?:_?access)?_?key)[\"']?\s{0,3}[:=]{1,2}\s{0,3}[\"']?"
     r"[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])"), False),
    ("gcp", "gcp_key", r"(?<![A-Za-z0-9_-])AIza[A-Za-z0-9_-]{35}(?![A-Za-z0-9_-])", False),
    ("gcp", "gcp_client_secret", r"(?<![A-Za-z0-9_-])GOCSPX-[A-Za-z0-9_-]{28}", True),
    ("google_oauth", "google_oauth", r"(?<![A-Za-z0-9_.-])ya29\.[A-Za-z0-9_-]{32}", True),
    ("anthropic", "anthropic", r"(?<![A-Za-z0-9_-])sk-ant-[A-Za-z0-9_-]{32}", True),
    ("openai", "openai",
     r"(?<![A-Za-z0-9_-])sk-(?!ant-)[A-Za-z0-9_-]{32}", True),
    ("github", "github_token", r"(?<![A-Za-z0-9_])gh[pousr]_[A-Za-z0-9]{36}(?![A-Za-z0-9])", False),
    ("github", "github_pat", r"(?<![A-Za-z0-9_])github_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{20}", True),
    ("gitlab", "gitlab", r"(?<![A-Za-z0-9_-])glpat-[A-Za-z0-9_-]{20}", True),
    ("slack", "slack_token", r"(?<![A-Za-z0-9_-])xox[baprs]-\d{8,13}-[A-Za-z0-9-]{16}", True),
    ("slack", "slack_webhook",
     r"hooks\.slack\.com/services/T[A-Z0-9]{8,12}/B[A-Z0-9]{8,12}/[A-Za-z0-9]{20}", True),
    ("stripe", "stripe", r"(?<![A-Za-z0-9_])[sr]k_live_[A-Za-z0-9]{24}", True),
    ("private_key", "private_key",
     (r"-----BEGIN[A-Z0-9 ]{0,24} PRIVATE KEY(?: BLOCK)?-----(?:\s|\\[rn]){1,4}"
     r"(?:Proc-Type:|[A-Za-z0-9+/=]{32})"), True),
    ("jwt", "jwt",
     rf"(?<![A-Za-z0-9_-])eyJ{_B64URL}{{8,{JWT_HEADER_MAX}}}\.eyJ{_B64URL}{{{JWT_PAYLOAD_MIN}}}", True),
    ("generic", "generic",
     (rf"{_KEYWORD}[\"']?[ \t]{{0,3}}(?:=|:=|:|=>)[ \t]{{0,3}}[\"'`]?"
     rf"(?:{_VALUE}{{{GENERIC_MIN},{GENERIC_MAX - 1}}}(?!{_VALUE})|{_VALUE}{{{GENERIC_MAX}}})"), False),
)
# Where each rule's match begins (after its lookbehinds): text every match starts with. The
# scanner runs the rule's regex only from such a place, so clean text costs a search for these.
# The assignments (``aws_secret``, ``generic``) wait for their operator: keywords alone are common
# in prose and code. Every anchor ends in one of ``_ANCHOR_ENDS`` (``generic``'s: ``_GENERIC_ENDS``).
_ANCHORS = {
    "aws_id": "AKIA|ASIA|ABIA|ACCA",
    "aws_secret": r"(?i:aws_?secret(?:_?access)?_?key)[\"']?\s{0,3}[:=]",
    "gcp_key": "AIz",
    "gcp_client_secret": "GOCSPX-",
    "google_oauth": r"ya29\.",
    "anthropic": "sk-ant-",
    "openai": "sk-",
    "github_token": "gh[pousr]_",
    "github_pat": "github_pat_",
    "gitlab": "glpat-",
    "slack_token": "xox[baprs]-",
    "slack_webhook": r"hooks\.slack\.com/",
    "stripe": "[sr]k_live_",
    "private_key": "-----BEGIN",
    "jwt": "eyJ",
    "generic": rf"{_KEYWORD}[\"']?[ \t]{{0,3}}(?:=|:=|:|=>)",
}
_ANCHOR_ENDS = "[-_.:=/AJNz]"
_GENERIC_ENDS = "[:=>]"
CATEGORIES = frozenset(category for category, _, _, _ in _RULES)
_CATEGORY_OF = {name: category for category, name, _, _ in _RULES}
# The longest match is a JWT prefix ("eyJ" header "." "eyJ" payload); the tests check every rule's
# maximum width against it. One more character for the boundary a fixed-length rule waits for.
SECRETS_WINDOW = 3 + JWT_HEADER_MAX + 4 + JWT_PAYLOAD_MIN + 1

# How much of each match is the random part that must look random.
_RANDOM_TAIL = {"aws_id": 16, "gcp_key": 35, "gcp_client_secret": 28, "google_oauth": 32,
                "anthropic": 32, "openai": 32, "github_token": 36, "github_pat": 20, "gitlab": 20,
                "slack_token": 16, "slack_webhook": 20, "stripe": 24, "jwt": JWT_PAYLOAD_MIN,
                "aws_secret": 40}
_VALUE_AT_END = re.compile(rf"{_VALUE}+\Z")
_HEX_DIGEST = re.compile(r"(?:[0-9a-f]{32}|[0-9a-f]{40}|[0-9a-f]{64})", re.IGNORECASE)
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.IGNORECASE)
# Published sample values that documentation repeats (the jwt.io sample's payload prefix).
_KNOWN_SAMPLES = ("eyJzdWIiOiIxMjM0NTY3ODkw",)


_Compiled = tuple[re.Pattern[str], frozenset[str], dict[str, re.Pattern[str]], Anchors]


def _compile(categories: frozenset[str]) -> list[_Compiled]:
    """One alternation of the prefixed rules and one of ``generic``: the generic rule waits for
    its value to end, and in a shared alternation that wait would hide a prefixed key inside the
    value (``OPENAI_API_KEY=sk-...``), which is final sooner. Leading lookbehinds are tested
    after the scan (``split_lookbehinds``), per rule. Each group's anchors are the alternation
    of its rules' ``_ANCHORS``."""
    groups: list[_Compiled] = []
    for generic in (False, True):
        rules = [(name, *split_lookbehinds(rx), final) for cat, name, rx, final in _RULES
                 if cat in categories and (cat == "generic") == generic]
        if rules:
            pattern = re.compile("|".join(f"(?P<{name}>{rest})" for name, _, rest, _ in rules))
            before = {name: re.compile(lb) for name, lb, _, _ in rules}
            anchors = Anchors([(_ANCHORS[name], 0) for name, _, _, _ in rules],
                              quick=_GENERIC_ENDS if generic else _ANCHOR_ENDS)
            groups.append((pattern, frozenset(name for name, _, _, final in rules if final), before, anchors))
    return groups


def _horizon_parts(pattern: re.Pattern[str], anchors: Anchors) -> HorizonParts:
    """Every anchor starts its match (back 0): a match whose anchor is still incomplete starts
    where the tail of the text is a prefix of an anchor."""
    return HorizonParts(Closure(pattern.pattern), Closure(anchors.pattern.pattern),
                        anchors.reach)


def _secret_part(rule: str, text: str) -> str:
    """The credential itself: the assigned value for assignment rules, else the whole match."""
    if rule in ("generic", "aws_secret"):
        found = _VALUE_AT_END.search(text)
        return found.group() if found else ""
    return text


def _is_real(rule: str, text: str) -> bool:
    """Whether a candidate ``text`` matched by ``rule`` is a credential rather than an example."""
    if any(sample in text for sample in _KNOWN_SAMPLES) or "EXAMPLE" in text.upper():
        return False
    if rule == "private_key":
        return True
    if rule == "generic":
        value = _secret_part(rule, text)
        if value.startswith("/") or _HEX_DIGEST.fullmatch(value) or _UUID.fullmatch(value):
            return False
        return looks_random(value, need_digit=True)
    # AWS ids are base32 ([A-Z2-7]) and webhook secrets may be all letters: one class is enough there.
    min_classes = 1 if rule in ("aws_id", "slack_webhook") else 2
    return looks_random(text[-_RANDOM_TAIL[rule]:], min_classes=min_classes)


class SecretsCheck(DeltaCheck):
    """Per-stream state: a tail scanner per compiled alternation (two at most)."""

    def __init__(self, compiled: list[_Compiled], horizons: list[HorizonParts], allow: tuple[str, ...],
                 replacement: str) -> None:
        self.window = SECRETS_WINDOW
        self._scanners = [(TailScanner(pattern, SECRETS_WINDOW, is_final=_final_test(final_rules),
                                       anchors=anchors), before)
                          for pattern, final_rules, before, anchors in compiled]
        self._trackers = [parts.arm() for parts in horizons]
        self._horizon = 0
        self._allow = allow
        self._replacement = replacement

    def check(self, accumulated: str, delta: str) -> Decision:
        return self._scan(accumulated, final=False)

    def finish(self, accumulated: str) -> Decision:
        return self._scan(accumulated, final=True)

    def horizon(self, accumulated: str) -> int:
        return self._horizon

    def _scan(self, text: str, *, final: bool) -> Decision:
        for scanner, before in self._scanners:
            while (match := scanner.next(text, final=final)) is not None:
                rule, found = match.lastgroup or "", match.group()
                if not before[rule].match(text, match.start()):
                    continue
                secret = _secret_part(rule, found)
                # A prefix-matched secret is allowed when it is the start of an allowed value.
                if any(allowed.startswith(secret) for allowed in self._allow):
                    continue
                if _is_real(rule, found):
                    return Block(SECRET_LEAK, self._replacement,
                                 f"The answer contained a credential (category: {_CATEGORY_OF[rule]}). "
                                 "Never output keys, tokens, passwords or private keys; refer to them "
                                 "by name instead.")
        horizon = len(text)
        for (scanner, _), tracker in zip(self._scanners, self._trackers, strict=True):
            value = tracker.update(scanner, text)
            horizon = min(horizon, value)
        self._horizon = horizon
        return PASS


def _final_test(final_rules: frozenset[str]) -> Callable[[re.Match[str]], bool]:
    return lambda match: match.lastgroup in final_rules


class SecretsProvider:
    """The ``secrets`` stream guardrail. The combined pattern is compiled once per policy."""

    def __init__(self, spec: SecretsGuardrail, replacement: str) -> None:
        unknown = set(spec.categories) - CATEGORIES
        if unknown:
            raise ValueError(f"guardrail {spec.id!r}: unknown secrets categories {sorted(unknown)}; "
                             f"known: {sorted(CATEGORIES)}")
        self.id = spec.id
        self._allow = tuple(spec.allow)
        self._replacement = replacement
        self._compiled = _compile(frozenset(spec.categories) or CATEGORIES)
        self._horizons = [_horizon_parts(pattern, anchors) for pattern, _, _, anchors in self._compiled]

    def arm(self, ctx: StreamContext) -> DeltaCheck | None:
        return SecretsCheck(self._compiled, self._horizons, self._allow, self._replacement)
