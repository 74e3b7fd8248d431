"""``pii``: personal data in the model's output, blocked or redacted in place.

Categories (policy ``categories``; empty selects all) and the mask each is redacted to:

=============  ============  ==============================================================
``email``      ``[email]``   addresses; reserved example domains (RFC 2606) pass
``phone``      ``[phone]``   ``+<cc> ...`` international, US ``(415) 555-0100``/``415-555-0100``,
                             UK ``020 7946 0958``, French ``06 12 34 56 78``
``card``       ``[card]``    13-19 digits, optional consistent spaces/dashes, Luhn-checked
``iban``       ``[iban]``    known country code, mod-97 checked
``ssn``        ``[ssn]``     US SSN ``123-45-6789`` (or spaces) within the issued ranges
``uk_nino``    ``[nino]``    UK National Insurance numbers
=============  ============  ==============================================================

Plain numbers, dates, times, version strings and IP addresses do not match: every phone form
needs a ``+``, a leading ``0`` or NANP separators, and every pattern is bounded by characters that
cannot continue it.

A match is reported only once it can no longer grow: each pattern ends in a lookahead over the
characters that could extend it, and the scanner waits for ``PII_SLACK`` more characters (an IBAN
may still take a space and four more characters). The alternation runs only from where an anchor
(``_ANCHORS``: an "@", four close digits, an IBAN's start) says a match may begin, so a delta of
clean prose costs one search of its own characters and the few before it. With ``action = "redact"`` a check returns one
``Redact`` per call, earliest first; the pipeline calls again with an empty delta (and ``finish``
again) until it gets ``Pass``. Offsets refer to ``accumulated``, which must stay the model's raw text.
"""

from __future__ import annotations

import re

from config.policy import PiiGuardrail
from guardrails.decision import PASS, PII, Block, Decision, Redact
from guardrails.seams import DeltaCheck, StreamContext
from guardrails.stream._horizon import Closure, HorizonParts
from guardrails.stream._scan import Anchors, TailScanner, split_lookbehinds, widest

# Characters after a match that the scanner waits for before calling it final: an IBAN's next
# group is a space and four characters, so five characters decide it (slack 4 + 1).
PII_SLACK = 4
# Longest match: an email of a 32-char local part, three 24-char labels and a 12-char TLD (120).
PII_WINDOW = 120 + PII_SLACK + 1

# Numbers end where neither a word character, "@" nor another digit group follows.
_NUM_END = r"(?![\w@]|[ .-]?[\d(])"
_PATTERNS = {
    "email": (r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9][A-Za-z0-9._%+-]{0,31}@"
              r"(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,22}[A-Za-z0-9])?\.){1,3}[A-Za-z]{2,12}"
              r"(?![A-Za-z0-9_%+@-]|\.[A-Za-z0-9])"),
    "iban": r"(?<![A-Za-z0-9])[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?(?![A-Za-z0-9])",
    "card": r"(?<![\d.])(?<!\d[ -])[2-6]\d{3}(?:[ -]?\d){9,15}" + _NUM_END,
    "ssn": (r"(?<![\w.-])(?!000|666|9\d\d)\d{3}(?P<ssn_sep>[- ])(?!00)\d{2}(?P=ssn_sep)(?!0000)\d{4}"
            + _NUM_END),
    "phone": (r"(?<![\w+.(-])(?:"
              r"\+[1-9]\d{0,2}(?:[ .-]?\(?\d{1,4}\)?){1,5}[ .-]?\d{2,4}"
              r"|(?:\([2-9]\d{2}\) ?|[2-9]\d{2}[.-])[2-9]\d{2}[.-]\d{4}"
              r"|0[1-9]\d{1,3}[ -]\d{3,4}[ -]?\d{3,4}"
              r"|0[1-9](?:[ .]\d{2}){4})" + _NUM_END),
    "uk_nino": (r"(?<![A-Za-z0-9])(?!BG|GB|NK|KN|TN|NT|ZZ)[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z]"
                r" ?\d{2} ?\d{2} ?\d{2} ?[A-D](?![A-Za-z0-9])"),
}
# Where each category's match may begin, as ``(anchor, back)``: every match starting at ``s`` holds
# text the anchor matches at some ``p`` in ``[s, s + back]``. An email has its "@" at most 32
# characters in; every number form opens, at most 3 characters in ("+1", "(4", "AB 1"), with four
# digits apart by at most three of " .()-" ("+1 (415)", "4111 1", "06 12"); an IBAN starts with
# its country and check digits. The scanner runs the alternation only from there. Every anchor
# ends in an "@" or a digit.
_DIGITS = (r"\d(?:[ .()-]{0,3}\d){3}", 3)
_ANCHORS = {"email": ("@", 32), "iban": (r"[A-Z]{2}\d{2}", 0), "card": _DIGITS, "ssn": _DIGITS,
            "phone": _DIGITS, "uk_nino": _DIGITS}
_ANCHOR_ENDS = r"[@\d]"
# For the horizon: the text a match holds up to the end of its anchor, per anchor. An email's
# local part and "@"; a number's lead ("+", "(", a NINO's two letters) and four close digits; an
# IBAN's country and check digits. A match whose anchor has not arrived yet starts where the tail
# of the text is a prefix of one of these.
_LEADS = {"email": r"[A-Za-z0-9][A-Za-z0-9._%+-]{0,31}@", "iban": r"[A-Z]{2}\d{2}",
          "number": r"(?:[+(]|[A-Z]{2} ?)?\d(?:[ .()-]{0,3}\d){3}"}
_LEAD_OF = {"email": "email", "iban": "iban", "card": "number", "ssn": "number", "phone": "number",
            "uk_nino": "number"}
CATEGORIES = frozenset(_PATTERNS)
MASKS = {"email": "[email]", "phone": "[phone]", "card": "[card]", "iban": "[iban]", "ssn": "[ssn]",
         "uk_nino": "[nino]"}

_IBAN_COUNTRIES = frozenset(re.findall(r"[A-Z]{2}",
    "AD AE AL AT AZ BA BE BG BH BI BR BY CH CR CY CZ DE DJ DK DO EE EG ES FI FK FO FR GB GE GI GL GR "
    "GT HR HU IE IL IQ IS IT JO KW KZ LB LC LI LT LU LV LY MC MD ME MK MN MR MT MU NI NL NO OM PK PL "
    "PS PT QA RO RS RU SA SC SD SE SI SK SM SO ST SV TL TN TR UA VA VG XK YE"))
_RESERVED_DOMAINS = ("example.com", "example.org", "example.net")
_RESERVED_TLDS = (".example", ".test", ".invalid", ".localhost")


def luhn_ok(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch) * (2 if i % 2 else 1)
        total += d - 9 if d > 9 else d
    return total % 10 == 0


def iban_ok(text: str) -> bool:
    iban = text.replace(" ", "")
    if iban[:2] not in _IBAN_COUNTRIES or not 15 <= len(iban) <= 34:
        return False
    rearranged = iban[4:] + iban[:4]
    return int("".join(str(int(ch, 36)) for ch in rearranged)) % 97 == 1


def _valid(kind: str, text: str) -> bool:
    if kind == "email":
        domain = text.rsplit("@", 1)[1].lower()
        return not (domain.endswith(_RESERVED_TLDS) or any(
            domain == d or domain.endswith("." + d) for d in _RESERVED_DOMAINS))
    if kind == "card":
        digits = "".join(ch for ch in text if ch.isdigit())
        separators = {ch for ch in text if not ch.isdigit()}
        return 13 <= len(digits) <= 19 and len(separators) <= 1 and luhn_ok(digits)
    if kind == "iban":
        return iban_ok(text)
    if kind == "phone":
        return 8 <= sum(ch.isdigit() for ch in text) <= 15
    return True


class PiiCheck(DeltaCheck):
    """Per-stream state: one tail scanner over the selected categories' alternation."""

    def __init__(self, pattern: re.Pattern[str], before: dict[str, re.Pattern[str]], anchors: Anchors,
                 horizon: HorizonParts, allow: frozenset[str], redact: bool, replacement: str) -> None:
        self.window = PII_WINDOW
        self._scanner = TailScanner(pattern, PII_WINDOW, slack=PII_SLACK, anchors=anchors)
        self._horizon = horizon.arm()
        self._before = before
        self._allow = allow
        self._redact = redact
        self._replacement = replacement

    def check(self, accumulated: str, delta: str) -> Decision:
        return self._next(accumulated, final=False)

    def finish(self, accumulated: str) -> Decision:
        """One decision per call, like ``check``: call again until ``Pass`` when redacting."""
        return self._next(accumulated, final=True)

    def horizon(self, accumulated: str) -> int:
        return self._horizon.value

    def _next(self, text: str, *, final: bool) -> Decision:
        while (match := self._scanner.next(text, final=final)) is not None:
            kind, found = match.lastgroup or "", match.group()
            if not self._before[kind].match(text, match.start()) or found in self._allow or not _valid(kind, found):
                continue
            if self._redact:
                return Redact(PII, match.start(), match.end(), MASKS[kind])
            return Block(PII, self._replacement,
                         f"The answer contained personal data (category: {kind}). Do not repeat "
                         "personal data such as emails, phone numbers, card or account numbers.")
        self._horizon.update(self._scanner, text)
        return PASS


class PiiProvider:
    """The ``pii`` stream guardrail; the alternation of the chosen categories is compiled once."""

    def __init__(self, spec: PiiGuardrail, replacement: str) -> None:
        unknown = set(spec.categories) - CATEGORIES
        if unknown:
            raise ValueError(f"guardrail {spec.id!r}: unknown pii categories {sorted(unknown)}; "
                             f"known: {sorted(CATEGORIES)}")
        chosen = [k for k in _PATTERNS if not spec.categories or k in spec.categories]
        self.id = spec.id
        # Leading lookbehinds are tested after the scan: see ``split_lookbehinds`` for why.
        parts = {k: split_lookbehinds(_PATTERNS[k]) for k in chosen}
        self._pattern = re.compile("|".join(f"(?P<{k}>{rest})" for k, (_, rest) in parts.items()))
        self._before = {k: re.compile(lb) for k, (lb, _) in parts.items()}
        self._anchors = Anchors([_ANCHORS[k] for k in chosen], quick=_ANCHOR_ENDS)
        leads = sorted({_LEADS[_LEAD_OF[k]] for k in chosen})
        self._horizon = HorizonParts(Closure(self._pattern.pattern), Closure("|".join(leads)),
                                     max(widest(lead) for lead in leads))
        self._allow = frozenset(spec.allow)
        self._redact = spec.action == "redact"
        self._replacement = replacement

    def arm(self, ctx: StreamContext) -> DeltaCheck | None:
        return PiiCheck(self._pattern, self._before, self._anchors, self._horizon, self._allow, self._redact,
                        self._replacement)
