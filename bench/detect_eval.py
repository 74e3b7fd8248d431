"""Recall and false positives of the ``secrets`` and ``pii`` guardrails on labelled public data.

Run: ``.venv/bin/python -m bench.detect_corpus`` once (gathers the samples), then
``.venv/bin/python -m bench.detect_eval [--data DIR] [--benign-mb N]``. Not part of ``make test``.

- Secrets recall per provider family, per source: a sample counts as caught when the armed check
  (every category) blocks it, fed in random 3-8 character deltas as a stream would arrive. Only
  families that the catalog names are held to the target; the rest are reported in one line.
- False positives per MB: the check runs over ordinary code and prose (the sources and docs of
  the installed packages, and this repository's own files), re-armed after each block; every
  hit is written to ``bench/results/detect_fp.txt`` for review.
- PII recall per kind (libphonenumber's example numbers, python-stdnum's documented examples,
  generated cards, IBANs, emails, NINOs) and hits on near misses (versions, dates, IPs, hashes,
  URL credentials), which must be none.

Writes ``bench/results/detect_eval.json`` (with the missed samples; not committed) and
``bench/results/detect_summary.json`` (figures only; committed).
"""

from __future__ import annotations

import argparse
import datetime
import json
import random
import re
import string
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from bench.pii_labelled import luhn_complete
from config.policy import PiiGuardrail, SecretsGuardrail
from guardrails.decision import Block, Redact
from guardrails.seams import DeltaCheck, StreamContext
from guardrails.stream.pii import PiiProvider
from guardrails.stream.pii_regions import NATIONAL_IDS
from guardrails.stream.secret_checks import KNOWN_SAMPLES
from guardrails.stream.secrets import CATEGORIES, SecretsProvider

RESULTS = Path(__file__).parent / "results"
CTX = StreamContext(system_prompt="")
SECRETS = SecretsProvider(SecretsGuardrail(id="s", kind="secrets"), "[x]")
BENIGN_SUFFIXES = (".py", ".md", ".rst", ".txt", ".toml", ".cfg", ".ini", ".yaml", ".yml", ".json", ".html")


def chunks(text: str, seed: int) -> Iterator[str]:
    rng, i = random.Random(seed), 0
    while i < len(text):
        n = rng.randint(3, 8)
        yield text[i:i + n]
        i += n


def blocks(check: DeltaCheck, text: str, seed: int = 0) -> bool:
    acc = ""
    for delta in chunks(text, seed):
        acc += delta
        if isinstance(check.check(acc, delta), Block):
            return True
    return isinstance(check.finish(acc), Block)


# Source names that differ from the catalog's family names.
ALIASES = {"squareoauth": "square", "ibmcloud": "ibm", "softlayer": "ibm", "artifactory": "jfrog", "hashicorpvault": "vault", "hashicorp": "terraform", "privatekey": "private_key",
           "gcp": "gcp", "googleoauth": "google_oauth", "sendinblue": "brevo", "microsoftteams": "teams",
           "flyio": "flyio", "octopusdeploy": "octopus", "definednetworking": "defined_networking",
           "azure": "azure", "microsoft": "azure", "ngrok": "ngrok", "bitbucketapppassword": "bitbucket"}


def family_of(name: str) -> str | None:
    """The catalog family a source's provider name belongs to (``datadogtoken`` -> ``datadog``)."""
    name = name.lower().replace("-", "").replace("_", "")
    for alias, family in ALIASES.items():
        if name.startswith(alias) and family in CATEGORIES:
            return family
    for family in sorted(CATEGORIES, key=len, reverse=True):
        if name.startswith(family.replace("_", "")):
            return family
    return None


def load(path: Path) -> list[dict[str, str]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()] if path.exists() else []


# A sample its own authors marked as not a real key: a word that says so, a run of eight of one
# character (other than "A", which base64 of zero bytes and some formats' padding are made of),
# a counting run, or a published example value (jwt.io's sample token). The randomness test lets these pass on purpose; "realistic" recall leaves
# them out, the raw figure keeps them.
PLACEHOLDER = re.compile(r"(?i:fake|example|dummy|placeholder)|([^A])\1{7}|123456789|(?i:abcdefghij)|"
                         + "|".join(re.escape(s) for s in KNOWN_SAMPLES))


def secrets_recall(rows: list[dict[str, str]], provider: SecretsProvider = SECRETS) -> dict[str, object]:
    caught: dict[str, Counter[str]] = defaultdict(Counter)
    realistic: dict[str, Counter[str]] = defaultdict(Counter)
    missed: dict[str, list[str]] = defaultdict(list)
    for n, row in enumerate(rows):
        if row["label"] != "tp":
            continue
        family = family_of(row["family"]) or "(not in catalog)"
        hit = blocks(provider.arm(CTX), row["text"], n)  # type: ignore[arg-type]
        caught[family]["hit" if hit else "miss"] += 1
        if not PLACEHOLDER.search(row["text"]):
            realistic[family]["hit" if hit else "miss"] += 1
        if not hit:
            missed[family].append(row["text"][:160])
    fps = [row for row in rows if row["label"] == "fp"]
    fp_blocked = [f"{r['family']}: {r['text'][:120]}" for n, r in enumerate(fps)
                  if blocks(provider.arm(CTX), r["text"], n)]  # type: ignore[arg-type]
    per_family = {f: round(c["hit"] / (c["hit"] + c["miss"]), 3) for f, c in sorted(caught.items())}
    per_family_realistic = {f: round(c["hit"] / (c["hit"] + c["miss"]), 3) for f, c in sorted(realistic.items())}
    hits = sum(c["hit"] for c in caught.values())
    return {"per_family": per_family, "per_family_realistic": per_family_realistic,
            "samples": {f: sum(c.values()) for f, c in caught.items()},
            "missed": dict(missed), "labelled_fps": len(fps), "labelled_fps_blocked": fp_blocked,
            "tp_caught": hits, "tp_total": sum(sum(c.values()) for c in caught.values()),
            "catalog_caught": sum(c["hit"] for f, c in caught.items() if f != "(not in catalog)"),
            "catalog_total": sum(sum(c.values()) for f, c in caught.items() if f != "(not in catalog)"),
            "precision": round(hits / max(1, hits + len(fp_blocked)), 3)}


def benign_files(roots: Iterable[Path], limit_bytes: int) -> Iterator[tuple[Path, str]]:
    total = 0
    for root in roots:
        for path in sorted(root.rglob("*")):
            if not path.is_file() or path.suffix not in BENIGN_SUFFIXES or ".git" in path.parts:
                continue
            try:
                text = path.read_text(encoding="utf-8")
            except (UnicodeDecodeError, OSError):
                continue
            total += len(text.encode())
            yield path, text
            if total >= limit_bytes:
                return


def false_positives(roots: list[Path], limit_mb: float) -> dict[str, object]:
    size, hits, log = 0, Counter[str](), []
    for path, text in benign_files(roots, int(limit_mb * 1e6)):
        size += len(text.encode())
        check, acc, base = SECRETS.arm(CTX), "", 0
        for delta in chunks(text, 1):
            acc += delta
            decision = check.check(acc, delta)  # type: ignore[union-attr]
            if isinstance(decision, Block):
                start = check.last_start  # type: ignore[union-attr]
                category = decision.rationale.split("category: ")[1].split(")")[0]
                hits[category] += 1
                log.append(f"{category}\t{path}\t{acc[max(0, start - 40):start + 80]!r}")
                check, acc = SECRETS.arm(CTX), ""  # re-armed after the hit, on the text that follows
                base += 1
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "detect_fp.txt").write_text("\n".join(log) + "\n", encoding="utf-8")
    mb = size / 1e6
    return {"mb": round(mb, 1), "hits": sum(hits.values()), "per_mb": round(sum(hits.values()) / mb, 2),
            "by_category": dict(hits)}


def pii_false_positives(roots: list[Path], limit_mb: float, regions: list[str]) -> dict[str, object]:
    """Redactions per MB of ordinary code and prose, by kind, with ``regions`` armed. Emails are
    counted apart: package metadata holds real addresses, which are personal data."""
    provider = PiiProvider(PiiGuardrail(id="p", kind="pii", action="redact", regions=regions), "[x]")  # type: ignore[arg-type]
    size, hits, log = 0, Counter[str](), []
    for path, text in benign_files(roots, int(limit_mb * 1e6)):
        size += len(text.encode())
        check, acc = provider.arm(CTX), ""
        assert check is not None
        for i in range(0, len(text), 64):
            acc += text[i:i + 64]
            decision = check.check(acc, text[i:i + 64])
            while isinstance(decision, Redact):
                hits[decision.mask] += 1
                log.append(f"pii {decision.mask}\t{path}\t{acc[max(0, decision.start - 30):decision.end + 30]!r}")
                decision = check.check(acc, "")
    with (RESULTS / "detect_fp.txt").open("a", encoding="utf-8") as f:
        f.write("\n".join(log) + "\n")
    mb = size / 1e6
    other = sum(n for mask, n in hits.items() if mask != "[email]")
    return {"mb": round(mb, 1), "regions": regions, "by_mask": dict(hits),
            "non_email_per_mb": round(other / mb, 2)}


# --- PII ---------------------------------------------------------------------------------------

def pii_hits(text: str, regions: list[str], categories: list[str] | None = None) -> list[str]:
    provider = PiiProvider(PiiGuardrail(id="p", kind="pii", action="redact", regions=regions,  # type: ignore[arg-type]
                                        categories=categories or []), "[x]")
    check, acc, masks = provider.arm(CTX), "", []
    assert check is not None
    for delta in chunks(text, len(text)):
        acc += delta
        decision = check.check(acc, delta)
        while isinstance(decision, Redact):
            masks.append(decision.mask)
            decision = check.check(acc, "")
    decision = check.finish(acc)
    while isinstance(decision, Redact):
        masks.append(decision.mask)
        decision = check.finish(acc)
    return masks


def generated_pii(rng: random.Random) -> list[tuple[str, str, str]]:
    """``(kind, text, mask)`` samples of the formats people write, generated from their rules."""
    out = []
    for prefix, length in (("4", 16), ("51", 16), ("2221", 16), ("34", 15), ("37", 15), ("6011", 16), ("35", 16)):
        for _ in range(10):
            card = luhn_complete(prefix, length, rng)
            grouped = " ".join([card[:4], card[4:10], card[10:]]) if length == 15 else \
                "-".join(card[i:i + 4] for i in range(0, 16, 4))
            out += [("card", f"card {card} ok", "[card]"), ("card", f"card {grouped} ok", "[card]")]
    two = [luhn_complete("4", 16, rng), luhn_complete("5", 16, rng)]
    out.append(("card_pair", f"cards {two[0]} {two[1]} on file", "[card]"))
    from stdnum import iban as stdnum_iban
    for country in ("DE", "FR", "GB", "NL", "BE", "ES", "IT", "CH", "AT", "PL", "SE", "IE"):
        base = {"DE": "370400440532013000", "FR": "20041010050500013M02606", "GB": "NWBK60161331926819",
                "NL": "ABNA0417164300", "BE": "539007547034", "ES": "21000418450200051332",
                "IT": "X0542811101000000123456", "CH": "0076201162385295 7".replace(" ", ""),
                "AT": "1904300234573201", "PL": "109010140000071219812874", "SE": "50000000058398257466",
                "IE": "AIBK93115212345678"}[country]
        check = stdnum_iban.calc_check_digits(country + "00" + base)
        iban = country + check + base
        spaced = " ".join(iban[i:i + 4] for i in range(0, len(iban), 4))
        out += [("iban", f"IBAN {iban} ok", "[iban]"), ("iban", f"IBAN {spaced} ok", "[iban]"),
                ("iban", f"IBAN {spaced.replace(' ', '-')} ok", "[iban]"),
                ("iban", f"IBAN {spaced} BANK TRANSFER", "[iban]")]
    for _ in range(20):
        user = "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(3, 10)))
        out.append(("email", f"write to {user}.{user[:3]}@{rng.choice(['corp-mail.co.uk', 'acme.io', 'uni.edu'])}.",
                    "[email]"))
        nino = rng.choice("ABCEHJKLMNPRSTWXYZ") + rng.choice("ABCEHJKLMNPRSTWXYZ") + "".join(
            rng.choice(string.digits) for _ in range(6)) + rng.choice("ABCD")
        out += [("uk_nino", f"NI {nino} ok", "[nino]"), ("uk_nino", f"NI {nino.lower()} ok", "[nino]")]
        ssn = f"{rng.randint(1, 665):03d}-{rng.randint(1, 99):02d}-{rng.randint(1, 9999):04d}"
        out.append(("ssn", f"SSN {ssn} ok", "[ssn]"))
    return out


def pii_eval(rows: list[dict[str, str]]) -> dict[str, object]:
    recall: dict[str, Counter[str]] = defaultdict(Counter)
    missed: dict[str, list[str]] = defaultdict(list)
    every_region = sorted(NATIONAL_IDS) + ["US", "GB"]

    def count(kind: str, ok: bool, text: str) -> None:
        recall[kind]["hit" if ok else "miss"] += 1
        if not ok:
            missed[kind].append(text)

    for row in rows:
        family, text = row["family"], row["text"]
        if family == "phone":
            count("phone (+cc, every region)", pii_hits(f"call {text} now", []) == ["[phone]"], text)
        elif family == "phone_national":
            region = row["region"]
            count("phone (national, its region)", pii_hits(f"call {text} now", [region]) == ["[phone]"],
                  f"{region} {text}")
        elif family.startswith("national_id:"):
            region = family.split(":")[1]
            count(f"national_id {region}", pii_hits(f"id {text} ok", [region]) != [], text)
        elif family in ("iban", "ssn"):
            count(family, pii_hits(f"no {text} ok", []) != [], text)
    for kind, text, mask in generated_pii(random.Random(7)):
        want = [mask, mask] if kind == "card_pair" else [mask]
        count(kind, pii_hits(text, []) == want, text)
    near = [r["text"] for r in rows if r["family"] == "near_miss"]
    near_hits = [t for t in near if pii_hits(f"see {t} here", every_region)]
    per_kind = {k: round(c["hit"] / (c["hit"] + c["miss"]), 3) for k, c in sorted(recall.items())}
    return {"per_kind": per_kind, "samples": {k: sum(c.values()) for k, c in recall.items()},
            "missed": {k: v[:20] for k, v in missed.items()}, "near_misses": len(near), "near_miss_hits": near_hits}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", default="/work/shared/detect-eval")
    parser.add_argument("--benign-mb", type=float, default=20.0)
    parser.add_argument("--pii-benign-mb", type=float, default=5.0)
    parser.add_argument("--tag", default="", help="suffix of the result files (a held-out run)")
    args = parser.parse_args()
    tag = f"-{args.tag}" if args.tag else ""
    data = Path(args.data)
    report: dict[str, object] = {}
    for stem in ("secrets-gitleaks", "secrets-trufflehog", "secrets-detect-secrets"):
        rows = load(data / f"{stem}.jsonl")
        if rows:
            report[stem] = secrets_recall(rows)
    site = Path(sys.prefix) / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
    repo = Path(__file__).resolve().parents[1]
    report["false_positives"] = false_positives([repo / "README.md", repo / "guardrails", repo / "proxy", site],
                                                args.benign_mb)
    report["pii_false_positives"] = pii_false_positives([repo / "README.md", repo / "guardrails", repo / "proxy", site],
                                                        args.pii_benign_mb, ["US", "GB", "FR", "DE"])
    report["pii"] = pii_eval(load(data / "pii.jsonl"))
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"detect_eval{tag}.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    (RESULTS / f"detect_summary{tag}.json").write_text(json.dumps(summary(report, data), indent=1) + "\n",
                                                      encoding="utf-8")
    print_summary(report)


def summary(report: dict[str, Any], data: Path) -> dict[str, object]:
    """The committed record (``detect_summary.json``): figures per family and kind, no samples."""
    out: dict[str, object] = {"date": datetime.date.today().isoformat(),
                              "corpus": {p.name: sum(1 for _ in p.open()) for p in sorted(data.glob("*.jsonl"))}}
    for stem in ("secrets-gitleaks", "secrets-trufflehog", "secrets-detect-secrets"):
        part = report.get(stem)
        if part:
            out[stem] = {k: part[k] for k in ("per_family", "per_family_realistic", "samples", "tp_caught",
                                                "tp_total", "labelled_fps", "precision")}
            out[stem]["labelled_fps_blocked"] = len(part["labelled_fps_blocked"])
    out["false_positives"] = report["false_positives"]
    out["pii_false_positives"] = report["pii_false_positives"]
    out["pii"] = {k: report["pii"][k] for k in ("per_kind", "samples", "near_misses", "near_miss_hits")}
    return out


def print_summary(report: dict[str, object]) -> None:
    for stem in ("secrets-gitleaks", "secrets-trufflehog", "secrets-detect-secrets"):
        part = report.get(stem)
        if isinstance(part, dict):
            fams = {f: r for f, r in part["per_family"].items() if f != "(not in catalog)"}
            low = {f: r for f, r in fams.items() if r < 0.95}
            real = {f: r for f, r in part["per_family_realistic"].items() if f != "(not in catalog)"}
            real_low = {f: r for f, r in real.items() if r < 0.95}
            print(f"{stem}: {len(fams)} catalog families, {sum(r >= 0.95 for r in fams.values())} at >= 95%;"
                  f" below: {low}; not in catalog: {part['per_family'].get('(not in catalog)')}"
                  f" of {part['samples'].get('(not in catalog)')}; labelled fps blocked:"
                  f" {len(part['labelled_fps_blocked'])}/{part['labelled_fps']};\n  realistic samples:"
                  f" {sum(r >= 0.95 for r in real.values())} of {len(real)} families at >= 95%, below: {real_low};"
                  f" all samples: recall"
                  f" {part['tp_caught']}/{part['tp_total']}, precision {part['precision']}")
    print("false positives:", report["false_positives"])
    pii = report["pii"]
    assert isinstance(pii, dict)
    print("pii false positives:", report["pii_false_positives"])
    print("pii recall:", pii["per_kind"])
    print("pii near-miss hits:", pii["near_miss_hits"])


if __name__ == "__main__":
    main()
