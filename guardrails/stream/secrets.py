"""``secrets``: block a credential in the model's output before any of it reaches the client.

Categories (policy ``categories``; empty selects all) are provider families: the catalog in
``guardrails.stream.secret_rules`` (about 100 families: cloud, code hosting, CI and package
registries, chat and mail, payments, AI providers, monitoring; ``private_key``, ``jwt``,
``url_credentials``, ``auth_header``) plus ``generic`` (``name = value`` assignments whose name
holds ``key``/``secret``/``token``/``password`` and whose value looks random). ``rules_file``
adds an operator's gitleaks-format rules (``guardrails.stream.gitleaks``) as category
``custom``.

False positives are treated as bugs. Every candidate's random part must look random
(``guardrails.stream.secret_checks``), so ``sk-XXXXXXXX``, ``your-api-key-here``,
``AKIAIOSFODNN7EXAMPLE`` and ``AAAA...`` pass; a GitHub or npm token whose CRC32 suffix checks
out is blocked whatever it looks like. ``allow`` lists exact values known to be safe.

Cost per delta: one Aho-Corasick pass over the new text for the rules' keywords, and a regex
attempt for each keyword hit still pending (``guardrails.stream.keyword_scan``). Secrets of
unbounded length are matched on a fixed-length distinctive prefix and blocked the moment it has
arrived; fixed-length ones are settled one character later (or at ``finish``). The horizon is
the earliest pending keyword hit, else the start of the trailing token.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from config.policy import SecretsGuardrail
from guardrails.decision import PASS, SECRET_LEAK, Block, Decision, Redact
from guardrails.seams import DeltaCheck, StreamContext
from guardrails.stream import secret_checks
from guardrails.stream._rendered import SPECIAL, RenderedText, render
from guardrails.stream._scan import looks_random
from guardrails.stream.gitleaks import GitleaksRules, GitleaksScanner, load_gitleaks_rules
from guardrails.stream.keyword_scan import TOKEN_ALIVE, KeywordIndex, KeywordScanner, ScanRule, scan_rule
from guardrails.stream.secret_rules import (
    GENERIC,
    GENERIC_ALIVE,
    KEYED,
    KEYED_SHORT,
    RULES,
    SecretRule,
    keyed_rule,
)

CUSTOM = "custom"
_ALL_RULES: tuple[tuple[SecretRule, str | None], ...] = (
    *((rule, None) for rule in RULES),
    *(keyed_rule(family, keywords) for family, keywords in KEYED.items()),
    (GENERIC, GENERIC_ALIVE),
)
CATEGORIES = frozenset(rule.family for rule, _ in _ALL_RULES)
_SPACED_ALIVE = r"(?s:.*)"
_EXAMPLE = re.compile("EXAMPLE", re.IGNORECASE)
_RUNS = re.compile("[A-Za-z0-9]{8,}")
# What a generic name ends when the word before it says the value is no secret: a WebSocket
# handshake's nonce (``Sec-WebSocket-Key``) is random and public.
# (and a key encrypted under another, public by design: JWE's ``encrypted_key``, a ``wrapped_key``;
# ``encryption_key`` is a key)
_NOT_SECRET_PREFIXES = ("websocket-", "websocket_", "websocket", "encrypted_", "encrypted-", "encrypted",
                        "wrapped_", "wrapped-", "wrapped")


def build_index(categories: frozenset[str]) -> tuple[KeywordIndex, dict[str, SecretRule]]:
    """The keyword index of the chosen categories' rules, and each rule's row by name."""
    scan_rules: list[ScanRule] = []
    rows: dict[str, SecretRule] = {}
    for rule, alive in _ALL_RULES:
        if rule.family not in categories:
            continue
        grammar = alive or rule.alive or (_SPACED_ALIVE if rule.spans_space else TOKEN_ALIVE)
        scan_rules.append(scan_rule(len(scan_rules), rule.id, rule.keywords, rule.regex, back=rule.back,
                                    alive=grammar))
        rows[rule.id] = rule
    return KeywordIndex(scan_rules), rows


def is_credential(rule: SecretRule, match: re.Match[str]) -> bool:
    """Whether ``match`` of ``rule`` is a credential rather than an example or a placeholder."""
    text = match.group()
    if _EXAMPLE.search(text) or any(sample in text for sample in secret_checks.KNOWN_SAMPLES):
        return False
    groups = match.groupdict()
    if groups.get("j"):
        return secret_checks.b64_json_ok(groups["j"])
    if groups.get("a"):
        return secret_checks.b64_userpass_ok(groups["a"])
    tail = groups.get("t") or groups.get("t2")
    if tail:  # the tail of a structure that is distinctive on its own
        return not secret_checks.REPEAT.search(tail)
    secret = groups.get("s") if "s" in groups else None
    if rule.family == "private_key":
        if secret is not None and not secret_checks.der_key_start(text, secret):
            return False
        return secret is None or not secret_checks.REPEAT.search(secret)
    if rule.family == "jwt":
        after = match.string[match.end():match.end() + 2]
        if after.startswith("\u2026") or after.startswith(".") and (text.endswith(".") or after == ".."):
            return False  # elided: ``eyJhbGci....eyJ1c2Vy...``
        return secret_checks.jwt_credential(text, groups.get("p"), groups.get("g") is not None or not groups.get("p"))
    if rule.family == "auth_header" and secret is not None:
        return secret_checks.auth_header_ok(text[:match.start("s") - match.start()], secret)
    if rule.family == "url_credentials":
        return secret is not None and secret_checks.url_password_ok(match.group("u"), secret)
    if rule.family in ("generic", "algolia") and _search_only(match) or rule.family == "generic" and _badge(match):
        return False
    if rule.family == "generic":
        before = match.string[max(0, match.start() - 16):match.start()].lower()
        if match.string.startswith("(", match.end()) or not _generic_operator_ok(match) or _named_not_working(match):
            return False
        return (secret is not None and not before.endswith(_NOT_SECRET_PREFIXES)
                and secret_checks.generic_value_ok(secret, match.group("n")))
    if rule.checksum == "shape":
        return not secret_checks.REPEAT.search(text)
    if secret is None:
        secret = _unnamed_secret(rule, text)
    if rule.checksum == "crc32_base62" and secret_checks.base62_crc32_ok(secret):
        return True
    if rule.id.endswith("-keyed"):
        short = KEYED_SHORT.get(rule.family)
        if _listed_phrase(text[:match.start("s") - match.start()]):
            return False
        if secret_checks.names_no_secret(text[:match.start("s") - match.start()]) and not (
                short and re.fullmatch(short, secret)):
            return False  # ``AzureAdClientId = <uuid>``: the name says an identifier or a place
            # (a provider's own short id format, a Sumo Logic access id, is judged as its rule says)
        return secret_checks.keyed_value_ok(secret, KEYED_SHORT.get(rule.family))
    if secret_checks.UUID.fullmatch(secret):
        secret = secret.replace("-", "")
    if secret.isalpha() and rule.min_classes >= 2:  # letters only: not a run of camelCase words (``SlackAppConfigurationAccess``)
        return secret_checks.random_letters(secret)
    return looks_random(secret, min_classes=rule.min_classes)


def _named_not_working(match: re.Match[str]) -> bool:
    """The whole name that holds a generic match's name says its value does not work
    (``invalidWrongExponentKey``, ``dummy_api_token``, ``MOCK_SECRET``): the writer's own word
    for a value made to fail or to stand in. ``test`` is not such a word (a test-mode key works)."""
    start = match.start("n")
    while start > 0 and (match.string[start - 1].isalnum() or match.string[start - 1] in "_-"):
        start -= 1
    words = _NAME_WORD.findall(match.string[start:match.end("n")])
    return any(word.lower() in _NOT_WORKING for word in words)


_NAME_WORD = re.compile(r"[A-Z]{2,}(?![a-z])|[A-Z]?[a-z]+")
_NOT_WORKING = frozenset(("invalid", "dummy", "fake", "mock", "bogus", "wrong", "placeholder"))


def _listed_phrase(name: str) -> bool:
    """A keyed rule's name that is a quoted phrase followed by a ``,`` (``"Twitch user", "https://..."``):
    a list of values, one of them a display name, not a setting's name and its value. A setting's
    name has no space (``setProperty("twitch_secret", "v")``), and a phrase that says what the next
    value is (``"Twitch client secret", "v"``) still names it."""
    head, comma, _ = name.rpartition(",")
    head = head.rstrip()
    return (bool(comma) and head.endswith(("\"", "'")) and " " in head.strip("\"'")
            and not any(word in head.lower() for word in _SECRET_WORDS))


_SECRET_WORDS = ("key", "secret", "token", "pass", "pwd", "credential", "auth")


def _search_only(match: re.Match[str]) -> bool:
    """A site search's key in its page or docs-site config (``docsearch({apiKey: ...})``,
    Docusaurus' ``algolia: {appId, apiKey}``, a ``searchKey``): Algolia issues search-only keys to
    be published in the page. A key named for more (``ALGOLIA_ADMIN_KEY``, ``algolia_api_key``
    outside a search widget's config) stays a credential."""
    before = match.string[max(0, match.start() - _SEARCH_CONTEXT):match.start()].lower()
    name = match.group().lower()
    if _ADMIN.search(name):
        return False
    return "docsearch" in before or "search" in name or _SEARCH_CONFIG.search(before) is not None


def _badge(match: re.Match[str]) -> bool:
    """A query parameter of a status badge's image URL (``.../badges/21183?token=...``,
    ``codecov.io/.../badge.svg?token=...``): a read-only token made to be published in a README."""
    at = match.start("n")
    if at == 0 or match.string[at - 1] not in "?&":
        return False
    url = _URL_START.search(match.string, max(0, at - 200), at)
    return url is not None and "badge" in url.group().lower()


_URL_START = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s()<>\"'`]*\Z")
# How far before a key its search widget's config may open (``docsearch({``, ``algolia: {``).
_SEARCH_CONTEXT = 160
_ADMIN = re.compile(r"admin|write|secret|master|private")
_SEARCH_CONFIG = re.compile(r"algolia[\"']?\s{0,3}[:=]\s{0,3}\{[^{}]*\Z")


def _generic_operator_ok(match: re.Match[str]) -> bool:
    """A ``,`` between name and value is an argument list only when the name is quoted
    (``setProperty("password", "v")``, not ``<SecretKey, SecretJwkBuilder>``); a ``>`` closes an XML
    element only when the name is one (``<password>v``, not ``KeyAlgorithm<Password, Password> X``)."""
    op = match.string[match.end("n"):match.start("s")]
    if "," in op and not op.lstrip().startswith(("\"", "'")):
        return False
    if op.lstrip("\"' \t").startswith(">"):
        return re.search(r"<[\w:.-]*\Z", match.string[max(0, match.start("n") - 40):match.start("n")]) is not None
    return True


def _unnamed_secret(rule: SecretRule, text: str) -> str:
    """The part to judge of a match whose alternative has no ``s`` group: its longest run of
    letters and digits after the keyword, or (a format of short dash-separated groups, such as
    a 1Password secret key) all of its letters and digits after the keyword."""
    lowered = text.lower()
    at = min((i + len(k) for k in rule.keywords if (i := lowered.find(k)) >= 0), default=0)
    rest = text[at:] or text
    longest = max(_RUNS.findall(rest) or [""], key=len)
    return longest if len(longest) >= 16 else "".join(ch for ch in rest if ch.isalnum())


# What a token may go on with after the distinctive prefix a rule matched: a redaction masks it all.
_TOKEN_TAIL = re.compile(r"[A-Za-z0-9_+/=~.-]*")
REDACT_TAIL_MAX = 4096
"""A token tail longer than this is masked in pieces (each an empty mask after the first)."""

# A private key's rule names its first line only (the BEGIN marker and 32 characters, or PuTTY's
# header); a redaction masks the whole key (``key_end``), in the answer and in a request alike.
_KEY_END = re.compile(r"-----END[A-Z0-9 ]{0,24} PRIVATE KEY(?: BLOCK)?-----|Private-MAC: ?[0-9a-fA-F]+")
_KEY_INSIDE = re.compile(r"[A-Za-z0-9+/=\s:,\\-]*")
"""What a key's body and header lines are made of (base64, line breaks written or escaped, ``Proc-Type:
4,ENCRYPTED``, ``DEK-Info: AES-128-CBC,...``, the dashes of an end marker)."""
_KEY_BREAK = r"(?:[ \t]*(?:\r?\n|\\r\\n|\\n|\\r))+[ \t]*"
_KEY_LINES = re.compile(
    rf"[^\r\n\\\"'`]*(?:{_KEY_BREAK}(?:[A-Za-z0-9+/=]{{16,}}|[A-Za-z0-9+/=]+(?=[ \t]*(?:\r|\n|\\[rn]|[\"'`]|\Z))"
    r"|(?:Proc-Type|DEK-Info|Encryption|Comment|Public-Lines|Private-Lines|Private-MAC):[^\r\n\\]*))*")
"""A key's body lines after what its rule matched (the rest of its line first): base64 runs of 16
characters or more, or shorter ones that end their line or string (a body's last line; a word of
prose after a truncated key goes on with a space or a comma), and PEM's and PuTTY's header lines."""
_KEY_MAY_GO_ON = re.compile(rf"(?:{_KEY_BREAK})?(?:[A-Za-z0-9+/=]{{0,15}}|[A-Z][A-Za-z-]{{0,12}})")
"""What may still become more of the body: a line break and the start of a line."""
KEY_REACH = 16_384
"""How far past its first line a private key's end marker is looked for (an RSA 8192 key in PEM is
about 6.5 KB); held back that far at most while only key characters come."""


def key_end(text: str, at: int, *, final: bool = True) -> int | None:
    """Where a private key ends whose rule matched up to ``at``: past its end marker (PuTTY: its
    ``Private-MAC`` line) when one comes within ``KEY_REACH`` with only key characters before it,
    else past the base64 and header lines that follow (a key cut short). The rule names the body's
    start, which is enough to trip; a redaction must cover the whole key. Not ``final`` (a stream):
    None while more text could still move that end, so that every split masks the same span."""
    limit = at + KEY_REACH
    marker = _KEY_END.search(text, at, limit)
    if marker is not None and _KEY_INSIDE.fullmatch(text, at, marker.start()):
        return marker.end() if final or marker.end() < len(text) else None
    if not final and len(text) < limit and _KEY_INSIDE.fullmatch(text, at):
        return None  # only key characters yet: the end marker may still come
    lines = _KEY_LINES.match(text, at)
    tail = lines.end() if lines is not None else at
    if not final and (tail == len(text) or _KEY_MAY_GO_ON.fullmatch(text, tail)):
        return None
    return tail


class SecretsCheck(DeltaCheck):
    """Per-stream state: the catalog's keyword scanner and, with a rules file, the operator's.

    With ``action = "redact"`` a credential is masked in place (``Redact``), and the text flows on.
    The span is the secret part of an assignment (``api_key = "<masked>"``), or the whole token with
    its own prefix (``ghp_...``); a rule that matched a token's distinctive prefix (an OpenAI key's
    first 32 characters) masks the whole run of token characters after it, so the span waits until
    that run ends (held back meanwhile: ``horizon`` stays at its start)."""

    __slots__ = ("_custom", "_found", "_masked_to", "_owed", "_plain_to", "_provider", "_rendered", "_scanner",
                 "last_rule", "last_start", "window")
    sees_visible_text = True  # invisible characters inside a match hide nothing from the reader

    def __init__(self, provider: SecretsProvider) -> None:
        self._provider = provider
        self._scanner = KeywordScanner(provider.index) if provider.index is not None else None
        self._custom = GitleaksScanner(provider.custom) if provider.custom is not None else None
        self.window = max(provider.index.window if provider.index else 0,
                          provider.custom.window if provider.custom else 0)
        self.last_start = -1
        """Where the match that blocked starts (tests check it against the horizons returned)."""
        self.last_rule = ""
        """The id of the rule whose match blocked."""
        self._owed: tuple[int, int, str, str, bool] | None = None
        """A redaction still waiting for its token to end: (start, end so far, rule id, category,
        whether its label was already shown for an earlier piece)."""
        self._masked_to = 0
        """Matches that start before this offset lie in a span already masked."""
        self._rendered: RenderedText | None = None
        """The text as a Markdown or HTML view shows it, from the first character that may be markup."""
        self._plain_to = 0
        """How far the text was searched for such a character (until one is found)."""
        self._found: list[tuple[int, int, SecretRule, re.Match[str]]] = []
        """Credentials settled but not acted on yet: (start, rule number, rule, match); an earlier
        keyword hit was still pending (``_next_credential``)."""

    def check(self, accumulated: str, delta: str) -> Decision:
        return self._scan(accumulated, final=False)

    def check_horizon(self, accumulated: str, delta: str) -> Decision | int:
        scanner = self._scanner
        if self._custom is None and scanner is not None and self._owed is None and not self._found:
            # The catalog alone: with no keyword hit pending, ``_scan`` would find nothing.
            view = self._view(accumulated, final=False)
            at = scanner.quiet_horizon(view)
            if at >= 0:
                return self._raw_horizon(at)
        decision = self._scan(accumulated, final=False)
        return self.horizon(accumulated) if decision is PASS else decision

    def finish(self, accumulated: str) -> Decision:
        return self._scan(accumulated, final=True)

    def horizon(self, accumulated: str) -> int:
        view = self._view(accumulated, final=False)
        at = self._horizon(view)
        if self._found:  # (rare: a credential waits for an earlier hit to settle)
            at = min(at, *(found[3].start() for found in self._found))
        return self._raw_horizon(at)

    # -- the view the check reads: the text as a Markdown or HTML view shows it (``_rendered``) --
    def _view(self, text: str, *, final: bool) -> str:
        """The text as the client's renderer shows it. O(new characters); until a character that
        may be markup arrives (nearly every prose stream), the text itself."""
        rendered = self._rendered
        if rendered is None:
            if SPECIAL.search(text, self._plain_to) is None:
                self._plain_to = len(text)
                return text
            rendered = self._rendered = RenderedText()
        rendered.feed(text, final=final)
        return rendered.text

    def _raw_horizon(self, at: int) -> int:
        rendered = self._rendered
        if rendered is None:
            return at
        rendered.forget_before(at)
        return min(rendered.raw_horizon(at), rendered.consumed)

    def _raw_start(self, at: int) -> int:
        return at if self._rendered is None else self._rendered.raw_start(at)

    def _redact(self, start: int, end: int, mask: str, rule_id: str) -> Redact:
        """A redaction of the view's ``[start, end)`` as one of the raw text."""
        if self._rendered is not None:
            start, end = self._rendered.raw_span(start, end)
        return Redact(SECRET_LEAK, start, end, mask, rule=rule_id)

    def _horizon(self, accumulated: str) -> int:
        scanner = self._scanner
        if self._owed is not None:
            at = self._owed[0]
            return min(at, scanner.horizon(accumulated)) if scanner is not None else at
        if self._custom is None and scanner is not None:
            return scanner.horizon(accumulated)
        end = len(accumulated)
        if self._scanner is not None:
            end = min(end, self._scanner.horizon(accumulated))
        if self._custom is not None:
            end = min(end, self._custom.horizon(accumulated))
        return end

    def _scan(self, raw: str, *, final: bool) -> Decision:
        provider = self._provider
        text = self._view(raw, final=final)
        if self._owed is not None:
            owed = self._settle_owed(text, final)
            if owed is not None:
                return owed
            if self._owed is not None:
                return PASS  # the token is still arriving
        if self._scanner is not None and (found := self._next_credential(self._scanner, text, final)) is not None:
            rule, match = found
            self.last_start, self.last_rule = self._raw_start(match.start()), rule.id
            if not provider.redact:
                return self._block(rule)
            start, end = _span(match)
            self._owed = (start, end, rule.id, rule.family, False)
            return self._settle_owed(text, final) or PASS
        if self._custom is not None:
            for start, secret in self._custom.scan(text, final=final):
                if start < self._masked_to:
                    continue
                if not any(allowed.startswith(secret) for allowed in provider.allow) and not provider.waived(None, secret):
                    self.last_start, self.last_rule = self._raw_start(start), CUSTOM
                    if not provider.redact:
                        return self._block(None)
                    self._owed = (start, start + len(secret), CUSTOM, CUSTOM, False)
                    return self._settle_owed(text, final) or PASS
        return PASS

    def _next_credential(self, scanner: KeywordScanner, text: str,
                         final: bool) -> tuple[SecretRule, re.Match[str]] | None:
        """The credential to act on now: of those found, the first in the order (where its secret
        part starts, then the catalog's order: providers before ``generic-assignment``), once no
        pending hit could still come before it. A pending hit's match starts no earlier than its
        keyword allows and its secret part no earlier than its match, so (that start, its rule's
        number) bounds its place from below. Ordered by the secret's start, a provider's token held
        by an assignment (``api_key = "sk_live_..."``) is named and masked by the provider's rule,
        not the assignment's, in every split. Without the wait a split would decide: a fixed-width
        token settles the moment its last character arrives, while an earlier hit may still be
        waiting for its value to end."""
        provider, found = self._provider, self._found
        while (settled := scanner.next(text, final=final)) is not None:
            rule, match = provider.rows[settled[0].name], settled[1]
            if match.start() < self._masked_to:
                continue  # inside a span already masked
            if not self._allowed(match) and not provider.waived(rule, match.group()) and is_credential(rule, match):
                found.append((_span(match)[0], settled[0].number, rule, match))
        while found:
            found.sort(key=_found_order)
            start, number, rule, match = found[0]
            if start < self._masked_to:
                del found[0]
                continue
            before = None if final else scanner.first_pending()
            if before is not None and before < (start, number):
                return None  # an earlier hit may still settle: wait for it (the horizon holds both)
            del found[0]
            return rule, match
        return None

    def _settle_owed(self, text: str, final: bool) -> Redact | None:
        """The owed redaction once its token has ended (None while it may still go on)."""
        assert self._owed is not None
        start, end, rule_id, family, labelled = self._owed
        mask = "" if labelled else self._mask(rule_id, family)
        if family == "private_key":
            return self._settle_key(text, final, start, end, rule_id, mask, labelled)
        run = _TOKEN_TAIL.match(text, end)
        tail = run.end() if run is not None else end
        if tail == len(text) and not final:
            if tail - start < REDACT_TAIL_MAX:
                return None  # wait: more of the token may come
            # A token longer than the hold-back should keep: mask what came, the rest as it comes.
            self._owed = (tail, tail, rule_id, family, True)
            self._masked_to = tail
            return self._redact(start, tail, mask, rule_id)
        while tail > end and text[tail - 1] == ".":
            tail -= 1  # a sentence's full stop is not the token's
        self._owed = None
        self._masked_to = max(self._masked_to, tail)
        if tail == start:
            return None
        return self._redact(start, tail, mask, rule_id)

    def _settle_key(self, text: str, final: bool, start: int, end: int, rule_id: str, mask: str,
                    labelled: bool) -> Redact | None:
        """A private key's redaction, through ``key_end``: held until that end is known; a key whose
        end is still open ``KEY_REACH`` characters on is masked as it comes, its lines piece by piece."""
        if not labelled:
            tail = key_end(text, end, final=final)
            if tail is not None:
                self._owed = None
                self._masked_to = max(self._masked_to, tail)
                return self._redact(start, tail, mask, rule_id)
            if len(text) < end + KEY_REACH:
                return None  # wait: the key's end is not known yet
        lines = _KEY_LINES.match(text, end)
        tail = lines.end() if lines is not None else end
        if not final and (tail == len(text) or _KEY_MAY_GO_ON.fullmatch(text, tail)):
            if tail == start:
                return None
            self._owed = (tail, tail, rule_id, "private_key", True)  # the rest as it comes
        else:
            self._owed = None
        self._masked_to = max(self._masked_to, tail)
        return self._redact(start, tail, mask, rule_id) if tail > start else None

    def _mask(self, rule_id: str, family: str) -> str:
        return _fill(self._provider.mask, self._provider.id, rule_id, family)

    def _allowed(self, match: re.Match[str]) -> bool:
        """A match (or its secret part) that lies inside an allowed value: the rules match a
        distinctive prefix of unbounded tokens, and the secret part of assignments."""
        secret = (match.group("s") if "s" in match.re.groupindex else None) or match.group()
        return any(secret in allowed or match.group() in allowed for allowed in self._provider.allow)

    def _block(self, rule: SecretRule | None) -> Block:
        rule_id, category = (rule.id, rule.family) if rule is not None else (CUSTOM, CUSTOM)
        provider = self._provider
        return Block(SECRET_LEAK, _fill(provider.replacement, provider.id, rule_id, category),
                     f"The answer contained a credential (category: {category}, rule: {rule_id}). Never "
                     "output keys, tokens, passwords or private keys; refer to them by name instead.",
                     rule=rule_id)


def _found_order(found: tuple[int, int, SecretRule, re.Match[str]]) -> tuple[int, int]:
    return found[0], found[1]


def _fill(template: str, guardrail: str, rule: str, category: str) -> str:
    """``template`` with ``{guardrail}``, ``{rule}`` and ``{category}`` filled in (other braces kept)."""
    return template.replace("{guardrail}", guardrail).replace("{rule}", rule).replace("{category}", category)


_TOKEN_PREFIX = re.compile(r"[A-Za-z0-9_.-]*")
"""What may come before a rule's secret part and still be the same token (masked with it): a
prefix (``ghp_``), or a structured token's earlier segments (a Discord bot token's id and time)."""


def _span(match: re.Match[str]) -> tuple[int, int]:
    """What a redaction masks of ``match``: its secret part (``s``, or a login's ``a``), or the whole
    match when that part is the rest of a token whose prefix the rule named (``ghp_`` + ``s``)."""
    group = next((g for g in ("s", "a") if g in match.re.groupindex and match.group(g)), None)
    if group is None:
        return match.start(), match.end()
    start = match.start(group)
    if _TOKEN_PREFIX.fullmatch(match.string, match.start(), start):
        start = match.start()
    end = match.end(group)
    if _TOKEN_PREFIX.fullmatch(match.string, end, match.end()):
        end = match.end()  # the token's own suffix after its random part (``-NRMA``, ``-1``)
    return start, end


class SecretsProvider:
    """The ``secrets`` stream guardrail. The keyword index is built once per policy."""

    sees_visible_text = SecretsCheck.sees_visible_text  # (its whole-text form reads what the check reads)

    def __init__(self, spec: SecretsGuardrail, replacement: str, base_dir: Path = Path(".")) -> None:
        unknown = set(spec.categories) - CATEGORIES - {CUSTOM}
        if unknown:
            raise ValueError(f"guardrail {spec.id!r}: unknown secrets categories {sorted(unknown)}; "
                             f"known: {sorted(CATEGORIES | {CUSTOM})}")
        chosen = frozenset(spec.categories) or CATEGORIES | {CUSTOM}
        self.id = spec.id
        self.allow = tuple(spec.allow)
        self.replacement = replacement
        self.redact = spec.action == "redact"
        self.mask = spec.mask
        self.allow_rules = frozenset(spec.allow_rules)
        self.allow_patterns = tuple(re.compile(p) for p in spec.allow_patterns)
        self.stopwords = tuple(w.lower() for w in spec.stopwords)
        built = chosen & CATEGORIES
        self.index: KeywordIndex | None = None
        self.rows: dict[str, SecretRule] = {}
        if built:
            self.index, self.rows = build_index(built)
        self.custom: GitleaksRules | None = None
        if spec.rules_file and CUSTOM in chosen:
            path = Path(spec.rules_file).expanduser()
            self.custom = load_gitleaks_rules(path if path.is_absolute() else base_dir / path)

    def arm(self, ctx: StreamContext) -> DeltaCheck | None:
        return SecretsCheck(self)

    def waived(self, rule: SecretRule | None, found: str) -> bool:
        """The operator's allowlist: by rule id or category, by a regex on the match, by a stopword."""
        if rule is not None and (rule.id in self.allow_rules or rule.family in self.allow_rules):
            return True
        if rule is None and CUSTOM in self.allow_rules:
            return True
        if any(p.search(found) for p in self.allow_patterns):
            return True
        lowered = found.lower()
        return any(w in lowered for w in self.stopwords)

    def passes_whole(self, ctx: StreamContext, pieces: Sequence[str]) -> bool:
        """``SecretsCheck``'s verdict over a complete text (``PassesWhole``): no keyword of the
        catalog's rules anywhere in it (every rule's match holds one). With a rules file, the
        operator's rules are not keyword-gated: the armed check decides."""
        if self.custom is not None:
            return False
        if self.index is None:
            return True
        return self.index.finds_none(render(pieces[0] if len(pieces) == 1 else "".join(pieces)))
