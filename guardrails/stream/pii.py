"""``pii``: personal data in the model's output, blocked or redacted in place.

Categories (policy ``categories``; empty selects all) and the mask each is redacted to:

===============  ============  ==============================================================
``email``        ``[email]``   addresses; reserved example domains (RFC 2606) pass; URL
                               userinfo (``user:pass@host``, ``scheme://user@host``) is not one
``phone``        ``[phone]``   ``+<cc> ...`` in every region; national formats of ``regions``;
                               both valid per libphonenumber (``phonenumbers``)
``card``         ``[card]``    13-19 digits, contiguous or in 4-4-4-4(-3) (spaces, dashes or dots) / 4-6-5 groups with
                               one separator, Luhn-checked; several on a line
``iban``         ``[iban]``    spaces or dashes between groups; checked by ``stdnum.iban``
                               (country length and mod-97); the longest valid prefix counts
``ssn``          ``[ssn]``     US SSN ``123-45-6789`` (or spaces) within the issued ranges
``uk_nino``      ``[nino]``    UK National Insurance numbers, either case
``national_id``  ``[id]``      the national ids of ``regions`` (``pii_regions``), each checked
                               by its ``python-stdnum`` validator
===============  ============  ==============================================================

Plain numbers, dates, times, version strings and IP addresses do not match: every number form
needs a ``+``, separators or a checksum, phone candidates that look like dates (also a date then a
time, ``08.11.1978 04:29:57``) or dotted quads are dropped, eight digits that read as a date
(``20220513``) are neither a phone nor a national id, and every pattern is bounded by characters
that cannot continue it.

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
import string
from collections.abc import Callable, Sequence
from functools import lru_cache

import phonenumbers
from stdnum import iban as stdnum_iban
from stdnum import isbn, luhn
from stdnum.us import ssn as us_ssn

from config.policy import PiiGuardrail
from guardrails.decision import PASS, PII, Block, Decision, Redact
from guardrails.seams import DeltaCheck, StreamContext
from guardrails.stream._horizon import Closure, HorizonParts
from guardrails.stream._scan import Anchors, TailScanner, split_lookbehinds, widest
from guardrails.stream.pii_regions import DEFAULT_REGIONS, NATIONAL_IDS, validator
from guardrails.text.suffixes import public_suffixes

# Characters after a match that the scanner waits for before calling it final: an IBAN's next
# group is a space and four characters, so five characters decide it (slack 4 + 1).
PII_SLACK = 4
# Longest email ``email_ok`` accepts: a 64-character local part, "@" and a 253-character domain
# (RFC 5321). The regex may read a longer candidate; ``email_ok`` refuses it.
EMAIL_LONGEST = 64 + 1 + 253

# Numbers end where neither a word character, "@" nor another digit group follows, nor a "-" or
# "." that joins them to a word (``415-555-0100-alice@corp.io`` is an address, not a phone).
_NUM_END = r"(?![\w@]|[ ./-]?[\d(]|[.-][A-Za-z_])"
# A card may be followed by another card: a space and a digit do not continue it.
_CARD_END = r"(?![\w@]|[.-]?\d)"
_PATTERNS = {
    # A dot-atom local part (letters of any script, digits, ``._%+'-``; ``'`` not first) or a quoted
    # one, then 1-8 labels and a top-level domain (letters of any script, or punycode). Not after
    # a ":" (URL userinfo, ``scheme://user@host``) unless it is ``mailto:``; not before ``:path``
    # (``git@host:org/repo``, an scp-style remote).
    "email": (r"(?<![\w.%+/-])(?<!(?<!mailto):)(?:\"[^\"\\\r\n]{1,30}\"|\w[\w.%+'-]{0,63})@"
              r"(?:[^\W_](?:[\w-]{0,61}[^\W_])?\.){1,8}(?:[^\W\d_]{2,63}|xn--[a-z0-9-]{1,59})"
              r"(?![\w%+@-]|\.\w|:[\w/~])"),
    "iban": (r"(?<![A-Za-z0-9])[A-Z]{2}\d{2}(?:[ -]?[A-Z0-9]{4}){2,7}(?:[ -]?[A-Z0-9]{1,3})?"
             r"(?![A-Za-z0-9])"),
    # Four digits, then two to four groups apart by one separator (4-4-4-4, 4-4-4-4-3, Amex
    # 4-6-5, Diners 4-6-4, 4-4-5), or one run; ``card_ok`` checks the length, issuer and Luhn.
    "card": (r"(?<![\w.])(?<!\w-)(?:[2-6]\d{3}(?P<card_sep>[ .-])\d{4,6}(?P=card_sep)\d{4,5}"
             r"(?:(?P=card_sep)\d{1,4}(?:(?P=card_sep)\d{3})?)?|[2-6]\d{12,18})" + _CARD_END),
    # Three groups apart by one dash or space, or nine digits in a row (``PiiProvider.valid``
    # takes those only after a word that names an SSN).
    "ssn": (r"(?<![\w.-])(?!000|666|9\d\d)\d{3}(?:(?P<ssn_sep>[- ])(?!00)\d{2}(?P=ssn_sep)|(?!00)\d{2})(?!0000)\d{4}"
            + _NUM_END),
    # ``+<cc> ...``; national: a trunk digit and an area code in parentheses (``8 (71234) 5 67
    # 89``, ``(06 1) 234 5678``), groups apart by one separator, or one run of digits. Each form
    # holds four digits in its first few characters (the anchor the scanner starts from): three in
    # or after the parentheses, or four among the first groups (``_NUM_END`` lets no group go).
    "phone": (r"(?<![\w+.(/-])(?:"
              r"\+[1-9]\d{0,2}(?:[ .-]?\(?\d{1,4}\)?){1,5}[ .-]?\d{2,4}"
              r"|(?:\d{1,2} )?\((?:\d{3,5}(?: \d{1,4})?\) ?\d{1,10}|\d{1,2}(?: \d{1,4})?\) ?\d{3,10})"
              r"(?:[ .-]\d{1,10}){0,4}"
              r"|(?=(?:\d[ ./-]?){3}\d)\d{1,6}[ ./-]\d{1,10}(?:[ .-]\d{1,10}){0,4}|\d{5,12})" + _NUM_END),
    "uk_nino": (r"(?<![A-Za-z0-9])(?i:(?!BG|GB|NK|KN|TN|NT|ZZ)[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z]"
                r" ?\d{2} ?\d{2} ?\d{2} ?[A-D])(?![A-Za-z0-9])"),
}
# Where each category's match may begin, as ``(anchor, back)``: every match starting at ``s`` holds
# text the anchor matches at some ``p`` in ``[s, s + back]``. An email has its "@" at most 32
# characters in; every number form opens, at most 3 characters in ("+1", "(4", "AB 1"), with four
# digits apart by at most three of " .()-" ("+1 (415)", "4111 1", "06 12"); an IBAN starts with
# its country and check digits. The scanner runs the alternation only from there. Every anchor
# ends in an "@" or a digit.
_DIGITS = (r"\d(?:[ ./()-]{0,3}\d){3}", 3)
_ANCHORS = {"email": ("@", 64), "iban": (r"[A-Z]{2}\d{2}", 0), "card": _DIGITS, "ssn": _DIGITS,
            "phone": _DIGITS, "uk_nino": _DIGITS}
_ANCHOR_ENDS = r"[@\d]"
# For the horizon: the text a match holds up to the end of its anchor, per anchor. An email's
# local part and "@"; a number's lead ("+", "(", a NINO's two letters, an id's letters) and four
# close digits; an IBAN's country and check digits. A match whose anchor has not arrived yet
# starts where the tail of the text is a prefix of one of these.
_LEADS = {"email": r"(?:\"[^\"\\\r\n]{1,30}\"|\w[\w.%+'-]{0,63})@", "iban": r"[A-Z]{2}\d{2}",
          "number": r"(?:[+(]|[A-Za-z]{2} ?)?\d(?:[ ./()-]{0,3}\d){3}",
          "id": r"(?:[A-Za-z]-?|[A-Z]{4,6})?\d(?:[ .()-]{0,3}\d){3}|[A-Z]{6}\d{2}|[A-Z]{4}\d{2}"}
_LEAD_OF = {"email": "email", "iban": "iban", "card": "number", "ssn": "number", "phone": "number",
            "uk_nino": "number", "national_id": "id"}
# Longest match any pattern reads (an email's: 8 labels of 63), and the slack after it: a match
# this long is settled however it ends, so no match is reported before it is.
PII_WINDOW = max(widest(split_lookbehinds(rx)[1]) for rx in _PATTERNS.values()) + PII_SLACK + 1
CATEGORIES = frozenset(_PATTERNS) | {"national_id"}
MASKS = {"email": "[email]", "phone": "[phone]", "card": "[card]", "iban": "[iban]", "ssn": "[ssn]",
         "uk_nino": "[nino]", "national_id": "[id]"}

_RESERVED_DOMAINS = ("example.com", "example.org", "example.net")
_RESERVED_TLDS = (".example", ".test", ".invalid", ".localhost")
_DATE = re.compile(r"\d{4}([-./])\d{1,2}\1\d{1,2}|\d{1,2}([-./])\d{1,2}\2\d{2,4}")
_DOTTED_QUAD = re.compile(r"\d{1,3}(?:\.\d{1,3}){3}")
# A date then a time (``08.11.1978 04:29:57``): the date and the hour read as a phone's groups.
_DATE_THEN_SPACE = re.compile(rf"(?:{_DATE.pattern}) ")
# A word that names an SSN, then at most a few characters (``SSN: ``, ``"ssn": "``, ``SSN#``,
# ``| SSN | ``, ``social security no. ``, ``Jane's SSN is ``) up to the nine digits it names.
_SSN_NAMED = re.compile(r"(?i)(?:\bssns?|\bsocial[\s_-]*security(?:[\s_-]*(?:number|num|no))?)\W{0,6}"
                        r"(?:(?:is|was|=|:)\W{0,3})?\Z")
_SSN_NAME_REACH = 48
# One dot between two runs of digits is a decimal number (``37.7749``), not a phone.
_DECIMAL = re.compile(r"\d+\.\d+")
_SSN_SHAPE = re.compile(r"\d{3}([- ])\d{2}\1\d{4}")
# The horizon's bound (``PiiCheck._update_horizon``): the characters of an unquoted local part
# (the longest lead, 64 characters and its "@"), a quoted one's length, and what may follow a
# number's digit within its lead.
_RUN_CHARS = string.ascii_letters + string.digits + "_.%+'-"
_QUOTED = 30
_TAIL = 64 + 2
_NUMBER_SEPARATORS = " ./()-"
_IBAN_CUT = re.compile(r"[ -]?[A-Z0-9]{1,4}\Z")
_ENDS = {"phone": re.compile(_NUM_END), "card": re.compile(_CARD_END)}
"""What may follow a number, for the shorter readings of an invalid one (``PiiProvider.shorter``)."""
# Offsets ``PiiProvider.earliest_viable`` tries one at a time before it searches instead: an
# email's 64 characters before its "@" and a few more. Trying them costs about 1 µs each; the
# search also tries every offset from the match to the end, 0.3-0.9 ms when a match was just found.
_VIABLE_TRIES = 80
_SHORTEST_NUMBER = 7
_SHORTER_TRIES = 4

_ANY_REGION = tuple(sorted(phonenumbers.SUPPORTED_REGIONS))


def luhn_ok(digits: str) -> bool:
    return luhn.is_valid(digits)


# The issuer ranges (first digits, ISO/IEC 7812) card networks publish, with the lengths each
# issues: ``(low, high, shortest, longest, other lengths)``. Maestro's 50 and 56-69 take in
# Discover, UnionPay, RuPay and the rest of the 6s. A Luhn-valid number outside them (a French
# NIR that starts with 25, 15 digits) is not a card. No kept library checks this: python-stdnum
# has the Luhn check only,.
_CARD_ISSUERS = (
    ("4", "4", 13, 13, (16, 19)),                        # Visa
    ("2200", "2204", 16, 19, ()),                        # Mir
    ("2221", "2720", 16, 16, ()), ("51", "55", 16, 16, ()),  # Mastercard
    ("34", "34", 15, 15, ()), ("37", "37", 15, 15, ()),  # American Express
    ("300", "305", 14, 19, ()), ("36", "36", 14, 19, ()), ("38", "39", 14, 19, ()),  # Diners Club
    ("3528", "3589", 16, 19, ()),                        # JCB
    ("50", "50", 12, 19, ()), ("56", "69", 12, 19, ()),  # Maestro, Discover, UnionPay, RuPay...
)


def card_ok(text: str) -> bool:
    """13-19 digits of a card network's issuer range and length, Luhn-valid, with at most one kind
    of separator."""
    digits = "".join(ch for ch in text if ch.isdigit())
    if not 13 <= len(digits) <= 19 or len({ch for ch in text if not ch.isdigit()}) > 1:
        return False
    for low, high, shortest, longest, other in _CARD_ISSUERS:
        if low <= digits[:len(low)] <= high and (shortest <= len(digits) <= longest or len(digits) in other):
            return luhn_ok(digits)
    return False


def iban_ok(text: str) -> bool:
    """Country format and length, and mod-97 (the national account checks stdnum adds for some
    countries reject registry examples, so they are left out)."""
    return stdnum_iban.is_valid(text, check_country=False)


def iban_end(text: str) -> int:
    """The length of the longest prefix of ``text``, cut between groups, that is a valid IBAN (an
    uppercase word after an IBAN looks like one more group), or 0."""
    while len(text) >= 15:
        if iban_ok(text):
            return len(text)
        cut = _IBAN_CUT.search(text)
        if cut is None:
            return 0
        text = text[:cut.start()]
    return 0


# Local parts that name a service, not a person: an SSH remote's ``git@``, the no-reply senders and
# the mailbox names RFC 2142 reserves for operations.
_SERVICE_LOCALS = frozenset({"git", "noreply", "no-reply", "donotreply", "do-not-reply", "mailer-daemon",
                             "postmaster", "hostmaster"})



def known_tld(label: str) -> bool:
    """Whether ``label`` is a top-level domain (the public suffix list's, in Unicode or punycode):
    ``io``, ``рф``, ``xn--p1ai``; not ``png`` (``icon@2x.png``), ``tld``, ``local``."""
    psl = public_suffixes()
    if psl.publicsuffix("x." + label, accept_unknown=False) is not None:
        return True
    if label.isascii():
        return False
    try:
        puny = label.encode("idna").decode("ascii")
    except UnicodeError:
        return False
    return psl.publicsuffix("x." + puny, accept_unknown=False) is not None


def email_ok(text: str, *, examples: bool = True) -> bool:
    """An address as RFC 5321/5322 and IDNA write it, of a real top-level domain, that may name a
    person: a local part of at most 64 characters without a leading, trailing or doubled dot
    (unless quoted), labels of at most 63 characters that neither start nor end with "-", a domain
    of at most 253; not a service mailbox (``_SERVICE_LOCALS``); at a reserved example domain
    (RFC 2606, 6761: ``example.com`` and the hosts below it, ``.test``...) only when ``examples``. Written here rather than with ``email-validator``: it checks the same
    syntax, but its IDNA (UTS 46) pass cost 235-345 µs per address against about 6 here, and
    that is paid on every "@" a stream carries."""
    local, _, domain = text.rpartition("@")
    if not local.startswith('"') and (len(local) > 64 or local[0] == "." or local[-1] == "." or ".." in local):
        return False
    domain = domain.lower()
    if len(domain) > 253 or local.lower() in _SERVICE_LOCALS:
        return False
    labels = domain.split(".")
    if any(len(label) > 63 or label[0] == "-" or label[-1] == "-" for label in labels):
        return False
    if not examples and (domain.endswith(_RESERVED_TLDS)
                         or any(domain == d or domain.endswith("." + d) for d in _RESERVED_DOMAINS)):
        return False
    return known_tld(labels[-1])


def compact_date(text: str) -> bool:
    """Eight digits that read as a date, ``YYYYMMDD`` or ``DDMMYYYY`` (1900-2099): a date stamp."""
    if len(text) != 8 or not text.isdigit():
        return False
    for year, month, day in ((text[:4], text[4:6], text[6:]), (text[4:], text[2:4], text[:2])):
        if year[:2] in ("19", "20") and 1 <= int(month) <= 12 and 1 <= int(day) <= 31:
            return True
    return False


def phone_ok(text: str, regions: Sequence[str] = DEFAULT_REGIONS) -> bool:
    """A valid number (libphonenumber), written as its region writes it: ``+<cc>`` and 7-15
    digits, or the national format of one of ``regions`` (5-15 digits, trunk prefix included
    where the region has one: a German ``030 1234567``, not ``30 1234567``; a bare run of digits
    only where the national format is one)."""
    if (_DATE.fullmatch(text) or _DOTTED_QUAD.fullmatch(text) or _SSN_SHAPE.fullmatch(text)
            or _DATE_THEN_SPACE.match(text) or compact_date(text) or _DECIMAL.fullmatch(text)
            or (text.count("-") >= 3 and isbn.is_valid(text))):
        return False
    if text.startswith("+"):
        # ``+44 (0)20 ...``: the trunk digit in parentheses is not dialled from abroad.
        digits = "".join(ch for ch in text.replace("(0)", "", 1) if ch.isdigit())
        return 7 <= len(digits) <= 15 and _valid_number(text, None)
    digits = "".join(ch for ch in text if ch.isdigit())
    if not 5 <= len(digits) <= 15:
        return False
    return any(_national_shape(region)(digits) and _valid_number(text, region, digits) for region in regions)


@lru_cache(maxsize=len(phonenumbers.SUPPORTED_REGIONS))
def _national_shape(region: str) -> Callable[[str], bool]:
    """A cheap necessary test for ``_valid_number(text, region, digits)``: the digits end in a
    national significant number of one of the region's possible lengths that its general pattern
    (libphonenumber's metadata, a superset of every valid number's) accepts, after nothing or the
    trunk prefix once or twice (``_valid_number`` takes the digits of the national format, which
    may hold the prefix, with or without one more, or what a format's prefix rule writes: ``8 0``). Parsing and validating cost
    30-70 µs per region; a run of digits in a log line is nearly never a national number, and
    this answers in a regex."""
    metadata = phonenumbers.PhoneMetadata.metadata_for_region(region)
    desc = metadata.general_desc if metadata is not None else None
    if desc is None or desc.national_number_pattern is None or metadata.national_prefix_transform_rule:  # type: ignore[union-attr]
        return lambda digits: True  # (Argentina's ``011 15-2345-6789``: the national form adds digits inside)
    pattern = re.compile(desc.national_number_pattern)
    lengths = tuple(desc.possible_length or ())
    prefix = metadata.national_prefix or ""  # type: ignore[union-attr]
    leads = {"", prefix, prefix + prefix}
    for number_format in metadata.number_format:  # type: ignore[union-attr]
        rule = number_format.national_prefix_formatting_rule or ""
        added = "".join(ch for ch in rule.split("\\1")[0] if ch.isdigit())  # ``8 0\1``: "80" before the groups
        leads |= {added, prefix + added}

    def may_be(digits: str) -> bool:
        return any(len(digits) >= n and digits[:len(digits) - n] in leads
                   and pattern.fullmatch(digits, len(digits) - n) is not None for n in lengths)

    return may_be if lengths else (lambda digits: True)


def _valid_number(text: str, region: str | None, digits: str = "") -> bool:
    try:
        number = phonenumbers.parse(text, region)
    except phonenumbers.NumberParseException:
        return False
    if not phonenumbers.is_valid_number(number):
        return False
    if region is None:
        return True
    national = "".join(ch for ch in phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.NATIONAL)
                       if ch.isdigit())
    metadata = phonenumbers.PhoneMetadata.metadata_for_region(region)
    prefix = metadata.national_prefix if metadata is not None and metadata.national_prefix else ""
    if digits not in (national, prefix + national):
        return False
    # A bare run of digits counts only where the national format is one (``71234567`` in Bolivia;
    # an American number is written in groups), and with the trunk prefix where the region's own
    # numbers are written with it: libphonenumber formats a German number no format covers as its
    # bare digits (``352720`` is a valid Saxon fixed line), so every 6-8 digit count in a table
    # of benchmarks read as a German phone.
    if digits != text:
        return True
    if prefix and not digits.startswith(prefix) and not _writes_bare(region):
        return False
    return national == phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.NATIONAL)


@lru_cache(maxsize=len(phonenumbers.SUPPORTED_REGIONS))
def _writes_bare(region: str) -> bool:
    """Whether the region's own fixed-line or mobile example number is written as one run of digits
    in its national format (Bolivia, Norway...): there a run without the trunk prefix is a phone."""
    for kind in (phonenumbers.PhoneNumberType.FIXED_LINE, phonenumbers.PhoneNumberType.MOBILE):
        example = phonenumbers.example_number_for_type(region, kind)
        if example is not None and phonenumbers.format_number(example, phonenumbers.PhoneNumberFormat.NATIONAL).isdigit():
            return True
    return False


def _valid(kind: str, text: str, regions: Sequence[str] = DEFAULT_REGIONS) -> bool:
    if kind == "email":
        return email_ok(text)
    if kind == "card":
        return card_ok(text)
    if kind == "ssn":
        return us_ssn.is_valid(text.replace(" ", "-"))
    if kind == "iban":
        return iban_end(text) > 0
    if kind == "phone":
        return phone_ok(text, regions)
    return True


# Code metadata that names people by their address, as the files write it. On the email's own line,
# from its start: a commit trailer (``Signed-off-by: Jane <jane@...>``), or a key that holds a
# package's authors (``authors = [...]`` in pyproject.toml and Cargo.toml, ``"author":`` in
# package.json, ``author_email=`` in setup.py, ``spec.email =`` in a gemspec).
_METADATA_LINE = re.compile(
    r"(?i)[ \t]*(?:(?:signed-off|co-authored|reviewed|acked|reported|tested|suggested|helped)-by:"
    r"|[-*]?[ \t]*[\"']?(?:authors?|maintainers?|contributors?|author_email|maintainer_email)[\"']?[ \t]*[:=]"
    r"|(?:spec|s|gem)\.(?:email|authors)[ \t]*=)")
# Or inside a list or table such a key opens on an earlier line and has not closed yet (a
# multi-line ``authors = [`` ... ``{name = "Jane", email = "jane@..."}``).
_METADATA_OPEN = re.compile(r"(?i)[\"']?(?:authors|maintainers|contributors|author)[\"']?[ \t]*[:=][ \t]*([\[{])")
_METADATA_REACH = 512
"""How far back an opening ``authors = [`` counts (a long authors list; it bounds the search)."""


def in_code_metadata(text: str, start: int) -> bool:
    """Whether the email at ``start`` is a package's author or a commit trailer's (``_METADATA_LINE``,
    ``_METADATA_OPEN``); reads at most ``_METADATA_REACH`` characters before it."""
    low = max(0, start - _METADATA_REACH)
    line = text.rfind("\n", low, start) + 1
    if (line > 0 or low == 0) and _METADATA_LINE.match(text, line, start):
        return True
    opened = None
    for opened in _METADATA_OPEN.finditer(text, low, start):
        pass
    if opened is None:
        return False
    close = "]" if opened.group(1) == "[" else "}"
    return close not in text[opened.end():start]


class PiiCheck(DeltaCheck):
    """Per-stream state: one tail scanner over the selected categories' alternation."""

    __slots__ = ("_horizon", "_provider", "_scanner", "window")
    sees_visible_text = True  # invisible characters inside a match hide nothing from the reader

    def __init__(self, provider: PiiProvider) -> None:
        self.window = PII_WINDOW
        self._provider = provider
        self._scanner = TailScanner(provider.pattern, PII_WINDOW, slack=PII_SLACK, anchors=provider.anchors)
        self._horizon = provider.horizon_parts.arm()

    def check(self, accumulated: str, delta: str) -> Decision:
        return self._next(accumulated, final=False)

    def finish(self, accumulated: str) -> Decision:
        """One decision per call, like ``check``: call again until ``Pass`` when redacting."""
        return self._next(accumulated, final=True)

    def horizon(self, accumulated: str) -> int:
        return self._horizon.value

    def _next(self, text: str, *, final: bool) -> Decision:
        provider, scanner = self._provider, self._scanner
        while True:
            floor = scanner.floor
            match = scanner.next(text, final=final)
            if match is None:
                break
            if not final and match.start() >= floor and len(text) - floor < self.window:
                # A match may still begin before this one, or at its start and run on past it, once
                # more text arrives (digits read as a card now may turn out to open an email:
                # ``5500-0000-0000-0004-alice@corp.io``): the text as a whole would be read from
                # there, so wait for it, as for a match not settled yet.
                # Only from where a match may begin: at most its anchor's reach before an anchor
                # found, or a lead's width before the end (an anchor not complete yet).
                anchors = scanner.found
                reach = len(text) - provider.horizon_parts.tail_reach
                low = min(min(anchors.values()), reach) if anchors else reach
                earlier = provider.earliest_viable(text, max(floor, low), match.start())
                if earlier >= 0:
                    scanner.defer(floor, earlier)
                    break
            kind, found = match.lastgroup or "", match.group()
            if not provider.before[kind].match(text, match.start()) or found in provider.allow:
                continue
            if kind == "email" and not provider.metadata_emails and in_code_metadata(text, match.start()):
                continue
            end = match.end()
            if not provider.valid(kind, found, text, match.start()):
                # Shapes overlap (nine digits in groups are a phone or a TFN): the same text may be
                # another kind's, which the alternation did not try at this offset.
                other = next((k for k, rx in provider.shapes.items() if k != kind and rx.fullmatch(found)
                              and provider.before[k].match(text, match.start())
                              and provider.valid(k, found, text, match.start())), "")
                if other:
                    kind = other
                elif (end := provider.shorter(kind, text, match.start(), end)) < 0:
                    continue
                else:
                    self._scanner.resume_at(end)  # what follows the shorter reading is scanned again
            elif kind == "iban":
                end = match.start() + iban_end(found)
            if provider.redact:
                return Redact(PII, match.start(), end, MASKS[kind])
            return Block(PII, provider.replacement,
                         f"The answer contained personal data (category: {kind}). Do not repeat "
                         "personal data such as emails, phone numbers, card or account numbers.")
        self._update_horizon(text)
        return PASS

    def _update_horizon(self, text: str) -> None:
        """The horizon after a pass. While the scanner has no anchor and no pending match (nearly
        every delta), a bound from the text's last characters stands in for the lead closure's
        search, which cost about 1 µs per character searched (12 µs a delta on prose). A prefix of a
        lead (``_LEADS``) that holds a digit ends in a digit and at most a few separators; one that
        holds none lies within the trailing run of local-part characters (``_RUN_CHARS``; a NINO's
        ``AB `` after one space is stripped), or is a ``(`` at the very end, or a quoted local part
        from a ``"`` at most 32 characters back. So unless the text ends in a digit and separators
        (a number may have begun before the run, across them) or is not ASCII, where the search
        runs, the horizon is the earliest of those. Never above the search's answer: it only
        holds more, never less (``test_the_quick_horizon_never_passes_the_closures``)."""
        scanner, horizon = self._scanner, self._horizon
        if not (scanner.idle and horizon.idle):
            horizon.update(scanner, text)
            return
        end = len(text)
        tail = text[-_TAIL:]
        stripped = tail[:-1] if tail[-1:] == " " else tail
        if not stripped.isascii():
            horizon.update(scanner, text)
            return
        if stripped.rstrip(_NUMBER_SEPARATORS)[-1:].isdigit():
            horizon.update(scanner, text)
            return
        run = len(stripped) - len(stripped.rstrip(_RUN_CHARS))
        start = end - len(tail) + len(stripped) - run
        if tail[-1:] == "(":
            start = end - 1
        quote = tail.rfind('"')
        if quote >= 0:
            if quote == len(tail) - 1:  # a closing quote, or an opening one: the one before it may open
                before = tail.rfind('"', 0, quote)
                if before >= 0 and before >= quote - _QUOTED - 1:
                    quote = before
            if quote >= len(tail) - _QUOTED - 2:
                start = min(start, end - len(tail) + quote)
        horizon.value = max(start, scanner.floor, horizon.value)


class PiiProvider:
    """The ``pii`` stream guardrail; the alternation of the chosen categories is compiled once."""

    sees_visible_text = PiiCheck.sees_visible_text  # (its whole-text form reads what the check reads)

    def __init__(self, spec: PiiGuardrail, replacement: str) -> None:
        unknown = set(spec.categories) - CATEGORIES
        if unknown:
            raise ValueError(f"guardrail {spec.id!r}: unknown pii categories {sorted(unknown)}; "
                             f"known: {sorted(CATEGORIES)}")
        regions = tuple(r.upper() for r in spec.regions)
        bad = set(regions) - set(_ANY_REGION)
        if bad:
            raise ValueError(f"guardrail {spec.id!r}: unknown regions {sorted(bad)} (ISO 3166 codes)")
        self.regions = regions or DEFAULT_REGIONS
        patterns = {k: rx for k, rx in _PATTERNS.items() if not spec.categories or k in spec.categories}
        anchors = [_ANCHORS[k] for k in patterns]
        ids = [nid for r in regions for nid in NATIONAL_IDS.get(r, ())]
        if ids and (not spec.categories or "national_id" in spec.categories):
            national = r"(?<![\w.-])(?:" + "|".join(f"(?:{n.regex})" for n in ids) + ")" + _NUM_END
            # Before the phone forms, which would take most grouped ids first.
            patterns = {k: rx for k, rx in [*patterns.items(), ("national_id", national)]
                        if k != "phone"} | ({"phone": patterns["phone"]} if "phone" in patterns else {})
            anchors += [_DIGITS, *(n.anchor for n in ids if n.anchor)]
        self._ids: list[tuple[re.Pattern[str], Callable[[str], bool]]] = [
            (re.compile(n.regex), validator(n.validator)) for n in ids]
        self.id = spec.id
        # Leading lookbehinds are tested after the scan: see ``split_lookbehinds`` for why.
        parts = {k: split_lookbehinds(rx) for k, rx in patterns.items()}
        self.pattern = re.compile("|".join(f"(?P<{k}>{rest})" for k, (_, rest) in parts.items()))
        self.before = {k: re.compile(lb) for k, (lb, _) in parts.items()}
        self.shapes = {k: re.compile(rest) for k, (_, rest) in parts.items()}
        self.anchors = Anchors(anchors, quick=_ANCHOR_ENDS)
        leads = sorted({_LEADS[_LEAD_OF[k]] for k in patterns})
        self.closure = Closure(self.pattern.pattern)
        """Where the text could still grow into a match (``PiiCheck`` and the horizon)."""
        self.horizon_parts = HorizonParts(self.closure, Closure("|".join(leads)),
                                          max(widest(lead) for lead in leads))
        self.allow = frozenset(spec.allow)
        self.redact = spec.action == "redact"
        self.metadata_emails = spec.metadata_emails
        self.example_emails = spec.example_emails
        if "email" in patterns:
            public_suffixes()  # loaded here, with the policy (about 0.5 s), not by the first stream that holds an "@"
        self.replacement = replacement

    def earliest_viable(self, text: str, low: int, high: int) -> int:
        """The first offset in ``[low, high]`` from which the text could still grow into a match,
        or -1: ``closure.search`` from ``low`` would try every offset up to the end of the text
        (each one a pass of the whole prefix closure, the match's own digits the dearest), where
        only those up to ``high`` count. A few offsets are tried one by one; a longer span takes
        the search."""
        if high < low:
            return -1
        if high - low > _VIABLE_TRIES:
            earlier = self.closure.search(text, low)
            return earlier if earlier <= high else -1
        viable = self.closure.viable
        for at in range(low, high + 1):
            if viable(text, at):
                return at
        return -1

    def shorter(self, kind: str, text: str, start: int, end: int) -> int:
        """The end of the longest valid shorter reading of an invalid ``kind`` match
        ``text[start:end]``, or -1. A number's grammar can run on through what is really a second
        number (``+1 415 555 0100)415-555-0100`` reads as one invalid phone): read one character at a
        time, as a stream may be, the first would have been taken, settled before the rest arrived.
        So the whole text finds what its chunks do. At most ``_SHORTER_TRIES`` readings are
        validated (longest first), which bounds the cost of a long run of digits."""
        ends = _ENDS.get(kind)
        if ends is None:
            return -1
        shape, tries = self.shapes[kind], 0
        for cut in range(end - 1, start + _SHORTEST_NUMBER - 1, -1):
            if not text[cut - 1].isdigit() or ends.match(text, cut) is None \
                    or shape.fullmatch(text, start, cut) is None:
                continue
            if self.valid(kind, text[start:cut]):
                return cut
            tries += 1
            if tries == _SHORTER_TRIES:
                break
        return -1

    def valid(self, kind: str, found: str, text: str = "", start: int = 0) -> bool:
        """Whether ``found`` (at ``start`` of ``text``, whose line before it names what follows) is
        a ``kind``. Nine digits in a row are an SSN only after a word that names one (``SSN:``,
        ``social security number``): elsewhere they are any number."""
        if kind == "ssn" and found.isdigit():
            named = _SSN_NAMED.search(text, max(0, start - _SSN_NAME_REACH), start)
            if named is None or "\n" in text[named.start():start]:
                return False
        return self._valid(kind, found)

    def _valid(self, kind: str, text: str) -> bool:
        if kind == "national_id":
            return not compact_date(text) and any(shape.fullmatch(text) and check(text) for shape, check in self._ids)
        if kind == "email":
            return email_ok(text, examples=self.example_emails)
        return _valid(kind, text, self.regions)

    def arm(self, ctx: StreamContext) -> DeltaCheck | None:
        return PiiCheck(self)

    def passes_whole(self, ctx: StreamContext, pieces: Sequence[str]) -> bool:
        """``PiiCheck``'s verdict over a complete text (``PassesWhole``): no anchor anywhere in it (no
        "@", no four close digits, no IBAN start). Every match holds the text of an anchor, which
        reads no character outside it, so a text without one holds no match in any of its prefixes."""
        text = pieces[0] if len(pieces) == 1 else "".join(pieces)
        quick = self.anchors.quick
        return (quick is not None and quick.search(text) is None) or self.anchors.pattern.search(text) is None
