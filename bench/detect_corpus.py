"""Gather labelled samples for bench/detect_eval.py from public sources; nothing here is committed.

Run: ``.venv/bin/python -m bench.detect_corpus [--out DIR] [--seed N]`` (default
``/work/shared/detect-eval``; ``--seed`` draws other random instances of the generated samples,
a held-out set for rules tuned on seed 0).
Reads local snapshots of public repositories when present (``--mirrors``, default
``/work/.mirror``; fetch them with any git client):

- ``gitleaks/gitleaks`` ``cmd/generate/config/rules/*.go``: each rule's ``tps`` and ``fps``
  values, evaluated by ``bench.detect_go`` (literals, and a seeded random instance of each
  ``secrets.NewSecret(regex)``, in the assignment forms ``GenerateSampleSecrets`` writes),
  labelled by the file's provider;
- ``trufflesecurity/trufflehog`` ``pkg/detectors/*/*_test.go``: each pattern test case's
  ``input``, a true positive when its ``want`` expects a finding, else a false positive,
  labelled by the detector's folder;
- ``Yelp/detect-secrets`` ``tests/plugins/*_test.py``: each parametrized ``(string, bool)``
  case, labelled by the plugin. No rule was written against these: a held-out set.

It also writes PII samples: libphonenumber's example numbers for every region (``phonenumbers``,
international and national format), the example ids in ``python-stdnum``'s own docstrings that
its validators accept, and near misses (versions, dates, IPs, hashes, URL credentials). Only the
samples (facts) are kept, as JSON lines: ``{"source", "family", "label", "text"}``.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import json
import pkgutil
import re
import subprocess
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path

import phonenumbers
import stdnum

from bench.detect_go import GoReader

_STATEMENT = re.compile(r"\b(tps|fps)\s*(?::=|=)\s*")
_CASE_FIELD = re.compile(r"\b(input|want)\s*:\s*")


def _git_files(repo: Path, prefix: str, suffix: str) -> Iterator[tuple[str, str]]:
    names = subprocess.run(["git", "-C", str(repo), "ls-tree", "-r", "--name-only", "HEAD", prefix],
                           capture_output=True, text=True, check=True).stdout.split()
    for name in names:
        if name.endswith(suffix):
            yield name, subprocess.run(["git", "-C", str(repo), "show", f"HEAD:{name}"],
                                       capture_output=True, text=True, check=True).stdout


def gitleaks_samples(repo: Path, seed: int = 0) -> Iterator[dict[str, str]]:
    """Every ``tps``/``fps`` assignment in gitleaks' rule files, evaluated (``bench.detect_go``):
    literal samples, and one random instance of each ``secrets.NewSecret(regex)`` in the forms
    its ``GenerateSampleSecrets`` calls write it in. File-path rules (maps) give nothing."""
    for n, (name, text) in enumerate(_git_files(repo, "cmd/generate/config/rules", ".go")):
        reader, family = GoReader(text, seed=n + 1000 * seed), Path(name).stem
        for m in _STATEMENT.finditer(text):
            label = "tp" if m.group(1) == "tps" else "fp"
            for value in reader.values(m.end()):
                if len(value.strip()) >= 8:
                    yield {"source": "gitleaks", "family": family, "label": label, "text": value}


def trufflehog_samples(repo: Path, seed: int = 0) -> Iterator[dict[str, str]]:
    """Each detector test case's ``input``, labelled by its ``want``: a true positive when the test
    expects a finding, a false positive when it expects none. A true positive without the
    detector's keyword is put in the context its tests write it in (``<keyword> token = '<value>'``:
    trufflehog looks for a key only near its provider's keyword)."""
    keywords_fn = re.compile(r"Keywords\(\) \[\]string \{\s*return \[\]string\{\s*\"([^\"]+)\"")
    for n, (name, text) in enumerate(_git_files(repo, "pkg/detectors", "_test.go")):
        if "integration" in name:
            continue
        family = Path(name).parent.name
        source = subprocess.run(["git", "-C", str(repo), "show", f"HEAD:{name.replace('_test.go', '.go')}"],
                                check=False, capture_output=True, text=True).stdout
        fn = keywords_fn.search(source)
        keyword = fn.group(1) if fn else family
        reader = GoReader(text, seed=n + 1000 * seed)
        fields = list(_CASE_FIELD.finditer(text))
        for this, after in pairwise(fields):
            if this.group(1) != "input" or after.group(1) != "want":
                continue
            wanted = reader.values(after.end())
            for value in reader.values(this.end()):
                if len(value.strip()) < 12:
                    continue
                if wanted and keyword.lower() not in value.lower() and "\n" not in value:
                    value = f"{keyword} token = '{value}'"
                yield {"source": "trufflehog", "family": family, "label": "tp" if wanted else "fp", "text": value}


def detect_secrets_samples(repo: Path, seed: int = 0) -> Iterator[dict[str, str]]:
    """Yelp detect-secrets' plugin tests (``tests/plugins/*_test.py``): each ``parametrize`` case
    that holds one string and one boolean, a true positive when the boolean says the plugin
    should find a secret. Read with ``ast`` (literals, and names bound to literals in the file);
    the public-IP plugin's cases are left out (an address is not a credential here)."""
    for name, text in _git_files(repo, "tests/plugins", "_test.py"):
        family = Path(name).stem.removesuffix("_test")
        if family in ("ip_public", "base"):
            continue
        tree = ast.parse(text)
        bound = {node.targets[0].id: node.value for node in ast.walk(tree) if isinstance(node, ast.Assign)
                 and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)}
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "parametrize"
                    and len(node.args) >= 2):
                continue
            cases = node.args[1]
            if isinstance(cases, ast.Name):
                cases = bound.get(cases.id, cases)
            try:
                values = ast.literal_eval(cases)
            except ValueError:
                continue
            for case in values if isinstance(values, (list, tuple)) else ():
                parts = case if isinstance(case, tuple) else (case,)
                strings = [v for v in parts if isinstance(v, str)]
                flags = [v for v in parts if isinstance(v, bool)]
                if len(strings) == 1 and len(flags) == 1 and len(strings[0].strip()) >= 8:
                    yield {"source": "detect-secrets", "family": family, "label": "tp" if flags[0] else "fp",
                           "text": strings[0]}


def phone_samples() -> Iterator[dict[str, str]]:
    for region in sorted(phonenumbers.SUPPORTED_REGIONS):
        for kind in (phonenumbers.PhoneNumberType.FIXED_LINE, phonenumbers.PhoneNumberType.MOBILE):
            number = phonenumbers.example_number_for_type(region, kind)
            if number is None:
                continue
            yield {"source": "libphonenumber", "family": "phone", "label": "tp", "region": region,
                   "text": phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.INTERNATIONAL)}
            yield {"source": "libphonenumber", "family": "phone_national", "label": "tp", "region": region,
                   "text": phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.NATIONAL)}


def stdnum_samples() -> Iterator[dict[str, str]]:
    """Examples from python-stdnum's docstrings (``>>> validate('...')`` lines that validate)."""
    wanted = {"iban": "iban", "us.ssn": "ssn"}
    from guardrails.stream.pii_regions import NATIONAL_IDS
    for region, ids in NATIONAL_IDS.items():
        for nid in ids:
            wanted[nid.validator.removeprefix("stdnum.")] = f"national_id:{region}"
    for name, family in wanted.items():
        module = importlib.import_module(f"stdnum.{name}")
        for value in re.findall(r">>> (?:validate|compact|format)\('([^']+)'\)", module.__doc__ or ""):
            if module.is_valid(value):
                yield {"source": "stdnum-docs", "family": family, "label": "tp", "text": value}


NEAR_MISSES = [
    "version 1.2.3", "v2.10.4-rc.1", "Python 3.11.9", "numpy==1.26.4", "release 2024.11.0",
    "2024-01-15", "15/01/2024", "01.02.2024", "2024-01-15T10:20:30Z", "10:20:30", "Jan 15, 2024",
    "192.168.100.200", "10.0.0.1", "2001:db8::1", "fe80::1ff:fe23:4567:890a", "255.255.255.0",
    "3f786850e387550fdab836ed7e6dc881de23001b", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "d41d8cd98f00b204e9800998ecf8427e", "550e8400-e29b-41d4-a716-446655440000",
    "https://alice:s3cretPw@db.internal/app", "postgres://bob:hunter22@10.0.0.5:5432/prod",
    "ftp://anonymous@ftp.gnu.org/gnu/", "ssh://git@github.com:22/org/repo.git", "redis://:p4ssw0rd@cache:6379",
    "mailto-like user:pass@host.corp", "amqp://guest:guest@rabbit:5672/",
    "port 8080, pid 12345, timeout 30000 ms", "ts=1700000000000", "1234567890", "page 12 of 340",
    "ISBN 978-3-16-148410-0", "(x - 1) * (y + 2)", "f(10, 20, 30)", "lat 48.8584, lon 2.2945",
]


def pii_near_misses() -> Iterator[dict[str, str]]:
    for text in NEAR_MISSES:
        yield {"source": "handwritten", "family": "near_miss", "label": "fp", "text": text}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="/work/shared/detect-eval")
    parser.add_argument("--mirrors", default="/work/.mirror")
    parser.add_argument("--seed", type=int, default=0,
                        help="draw other random instances of gitleaks' generated samples (a held-out set)")
    args = parser.parse_args()
    out, mirrors = Path(args.out), Path(args.mirrors)
    out.mkdir(parents=True, exist_ok=True)
    sets = {"secrets-gitleaks": (mirrors / "gitleaks+gitleaks" / "repo", gitleaks_samples),
            "secrets-trufflehog": (mirrors / "trufflesecurity+trufflehog" / "repo", trufflehog_samples),
            "secrets-detect-secrets": (mirrors / "Yelp+detect-secrets" / "repo", detect_secrets_samples)}
    for stem, (repo, gather) in sets.items():
        if repo.exists():
            _write(out / f"{stem}.jsonl", gather(repo, args.seed))
    _write(out / "pii.jsonl", [*phone_samples(), *stdnum_samples(), *pii_near_misses()])
    print(f"wrote samples to {out} (stdnum {stdnum.__version__}, {len(list(pkgutil.iter_modules()))} modules seen)")


def _write(path: Path, rows: Iterator[dict[str, str]] | list[dict[str, str]]) -> None:
    seen: set[tuple[str, str]] = set()
    with path.open("w", encoding="utf-8") as f:
        for row in rows:
            key = (row["family"], row["text"])
            if key not in seen:
                seen.add(key)
                f.write(json.dumps(row) + "\n")
    print(path, len(seen))


if __name__ == "__main__":
    main()
