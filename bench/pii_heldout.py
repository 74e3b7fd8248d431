"""A held-out PII evaluation: samples generated from the libraries' own rules, not from our regexes.

Run: ``.venv/bin/python -m bench.pii_heldout [--per-region N] [--seed S]``. Not part of ``make test``.
``bench.detect_eval`` scores the documented examples the detectors were written against; this
draws new ones that no rule was tuned on, and a different seed draws a different set:

- national ids: random numbers built from each id's documented structure (birth dates, sex and
  century digits, area and serial parts; ``ID_SHAPES`` below, written from python-stdnum's module
  docs), kept only when that region's ``python-stdnum`` validator accepts them, then written as
  stdnum's ``format()`` writes them (where it has one) and in compact form, in a sentence, with
  the region armed;
- phones: libphonenumber's example number of *every* number type (fixed line, mobile, toll free,
  premium rate, shared cost, VoIP, personal, pager, UAN, voicemail) of every region, in its E.164,
  international, national and RFC 3966 (``tel:``) forms, the national form with its region armed;
- near misses drawn at random: version strings, dates in the common orders and separators,
  times, IPv4 and IPv6 addresses, hex digests, UUIDs and URL credentials, with every region
  armed; each hit on one is a false positive.

Writes ``bench/results/pii_heldout.json`` (figures, and up to 10 misses per kind).
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import json
import random
import string
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path

import phonenumbers
from phonenumbers import PhoneNumberFormat, PhoneNumberType

from bench.detect_eval import pii_hits
from bench.pii_labelled import Sample, redactions
from guardrails.stream.pii_regions import NATIONAL_IDS

RESULTS = Path(__file__).parent / "results" / "pii_heldout.json"
EVERY_REGION = [*sorted(NATIONAL_IDS), "US", "GB"]

# Each id's structure as documented (python-stdnum's module docs and the sources they cite):
# ``D`` a digit, ``N`` a digit 1-9, ``L`` an upper-case letter, ``{...}`` a date part of a
# random birth date (``yy``, ``yyyy``, ``mm``, ``dd``), ``[...]`` one character of the set. The
# check digits are left random: the validator keeps the one draw in 10-100 that is right.
ID_SHAPES: dict[str, str] = {
    "stdnum.de.idnr": "NDDDDDDDDDD",
    "stdnum.fr.nir": "[12]{yy}{mm}[0-9][1-9]DDDDDDDD",
    "stdnum.es.dni": "DDDDDDDDL",
    "stdnum.es.nie": "[XYZ]DDDDDDDL",
    "stdnum.it.codicefiscale": "LLLLLL{yy}[ABCDEHLMPRST]{dd}[A-M]DDDL",
    "stdnum.nl.bsn": "NDDDDDDDD",
    "stdnum.be.nn": "{yy}{mm}{dd}DDDDD",
    "stdnum.se.personnummer": "{yy}{mm}{dd}-DDDD",
    "stdnum.dk.cpr": "{dd}{mm}{yy}DDDD",
    "stdnum.fi.hetu": "{dd}{mm}{yy}[-A]DDD[0-9A-Y]",
    "stdnum.no.fodselsnummer": "{dd}{mm}{yy}DDDDD",
    "stdnum.pl.pesel": "{yy}{mm}{dd}DDDDD",
    "stdnum.pt.cc": "DDDDDDDDD[A-Z][A-Z]D",
    "stdnum.ch.ssn": "756DDDDDDDDDD",
    "stdnum.ie.pps": "DDDDDDD[A-W][AHW]?",
    "stdnum.br.cpf": "NDDDDDDDDDD",
    "stdnum.mx.curp": "LLLL{yy}{mm}{dd}[HM][ABCDGHJMNOPQSTVYZ][A-Z]LLL[0-9A]D",
    "stdnum.ca.sin": "[1-79]DDDDDDDD",
    "stdnum.au.tfn": "NDDDDDDDD",
    "stdnum.in_.aadhaar": "[2-9]DDDDDDDDDDD",
    "stdnum.cn.ric": "[1-6][1-5]0[1-3]0[1-4]{yyyy}{mm}{dd}DDD[0-9X]",
    "stdnum.kr.rrn": "{yy}{mm}{dd}[1-4]DDDDDD",
    "stdnum.jp.in_": "NDDDDDDDDDDD",
    "stdnum.za.idnr": "{yy}{mm}{dd}DDDD[01]8D",
    "stdnum.tr.tckimlik": "NDDDDDDDDDD",
    "stdnum.il.idnr": "DDDDDDDDD",
}
_SETS = {"D": string.digits, "N": "123456789", "L": string.ascii_uppercase}


def _expand(charset: str) -> str:
    out, i = "", 0
    while i < len(charset):
        if i + 2 < len(charset) and charset[i + 1] == "-":
            out += "".join(chr(c) for c in range(ord(charset[i]), ord(charset[i + 2]) + 1))
            i += 3
        else:
            out += charset[i]
            i += 1
    return out


def draw(shape: str, rng: random.Random) -> str:
    born = datetime.date(1940, 1, 1) + datetime.timedelta(days=rng.randrange(365 * 60))
    parts = {"yy": f"{born.year % 100:02d}", "yyyy": str(born.year), "mm": f"{born.month:02d}",
             "dd": f"{born.day:02d}"}
    out, i = [], 0
    while i < len(shape):
        ch = shape[i]
        if ch == "{":
            end = shape.index("}", i)
            out.append(parts[shape[i + 1:end]])
            i = end + 1
        elif ch == "[":
            end = shape.index("]", i)
            optional = shape[end + 1:end + 2] == "?"
            if not optional or rng.random() < 0.5:
                out.append(rng.choice(_expand(shape[i + 1:end])))
            i = end + 1 + optional
        else:
            out.append(rng.choice(_SETS[ch]) if ch in _SETS else ch)
            i += 1
    return "".join(out)


def _valid(is_valid: Callable[[str], bool], candidate: str) -> bool:
    try:
        return is_valid(candidate)
    except (KeyError, ValueError, IndexError):  # stdnum 2.2's cn.ric raises on some area codes
        return False


def national_ids(per_region: int, rng: random.Random) -> Iterator[tuple[str, str, str]]:
    """``(region, form, text)``: valid ids drawn from their structure, in stdnum's format and compact."""
    for region, ids in NATIONAL_IDS.items():
        for nid in ids:
            module = importlib.import_module(nid.validator)
            shape, found, tries = ID_SHAPES[nid.validator], 0, 0
            while found < per_region // len(ids) and tries < 200_000:
                tries += 1
                candidate = draw(shape, rng)
                if not _valid(module.is_valid, candidate):
                    continue
                found += 1
                compact = module.compact(candidate)
                yield region, "compact", compact
                formatter: Callable[[str], str] | None = getattr(module, "format", None)
                if formatter is not None and formatter(compact) != compact:
                    yield region, "stdnum format", formatter(compact)


PHONE_TYPES = [t for t in vars(PhoneNumberType).values() if isinstance(t, int) and t not in (
    PhoneNumberType.FIXED_LINE_OR_MOBILE, PhoneNumberType.UNKNOWN)]
PHONE_FORMS = {"E.164": PhoneNumberFormat.E164, "international": PhoneNumberFormat.INTERNATIONAL,
               "national": PhoneNumberFormat.NATIONAL, "RFC 3966": PhoneNumberFormat.RFC3966}


def phones() -> Iterator[tuple[str, str, str, str]]:
    """``(region, type, form, text)`` for every region's example of every number type."""
    for region in sorted(phonenumbers.SUPPORTED_REGIONS):
        for kind in PHONE_TYPES:
            number = phonenumbers.example_number_for_type(region, kind)
            if number is None:
                continue
            name = {v: k for k, v in vars(PhoneNumberType).items() if isinstance(v, int)}[kind].lower()
            for form, fmt in PHONE_FORMS.items():
                yield region, name, form, phonenumbers.format_number(number, fmt)


def near_misses(rng: random.Random, n: int) -> Iterator[tuple[str, str]]:
    """``(kind, text)``: numbers that are not personal data, drawn at random."""
    def hexs(k: int) -> str:
        return "".join(rng.choice("0123456789abcdef") for _ in range(k))
    for _ in range(n):
        d = datetime.date(1950, 1, 1) + datetime.timedelta(days=rng.randrange(365 * 90))
        t = f"{rng.randrange(24):02d}:{rng.randrange(60):02d}:{rng.randrange(60):02d}"
        yield "version", f"{rng.randrange(30)}.{rng.randrange(100)}.{rng.randrange(1000)}"
        yield "version", f"v{rng.randrange(10)}.{rng.randrange(50)}.{rng.randrange(50)}-rc.{rng.randrange(9)}"
        yield "date", rng.choice([f"{d:%Y-%m-%d}", f"{d:%d/%m/%Y}", f"{d:%m/%d/%Y}", f"{d:%d.%m.%Y}",
                                  f"{d:%Y.%m.%d}", f"{d:%Y/%m/%d}", f"{d:%d-%m-%Y}", f"{d:%Y%m%d}"])
        yield "date", f"{d:%Y-%m-%d}T{t}Z"
        yield "date", f"{d:%d.%m.%Y} {t}"
        yield "ip", ".".join(str(rng.randrange(1, 256)) for _ in range(4))
        yield "ip", ":".join(hexs(4) for _ in range(8))
        yield "ip", f"{rng.randrange(1, 224)}.{rng.randrange(256)}.{rng.randrange(256)}.0/{rng.randrange(8, 31)}"
        yield "hash", hexs(rng.choice([32, 40, 64]))
        yield "hash", f"{hexs(8)}-{hexs(4)}-{hexs(4)}-{hexs(4)}-{hexs(12)}"
        yield "url credentials", (f"{rng.choice(['https', 'postgres', 'redis', 'amqp'])}://"
                                  f"{rng.choice(['svc', 'admin', 'app'])}{rng.randrange(100)}:"
                                  f"{hexs(12)}@{rng.choice(['db', 'cache', 'mq'])}.internal:{rng.randrange(1024, 65536)}/x")


# Top-level domains of every kind (generic, country, new, IDN), written as people write them.
TLDS = ["com", "org", "net", "io", "ai", "dev", "app", "co", "co.uk", "org.uk", "de", "fr", "jp", "com.br",
        "com.au", "edu", "gov", "info", "biz", "xyz", "online", "tech", "museum", "travel", "photography",
        "engineering", "international", "рф", "中国", "xn--p1ai", "in", "ca", "nl", "ch", "se", "es", "it"]
_LOCAL = string.ascii_letters + string.digits
_UNICODE_LETTERS = "éèüößçñåøæłžščąęığşäöõαβγδλμπσωабвгдежзиклмнопрстуфхцчшщэюя中文字用户名例子"


def emails(rng: random.Random, n: int) -> Iterator[tuple[str, str]]:
    """``(form, address)``: addresses drawn from RFC 5321/5322 and RFC 6531 syntax: local parts of
    1-64 characters (dot-separated atoms; ``_ + - '`` inside; sometimes letters of other scripts),
    1-6 domain labels of 1-63 characters (hyphens inside; sometimes IDN), a real top-level domain."""
    def atom(k: int, unicode: bool) -> str:
        alphabet = _LOCAL + (_UNICODE_LETTERS if unicode else "")
        word = [rng.choice(alphabet) for _ in range(k)]
        for i in range(1, k - 1):
            if rng.random() < 0.08:
                word[i] = rng.choice("_+-'")
        return "".join(word)

    def label(unicode: bool) -> str:
        k = rng.choice([1, 2, 3, 5, 8, 12, 20, 40, 63])
        alphabet = string.ascii_lowercase + string.digits + (_UNICODE_LETTERS if unicode else "")
        word = [rng.choice(alphabet) for _ in range(k)]
        for i in range(1, k - 1):
            if rng.random() < 0.1:
                word[i] = "-"
        return "".join(word)

    for i in range(n):
        unicode = i % 5 == 4
        length = rng.choice([1, 3, 6, 10, 20, 40, 64])
        parts, size = [], 0
        while size < length:
            k = min(rng.randint(1, 12), length - size)
            parts.append(atom(k, unicode))
            size += k + 1
        local = ".".join(parts)[:64].strip(".")
        while ".." in local:
            local = local.replace("..", ".")
        if i % 7 == 6:
            local = '"' + local[:20].replace('"', "") + ' ' + atom(4, False) + '"'
        labels = [label(unicode and rng.random() < 0.5) for _ in range(rng.randint(1, 6))]
        domain = ".".join(labels) + "." + rng.choice(TLDS)
        form = "quoted" if local.startswith('"') else "unicode" if unicode else f"{len(labels)} labels"
        if len(domain) <= 253:
            yield form, f"{local}@{domain}"


def evaluate(per_region: int, seed: int) -> dict[str, object]:
    rng = random.Random(seed)
    recall: dict[str, Counter[str]] = defaultdict(Counter)
    missed: dict[str, list[str]] = defaultdict(list)

    def count(kind: str, ok: bool, text: str) -> None:
        recall[kind]["hit" if ok else "miss"] += 1
        if not ok and len(missed[kind]) < 10:
            missed[kind].append(text)

    for region, form, text in national_ids(per_region, rng):
        hit = "[id]" in pii_hits(f"My number is {text}, thanks.", [region], ["national_id"])
        count(f"national_id {region} ({form})", hit, text)
    for region, kind, form, text in phones():
        regions = [region] if form == "national" else []
        count(f"phone {form}", pii_hits(f"Call {text} today.", regions, ["phone"]) == ["[phone]"],
              f"{region} {kind} {text}")
        count(f"phone {kind}", pii_hits(f"Call {text} today.", regions, ["phone"]) == ["[phone]"],
              f"{region} {form} {text}")
    for form, address in emails(rng, 400):
        text = f"Write to {address} today."
        spans = redactions(Sample("email", form, text, [], []))
        count(f"email ({form})", spans == [(9, 9 + len(address), "[email]")], address)
    for _ in range(60):
        number = f"{rng.choice([a for a in range(1, 900) if a != 666]):03d}{rng.randint(1, 99):02d}{rng.randint(1, 9999):04d}"
        for phrase in ("My SSN is {}.", "SSN - {}", "Social-Security-Number: {}", "ssn:{}"):
            text = phrase.format(number)
            start = text.index(number)
            spans = redactions(Sample("ssn", "named", text, [], []))
            count("ssn (nine digits, named)", spans == [(start, start + 9, "[ssn]")], text)
    false_hits: dict[str, list[str]] = defaultdict(list)
    near = Counter[str]()
    for kind, text in near_misses(rng, 200):
        near[kind] += 1
        masks = pii_hits(f"See {text} here.", EVERY_REGION)
        if masks:
            false_hits[kind].append(f"{text} -> {masks}")
    per_kind = {k: round(c["hit"] / (c["hit"] + c["miss"]), 3) for k, c in sorted(recall.items())}
    return {"date": datetime.date.today().isoformat(), "seed": seed, "per_kind": per_kind,
            "samples": {k: sum(c.values()) for k, c in sorted(recall.items())},
            "missed": dict(missed), "near_misses": dict(near),
            "near_miss_hits": {k: len(v) for k, v in false_hits.items()},
            "near_miss_examples": {k: v[:10] for k, v in false_hits.items()}}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--per-region", type=int, default=40)
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()
    report = evaluate(args.per_region, args.seed)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    per_kind = report["per_kind"]
    assert isinstance(per_kind, dict)
    for kind, rate in per_kind.items():
        print(f"{kind:42} {rate:6.3f}  ({report['samples'][kind]})")  # type: ignore[index]
    print("near misses:", report["near_misses"], "hits:", report["near_miss_hits"])
    for kind, examples in report["near_miss_examples"].items():  # type: ignore[attr-defined]
        print(" ", kind, examples[:5])


if __name__ == "__main__":
    main()
