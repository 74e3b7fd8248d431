"""Our own labelled PII set: per-kind precision and recall, and whether the stream agrees with the whole.

Run: ``.venv/bin/python -m bench.pii_labelled`` (scores ``tests/data/pii_labelled.jsonl``; prints a
per-kind table, the false positives per near-miss family and the misses); ``--write`` draws the set
again from its rules (seeded: the same file every time) before scoring it. Not part of ``make test``;
``tests/checks/test_pii_labelled.py`` holds the same figures to 95% per kind and checks that every
split of every sample into deltas redacts what the whole text does.

What is in it (each sample is a short text in one of several settings: prose, JSON, a Markdown
table, HTML, a CSV row, code), every span labelled with the mask it must get:

- emails: ordinary, dotted, plus-tagged, long (to 64 characters) and quoted local parts, an
  apostrophe, IDN local parts and domains (Unicode and punycode), 1 to 6 domain labels, new gTLDs;
- phones: valid numbers of the default regions (US GB FR DE) in E.164, international and national
  form and the ways people write them (``415.555.0132``, ``+44 (0)20 ...``, ``030/1234567``), and
  ``+<cc>`` numbers of 20 other regions;
- cards: every network's lengths (13-19 digits), Luhn-valid, bare and grouped with spaces, dashes
  and dots as each network prints them (4-4-4-4, Amex 4-6-5, Diners 4-6-4, 19 digits 4-4-4-4-3);
- US SSNs with dashes or spaces anywhere, and without separators after a word that names them;
  UK NINOs; IBANs; national ids of FR (NIR) and DE (IdNr) with those regions armed, and a few
  of other regions with theirs, drawn as ``bench.pii_heldout`` draws them;
- near misses, none of which is personal data: versions, OIDs, dates and timestamps, UUIDs and their
  pieces, hex, IPs, order and invoice numbers, ISBNs, prices, code literals, SSN-shaped examples
  the SSA never issues, URL credentials, ``git@host:path``, ``icon@2x.png``, reserved example
  domains and emails in the pattern of a test. They are scored with US GB FR DE armed.
"""

from __future__ import annotations

import argparse
import json
import random
import string
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import phonenumbers
from phonenumbers import PhoneNumberFormat, PhoneNumberType

from config.policy import PiiGuardrail
from guardrails.decision import Redact
from guardrails.seams import StreamContext
from guardrails.stream.pii import MASKS, PiiProvider

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "pii_labelled.jsonl"
REGIONS = ["US", "GB", "FR", "DE"]
"""Armed for every sample that names none: the default phone regions, and FR's and DE's ids."""
KINDS = list(MASKS)
_KIND_OF_MASK = {mask: kind for kind, mask in MASKS.items()}
CTX = StreamContext(system_prompt="")

SETTINGS = [
    "Contact: {v}.",
    "You can reach Jane at {v} tomorrow.",
    '{{"name": "Jane Roe", "value": "{v}"}}',
    "| Jane Roe | {v} | active |",
    "- {v}\n",
    "(see {v})",
    "<td>{v}</td>",
    "Jane Roe,{v},2024\n",
    "    contact = '{v}'\n",
    "Her details: {v}; please keep them private.",
]


@dataclass
class Sample:
    kind: str
    """The kind of its spans (``email``... ``national_id``), or ``negative``."""
    tag: str
    """The form or near-miss family (``idn``, ``amex 4-6-5``, ``version``...)."""
    text: str
    spans: list[tuple[int, int, str]] = field(default_factory=list)
    regions: list[str] | None = None

    def to_json(self) -> str:
        row: dict[str, object] = {"kind": self.kind, "tag": self.tag, "text": self.text,
                                  "spans": [list(s) for s in self.spans]}
        if self.regions is not None:
            row["regions"] = self.regions
        return json.dumps(row, ensure_ascii=False)

    @classmethod
    def from_json(cls, line: str) -> Sample:
        row = json.loads(line)
        return cls(row["kind"], row["tag"], row["text"], [tuple(s) for s in row["spans"]], row.get("regions"))


def placed(kind: str, tag: str, value: str, setting: str, regions: list[str] | None = None) -> Sample:
    before, _, after = setting.partition("{v}")
    before, after = before.replace("{{", "{").replace("}}", "}"), after.replace("{{", "{").replace("}}", "}")
    text = before + value + after
    return Sample(kind, tag, text, [(len(before), len(before) + len(value), MASKS[kind])], regions)


# --- positives ----------------------------------------------------------------------------------

LOCALS = {
    "plain": ["jane", "rkumar", "mwilliams", "ana", "li.wei"],
    "dotted": ["jane.roe", "j.r.roe", "first.middle.last", "anna.maria.schmidt"],
    "plus": ["jane+billing", "bob+news.2024", "j.roe+github", "ops+alerts"],
    "symbols": ["jane_roe", "jane-roe", "roe_j-42", "o'brien", "jane.o'neil", "JANE.ROE", "J.Roe"],
    "digits": ["jroe1987", "2fast4you", "user42", "x9"],
    "long": ["a.very.long.local.part.that.goes.on.and.on.for.ever.and.ever.xyz",
             "firstname.middlename.lastname.department.team.location",
             "jane.roe.marketing.emea.region.north.office.quarterly"],
    "quoted": ['"jane roe"', '"jane..roe"', '"j.roe@home"'],
    "idn local": ["josé.garcía", "müller", "françois", "用户", "пользователь", "δοκιμή", "søren.kierkegård"],
}
DOMAINS = {
    "one label": ["corp-mail.net", "acme.io", "startup.ai", "fastmail.fm", "proton.me", "gmail.com"],
    "country": ["acme.co.uk", "uni-heidelberg.de", "sorbonne.fr", "anu.edu.au", "bank.com.br"],
    "many labels": ["mail.eu.west.corp-mail.com", "cs.stanford.edu", "a.b.c.d.corp.io",
                    "dept.faculty.uni-heidelberg.de", "mx1.eu-central-1.mail.acme-cloud.net",
                    "it.ops.emea.north.corp-mail.co.uk"],
    "new gtld": ["acme.engineering", "studio.photography", "corp.technology", "team.dev", "shop.store"],
    "long label": ["this-is-a-very-long-company-name-with-many-words-in-it.com"],
    "idn": ["bücher.de", "例え.jp", "пример.рф", "münchen.de", "xn--bcher-kva.de", "例子.中国", "δοκιμή.gr"],
}


def emails(rng: random.Random) -> Iterator[Sample]:
    for tag, locals_ in LOCALS.items():
        for local in locals_:
            domain = rng.choice(DOMAINS["one label"] + DOMAINS["country"])
            yield placed("email", tag, f"{local}@{domain}", rng.choice(SETTINGS))
    for tag, domains in DOMAINS.items():
        for domain in domains:
            local = rng.choice(LOCALS["plain"] + LOCALS["dotted"])
            yield placed("email", tag, f"{local}@{domain}", rng.choice(SETTINGS))
    for setting in ["<{v}>", "Jane Roe <{v}>", "mailto:{v}", "[write to Jane](mailto:{v})",
                    "email: {v}\n", "From: Jane Roe <{v}>\n", "cc {v}, bcc someone", "{v}"]:
        yield placed("email", "setting", f"{rng.choice(LOCALS['dotted'])}@{rng.choice(DOMAINS['country'])}",
                     setting)


def _valid_variants(region: str, kind: int, rng: random.Random, n: int) -> Iterator[phonenumbers.PhoneNumber]:
    example = phonenumbers.example_number_for_type(region, kind)
    if example is None:
        return
    national = str(example.national_number)
    found = 0
    for _ in range(200):
        digits = national[:-4] + "".join(rng.choice(string.digits) for _ in range(4))
        number = phonenumbers.parse("+" + str(example.country_code) + digits)
        if phonenumbers.is_valid_number(number):
            yield number
            found += 1
            if found == n:
                return


_PEOPLE = {  # region -> (tag, rewrite of the national form) the way people there also write it
    "US": [("dashes", lambda n: n.replace("(", "").replace(") ", "-")),
           ("dots", lambda n: n.replace("(", "").replace(") ", ".").replace("-", ".")),
           ("spaces", lambda n: n.replace("(", "").replace(")", "").replace("-", " ")),
           ("1-dashes", lambda n: "1-" + n.replace("(", "").replace(") ", "-"))],
    "GB": [("+44 (0)", lambda n: "+44 (0)" + n[1:])],
    "FR": [("dots", lambda n: n.replace(" ", ".")), ("+33 (0)", lambda n: "+33 (0)" + n[1:])],
    "DE": [("slash", lambda n: n.replace(" ", "/", 1)), ("dash", lambda n: n.replace(" ", "-", 1)),
           ("+49 (0)", lambda n: "+49 (0)" + n[1:])],
}
OTHER_REGIONS = ["JP", "BR", "IN", "AU", "ES", "IT", "NL", "CN", "MX", "ZA", "KR", "NG", "SE", "PL",
                 "CH", "IE", "CA", "SG", "AR", "EG"]


def phones(rng: random.Random) -> Iterator[Sample]:
    for region in REGIONS:
        for kind in (PhoneNumberType.MOBILE, PhoneNumberType.FIXED_LINE, PhoneNumberType.TOLL_FREE):
            for number in _valid_variants(region, kind, rng, 2):
                national = phonenumbers.format_number(number, PhoneNumberFormat.NATIONAL)
                forms = [("E.164", phonenumbers.format_number(number, PhoneNumberFormat.E164)),
                         ("international", phonenumbers.format_number(number, PhoneNumberFormat.INTERNATIONAL)),
                         ("national", national)]
                forms += [(tag, rewrite(national)) for tag, rewrite in _PEOPLE[region]]
                for tag, text in forms:
                    yield placed("phone", f"{region} {tag}", text, rng.choice(SETTINGS))
    for region in OTHER_REGIONS:
        for number in _valid_variants(region, PhoneNumberType.MOBILE, rng, 1):
            for tag, fmt in (("E.164", PhoneNumberFormat.E164), ("international", PhoneNumberFormat.INTERNATIONAL)):
                yield placed("phone", f"other {tag}", phonenumbers.format_number(number, fmt), rng.choice(SETTINGS))


def luhn_complete(prefix: str, length: int, rng: random.Random) -> str:
    body = prefix + "".join(rng.choice(string.digits) for _ in range(length - len(prefix) - 1))
    total = 0
    for i, ch in enumerate(reversed(body)):
        d = int(ch) * (1 if i % 2 else 2)
        total += d - 9 if d > 9 else d
    return body + str((10 - total % 10) % 10)


CARD_NETWORKS = [  # (network, prefixes, length, grouping)
    ("visa", ["4"], 16, (4, 4, 4, 4)), ("visa 13", ["4"], 13, (4, 4, 5)), ("visa 19", ["4"], 19, (4, 4, 4, 4, 3)),
    ("mastercard", ["51", "53", "55", "2221", "2720"], 16, (4, 4, 4, 4)),
    ("amex", ["34", "37"], 15, (4, 6, 5)), ("discover", ["6011", "65", "644"], 16, (4, 4, 4, 4)),
    ("diners", ["36", "300", "305"], 14, (4, 6, 4)), ("jcb", ["3528", "3589"], 16, (4, 4, 4, 4)),
    ("unionpay", ["62"], 16, (4, 4, 4, 4)), ("unionpay 19", ["62"], 19, (4, 4, 4, 4, 3)),
    ("maestro", ["6759", "5018"], 16, (4, 4, 4, 4)),
]


def cards(rng: random.Random) -> Iterator[Sample]:
    for network, prefixes, length, grouping in CARD_NETWORKS:
        for sep in ("", " ", "-", "."):
            if sep == "." and network not in ("visa", "mastercard", "discover"):
                continue
            card = luhn_complete(rng.choice(prefixes), length, rng)
            groups, i = [], 0
            for size in grouping:
                groups.append(card[i:i + size])
                i += size
            yield placed("card", f"{network} {sep or 'none'!s}".strip(), sep.join(groups), rng.choice(SETTINGS))


def ssn_number(rng: random.Random) -> str:
    area = rng.choice([a for a in range(1, 900) if a != 666])
    return f"{area:03d}{rng.randint(1, 99):02d}{rng.randint(1, 9999):04d}"


SSN_CONTEXTS = ["SSN: {v}", "SSN {v}", "Social Security Number {v}", "social security no. {v}",
                "ssn={v}\n", '"ssn": "{v}"', "Jane's SSN is {v}.", "| Jane Roe | SSN | {v} |", "SSN#{v}",
                "social security number: {v}"]


def ssns(rng: random.Random) -> Iterator[Sample]:
    for _ in range(10):
        n = ssn_number(rng)
        yield placed("ssn", "dashes", f"{n[:3]}-{n[3:5]}-{n[5:]}", rng.choice(SETTINGS))
    for _ in range(6):
        n = ssn_number(rng)
        yield placed("ssn", "spaces", f"{n[:3]} {n[3:5]} {n[5:]}", rng.choice(SETTINGS))
    for setting in SSN_CONTEXTS:
        yield placed("ssn", "bare, named", ssn_number(rng), setting)
        n = ssn_number(rng)
        yield placed("ssn", "dashes, named", f"{n[:3]}-{n[3:5]}-{n[5:]}", setting)


NINO_FIRST, NINO_SECOND = "ABCEGHJKLMNOPRSTWXYZ", "ABCEGHJKLMNPRSTWXYZ"


def ninos(rng: random.Random) -> Iterator[Sample]:
    for i in range(24):
        while (prefix := rng.choice(NINO_FIRST) + rng.choice(NINO_SECOND)) in ("BG", "GB", "NK", "KN", "TN", "NT", "ZZ"):
            pass
        digits = "".join(rng.choice(string.digits) for _ in range(6))
        suffix = rng.choice("ABCD")
        if i % 3 == 0:
            value, tag = f"{prefix} {digits[:2]} {digits[2:4]} {digits[4:]} {suffix}", "spaced"
        elif i % 3 == 1:
            value, tag = f"{prefix}{digits}{suffix}", "compact"
        else:
            value, tag = f"{prefix}{digits}{suffix}".lower(), "lowercase"
        yield placed("uk_nino", tag, value, rng.choice(SETTINGS + ["NI number {v}", "National Insurance: {v}"]))


IBAN_BASES = {"DE": "370400440532013000", "FR": "20041010050500013M02606", "GB": "NWBK60161331926819",
              "NL": "ABNA0417164300", "BE": "539007547034", "ES": "21000418450200051332",
              "IT": "X0542811101000000123456", "CH": "00762011623852957", "AT": "1904300234573201",
              "PL": "109010140000071219812874", "SE": "50000000058398257466", "IE": "AIBK93115212345678"}


def ibans(rng: random.Random) -> Iterator[Sample]:
    from stdnum import iban as stdnum_iban
    for country, base in IBAN_BASES.items():
        iban = country + stdnum_iban.calc_check_digits(country + "00" + base) + base
        spaced = " ".join(iban[i:i + 4] for i in range(0, len(iban), 4))
        for tag, value in (("compact", iban), ("spaced", spaced)):
            yield placed("iban", tag, value, rng.choice(SETTINGS))


def national_ids(rng: random.Random) -> Iterator[Sample]:
    import importlib

    from bench.pii_heldout import ID_SHAPES, _valid, draw
    from guardrails.stream.pii_regions import NATIONAL_IDS
    plan = {"FR": 12, "DE": 12, "ES": 2, "IT": 2, "NL": 2, "BE": 2, "SE": 2, "PL": 2, "CA": 2, "BR": 2, "IN": 2}
    for region, count in plan.items():
        for nid in NATIONAL_IDS[region]:
            module = importlib.import_module(nid.validator)
            made = 0
            while made < count:
                candidate = draw(ID_SHAPES[nid.validator], rng)
                if not _valid(module.is_valid, candidate):
                    continue
                made += 1
                compact = module.compact(candidate)
                value, tag = compact, "compact"
                if made % 2 and hasattr(module, "format"):
                    value, tag = module.format(compact), "formatted"
                regions = None if region in REGIONS else [region]
                yield placed("national_id", f"{region} {tag}", value, rng.choice(SETTINGS), regions)


# --- near misses --------------------------------------------------------------------------------

NEAR_MISSES: dict[str, list[str]] = {
    "version": ["version 1.22.3", "v2.10.4-rc.1", "Windows 10.0.19045.3803", "Python 3.11.7", "Node v18.17.1",
                "release 2024.05.1", "build 4.2.0+20240513", "go1.21.5 linux/amd64", "libssl.so.1.1.1w"],
    "oid": ["OID 1.2.840.113549.1.1.11", "oid 2.5.4.3", "1.3.6.1.4.1.311.21.7"],
    "date": ["on 2024-05-13", "13.05.2024", "05/13/2024", "2024/05/13", "13-05-2024", "Mon, 13 May 2024",
             "since 1999-12-31", "born 1985-07-30"],
    "timestamp": ["2024-05-13T10:20:31.123Z", "ts=1700000000", "1700000000123 ms", "at 20240513102031",
                  "13/05/2024 10:20:31", "08.11.1978 04:29:57", "logged 2019-03-04 10:20:30,442",
                  "1715595631123456789 ns", "Date: 2024-05-13 10:20:31 +0200"],
    "uuid": ["550e8400-e29b-41d4-a716-446655440000", "id 446655440000", "request 41d4-a716-4466",
             "trace 4bf92f3577b34da6a3ce929d0e0e4736", "span 00f067aa0ba902b7",
             "c0a80164-0000-1000-8000-00805f9b34fb"],
    "hex": ["0x7fffffff", "0xdeadbeef", "3f786850e387550fdab836ed7e6dc881de23001b", "#ff00ff", "0x1234567890",
            "mask 0xFFFF0000", "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"],
    "ip": ["192.168.100.200", "10.0.0.1:8080", "2001:db8::1", "fe80::1ff:fe23:4567:890a", "172.16.0.0/12",
           "listen 0.0.0.0:5432", "255.255.255.0"],
    "order": ["Order ORD-2024-000123 shipped", "order #1002345 shipped", "Invoice INV-48213-A",
              "PO 4500012345", "Amazon order 112-7654321-1234567", "ticket JIRA-12345", "PR #12345",
              "tracking 1Z999AA10123456784", "case 00123456", "SKU 8806090572210", "ref 2024/000123/7"],
    "isbn": ["ISBN 978-3-16-148410-0", "ISBN 0-306-40615-2", "ISBN 9780306406157", "DOI 10.1000/182",
             "arXiv:2106.09685"],
    "money": ["$12,345.67", "EUR 1.234.567,89", "1,234,567 users", "£3,400,000", "+5 points", "+1 vote",
              "-12.5%", "+44 more comments"],
    "code literal": ["x = 1e-9", "n = 1_000_000", "MAX = 2147483647", "INT64_MAX 9223372036854775807",
                     "arr[1234][5678]", "sleep(86400)", "port=5432", "chmod 0755", "pi 3.14159265358979",
                     "U+1F600", "0b1010_1010", "return 4294967295;", "assert f(12, 34, 56) == 7890",
                     "timeout = 30_000  # ms", "range(10, 20, 30)", "np.zeros((1024, 768, 3))",
                     "ratio 16:9 at 1920x1080", "matrix [[1, 2, 3], [4, 5, 6]]"],
    "geo": ["lat 48.8584, lon 2.2945", "37.7749, -122.4194", "ZIP 94103-1234", "postcode SW1A 1AA",
            "Room 101-B", "page 123-145"],
    "ssn example": ["SSN format XXX-XX-XXXX", "SSN 000-12-3456", "SSN 666-12-3456", "SSN 912-34-5678",
                    "SSN 123-00-4567", "SSN 123-45-0000", "the Woolworth SSN 078-05-1120",
                    r'pattern = r"\d{3}-\d{2}-\d{4}"', "id 123456789 in the db"],
    "nino example": ["NI QQ 12 34 56 C", "BG 12 34 56 A", "GB123456A", "AB 12 34 56 E"],
    "card example": ["card 4111 1111 1111 1112", "ts 4111111111111112", "order 5500 0000 0000 0005",
                     "amex 3782 822463 10006"],
    "url credentials": ["postgres://bob:hunter22@db.internal:5432/app", "https://alice:s3cret@api.corp.io/x",
                        "ftp://anonymous@ftp.gnu.org/gnu/", "redis://:p4ss@cache:6379",
                        "amqp://guest:guest@rabbit:5672/"],
    "not an email": ["git clone git@github.com:org/repo.git", "remote git@gitlab.com:team/app.git",
                     "icon@2x.png", "logo@3x.webp", "npm i lodash@4.17.21", "@types/node@18.0.1",
                     "user@localhost", "@app.route('/users')", "@Override", "foo@bar", "pip install pkg==1.2",
                     "docker pull nginx@sha256:abc123", "jane@example.com", "bob@test.example.org",
                     "someone@foo.test", "admin@host.invalid", "ops@corp.localhost", "cache@v3",
                     "uses: actions/checkout@v4", "image@2x.jpg", "name@domain.tld"],
}


def negatives() -> Iterator[Sample]:
    for tag, texts in NEAR_MISSES.items():
        for i, text in enumerate(texts):
            yield Sample("negative", tag, SETTINGS[i % len(SETTINGS)].replace("{v}", text)
                         .replace("{{", "{").replace("}}", "}"))


def build(seed: int = 32) -> list[Sample]:
    rng = random.Random(seed)
    return [*emails(rng), *phones(rng), *cards(rng), *ssns(rng), *ninos(rng), *ibans(rng), *national_ids(rng),
            *negatives()]


def load(path: Path = DATA) -> list[Sample]:
    return [Sample.from_json(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


# --- scoring ------------------------------------------------------------------------------------

_PROVIDERS: dict[tuple[str, ...], PiiProvider] = {}


def provider(regions: list[str] | None) -> PiiProvider:
    """One provider per set of regions (compiling one costs milliseconds; a provider serves many streams)."""
    key = tuple(REGIONS if regions is None else regions)
    if key not in _PROVIDERS:
        spec = PiiGuardrail(id="pii", kind="pii", action="redact", regions=list(key))  # type: ignore[arg-type]
        _PROVIDERS[key] = PiiProvider(spec, "[withheld]")
    return _PROVIDERS[key]


def redactions(sample: Sample, deltas: list[str] | None = None) -> list[tuple[int, int, str]]:
    """What the ``pii`` check redacts in ``sample`` fed as ``deltas`` (whole when None)."""
    check = provider(sample.regions).arm(CTX)
    assert check is not None
    out: list[tuple[int, int, str]] = []
    acc = ""
    for delta in deltas if deltas is not None else [sample.text]:
        acc += delta
        decision = check.check(acc, delta)
        while isinstance(decision, Redact):
            out.append((decision.start, decision.end, decision.mask))
            decision = check.check(acc, "")
    decision = check.finish(acc)
    while isinstance(decision, Redact):
        out.append((decision.start, decision.end, decision.mask))
        decision = check.finish(acc)
    return out


def random_split(text: str, rng: random.Random) -> list[str]:
    """``text`` in deltas of 1-8 characters (sometimes one at a time)."""
    if rng.random() < 0.2:
        return list(text)
    out, i = [], 0
    while i < len(text):
        n = rng.randint(1, 8)
        out.append(text[i:i + n])
        i += n
    return out


@dataclass
class Score:
    tp: Counter[str] = field(default_factory=Counter)
    fn: Counter[str] = field(default_factory=Counter)
    fp: Counter[str] = field(default_factory=Counter)
    fp_by_family: Counter[str] = field(default_factory=Counter)
    misses: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    false_hits: list[str] = field(default_factory=list)

    def precision(self, kind: str) -> float:
        found = self.tp[kind] + self.fp[kind]
        return self.tp[kind] / found if found else 1.0

    def recall(self, kind: str) -> float:
        want = self.tp[kind] + self.fn[kind]
        return self.tp[kind] / want if want else 1.0


def score(samples: list[Sample]) -> Score:
    out = Score()
    for sample in samples:
        got = set(redactions(sample))
        want = set(sample.spans)
        for span in want:
            kind = _KIND_OF_MASK[span[2]]
            if span in got:
                out.tp[kind] += 1
            else:
                out.fn[kind] += 1
                out.misses[kind].append(f"[{sample.tag}] {sample.text[span[0]:span[1]]!r} -> "
                                        f"{[(sample.text[s:e], m) for s, e, m in sorted(got)]}")
        for span in got - want:
            out.fp[_KIND_OF_MASK[span[2]]] += 1
            out.fp_by_family[sample.tag if sample.kind == "negative" else f"{sample.kind} sample"] += 1
            out.false_hits.append(f"[{sample.tag}] {sample.text[span[0]:span[1]]!r} as {span[2]} in {sample.text!r}")
    return out


def split_disagreements(samples: list[Sample], splits: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    out = []
    for sample in samples:
        whole = redactions(sample)
        for _ in range(splits):
            deltas = random_split(sample.text, rng)
            if redactions(sample, deltas) != whole:
                out.append(f"{sample.text!r} split {deltas}")
                break
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--write", action="store_true", help="draw the set again into " + str(DATA))
    parser.add_argument("--splits", type=int, default=5, help="random splits per sample (stream vs whole)")
    args = parser.parse_args()
    if args.write:
        DATA.write_text("".join(s.to_json() + "\n" for s in build()), encoding="utf-8")
    samples = load()
    result = score(samples)
    print(f"{len(samples)} samples ({sum(s.kind == 'negative' for s in samples)} near misses), regions "
          f"{' '.join(REGIONS)} unless a sample names its own")
    print("| kind | labelled | found | precision | recall |")
    print("|---|---:|---:|---:|---:|")
    for kind in KINDS:
        want = result.tp[kind] + result.fn[kind]
        if want or result.fp[kind]:
            print(f"| {kind} | {want} | {result.tp[kind]} | {result.precision(kind):.1%} | {result.recall(kind):.1%} |")
    families = Counter(s.tag for s in samples if s.kind == "negative")
    print("\nnear misses:", ", ".join(f"{tag} {result.fp_by_family[tag]}/{n}" for tag, n in families.items()))
    for kind, missed in result.misses.items():
        print(f"\nmissed {kind} ({len(missed)}):")
        for line in missed[:15]:
            print("  ", line)
    if result.false_hits:
        print(f"\nfalse positives ({len(result.false_hits)}):")
        for line in result.false_hits[:30]:
            print("  ", line)
    disagree = split_disagreements(samples, args.splits, seed=7)
    print(f"\nstream vs whole: {len(disagree)} of {len(samples)} samples disagree on some split "
          f"({args.splits} random splits each)")
    for line in disagree[:10]:
        print("  ", line)


if __name__ == "__main__":
    main()
