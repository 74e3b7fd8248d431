"""False trips per MB of ordinary code and docs, and recall on labelled secrets, in one run.

Run: ``.venv/bin/python -m bench.detect_trips`` (after ``bench.detect_corpus --out DIR`` gathered
the labelled samples, and the benign corpus's repositories are in ``--mirrors``; see
``bench/benign_corpus.py``). Options: ``--policy FILE`` (default: the shipped default policy),
``--data DIR`` (the labelled samples), ``--tune-only`` (the tune half alone: what tuning runs read;
the held-out half is counted once before and once after a round), ``--pii REGIONS`` (also arm a ``pii`` guardrail with
``action = "redact"`` for those regions, and count its redactions apart).

- **False trips**: every stream guardrail of the policy runs over each file of the benign corpus
  (``bench/benign_corpus.json``: 74.9 MB, 59 repositories, 10 programming languages), fed in random
  3-8 character deltas as a stream arrives, through ``ArmedSet`` as the proxy runs it. A block is
  counted and the set re-armed on the text after it; a redaction is counted and the text goes on.
  Per MB of UTF-8, for the ``tune`` and ``heldout`` halves apart (rules are tuned on ``tune``'s
  hits only), and how many files tripped at all; every hit is written to
  ``bench/results/detect_trips.txt`` with its rule and context.
- **Recall**: the policy's ``secrets`` guardrail on the labelled true positives of gitleaks',
  trufflehog's and detect-secrets' own test tables (``bench.detect_eval.secrets_recall``): all
  samples, and those of the families the catalog has rules for (``catalog_recall``); per source, how
  many families reach 95% on their realistic samples (without a word or run that marks a sample as
  fake). ``split_disagreements``: labelled samples whose verdict fed whole differs from the verdict
  fed in random 1-9 character deltas (three splits each).

Writes ``bench/results/detect_trips.json`` (figures only; committed).
"""

from __future__ import annotations

import argparse
import datetime
import json
import random
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.benign_corpus import LANGUAGES, MANIFEST, MIRRORS, corpus_files, kind_of
from bench.detect_eval import RESULTS, chunks, load, secrets_recall
from config.policy import PiiGuardrail, Policy, load_policy
from guardrails.decision import Block, Redact
from guardrails.seams import DeltaCheck, StreamContext, StreamGuardrail
from guardrails.stream import ArmedSet, build_stream_guardrails
from guardrails.stream.pii import PiiProvider
from guardrails.stream.secrets import SecretsCheck, SecretsProvider

CTX = StreamContext(system_prompt="")
SOURCES = ("secrets-gitleaks", "secrets-trufflehog", "secrets-detect-secrets")


@dataclass(frozen=True, slots=True)
class Hit:
    guardrail_id: str
    rule: str
    """The secrets rule id, or the decision's reason code (and the mask of a redaction)."""
    start: int


def _rule_of(checks: Sequence[DeltaCheck], ids: Sequence[str], guardrail_id: str, decision: Block | Redact) -> str:
    check = checks[list(ids).index(guardrail_id)]
    if isinstance(check, SecretsCheck):
        return getattr(check, "last_rule", "") or decision.reason_code
    if isinstance(decision, Redact):
        return f"{decision.reason_code} {decision.mask}"
    return decision.reason_code


def trips_on(guardrails: Sequence[StreamGuardrail], text: str, seed: int) -> list[Hit]:
    """Every trip of the armed guardrails over ``text`` fed in 3-8 character deltas."""
    hits: list[Hit] = []
    armed = [(g.id, c) for g in guardrails if (c := g.arm(CTX)) is not None]
    checks, ids = [c for _, c in armed], [i for i, _ in armed]
    guard, acc, base = ArmedSet(armed), "", 0
    for delta in chunks(text, seed):
        acc += delta
        trip = guard.check(acc, delta)
        while trip is not None:
            hits.append(Hit(trip.guardrail_id, _rule_of(checks, ids, trip.guardrail_id, trip.decision),
                            base + (trip.decision.start if isinstance(trip.decision, Redact)
                                    else _start(checks, ids, trip.guardrail_id, len(acc)))))
            if isinstance(trip.decision, Block):  # re-armed on the text that follows
                armed = [(g.id, c) for g in guardrails if (c := g.arm(CTX)) is not None]
                checks = [c for _, c in armed]
                guard, base, acc = ArmedSet(armed), base + len(acc), ""
                break
            trip = guard.check(acc, "")
    if acc:
        trip = guard.finish(acc)
        if trip is not None:
            hits.append(Hit(trip.guardrail_id, _rule_of(checks, ids, trip.guardrail_id, trip.decision),
                            base + _start(checks, ids, trip.guardrail_id, len(acc))))
    return hits


def _start(checks: Sequence[DeltaCheck], ids: Sequence[str], guardrail_id: str, default: int) -> int:
    check = checks[list(ids).index(guardrail_id)]
    return check.last_start if isinstance(check, SecretsCheck) and check.last_start >= 0 else max(0, default - 40)


def false_trips(guardrails: Sequence[StreamGuardrail], mirrors: Path, manifest: Path,
                show_heldout: bool = False, halves: Sequence[str] = ("tune", "heldout")) -> dict[str, object]:
    size: Counter[str] = Counter()
    by_rule: dict[str, Counter[str]] = {"tune": Counter(), "heldout": Counter()}
    files: Counter[str] = Counter()
    tripped: Counter[str] = Counter()  # files with at least one trip: the answers a block would withhold
    kinds: dict[str, Counter[str]] = {k: Counter() for k in ("general", "auth")}  # the tune half by kind
    languages: dict[str, set[str]] = {k: set() for k in kinds}
    log: list[str] = []
    for n, f in enumerate(corpus_files(mirrors, manifest)):
        if f.split not in halves:
            continue
        size[f.split] += len(f.text.encode())
        files[f.split] += 1
        hits = trips_on(guardrails, f.text, n)
        tripped[f.split] += bool(hits)
        if f.split == "tune":
            kind = kinds[kind_of(f.repo)]
            kind["bytes"] += len(f.text.encode())
            kind["files"] += 1
            kind["trips"] += len(hits)
            kind["files_tripped"] += bool(hits)
            language = LANGUAGES.get(Path(f.path).suffix)
            if language is not None:
                languages[kind_of(f.repo)].add(language)
        for hit in hits:
            by_rule[f.split][f"{hit.guardrail_id}/{hit.rule}"] += 1
            context = f.text[max(0, hit.start - 40):hit.start + 80]
            if f.split == "tune" or show_heldout:
                log.append(f"{f.split}\t{hit.guardrail_id}/{hit.rule}\t{f.repo}/{f.path}\t{context!r}")
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "detect_trips.txt").write_text("\n".join(sorted(log)) + "\n", encoding="utf-8")
    out: dict[str, object] = {}
    for split in halves:
        mb = size[split] / 1e6
        total = sum(by_rule[split].values())
        part: dict[str, object] = {"mb": round(mb, 2), "files": files[split], "trips": total,
                                   "per_mb": round(total / mb, 3) if mb else None,
                                   "files_tripped": tripped[split]}
        if split == "tune" or show_heldout:  # the held-out half's rules stay unread, like its hits
            part["by_rule"] = dict(by_rule[split].most_common())
        if split == "tune":
            part["by_kind"] = {k: {"mb": round(c["bytes"] / 1e6, 2), "files": c["files"], "trips": c["trips"],
                                   "per_mb": round(c["trips"] / (c["bytes"] / 1e6), 3) if c["bytes"] else None,
                                   "files_tripped": c["files_tripped"], "languages": sorted(languages[k])}
                               for k, c in kinds.items()}
        out[split] = part
    mb = sum(size.values()) / 1e6
    trips = sum(sum(c.values()) for c in by_rule.values())
    out["all"] = {"mb": round(mb, 2), "trips": trips, "per_mb": round(trips / mb, 3) if mb else None}
    return out


def recall(provider: SecretsProvider, data: Path) -> dict[str, object]:
    out: dict[str, object] = {}
    caught = total = in_caught = in_total = 0
    for stem in SOURCES:
        rows = load(data / f"{stem}.jsonl")
        if not rows:
            continue
        part = secrets_recall(rows, provider)
        real = part["per_family_realistic"]
        assert isinstance(real, dict)
        caught += int(part["tp_caught"])  # type: ignore[call-overload]
        total += int(part["tp_total"])  # type: ignore[call-overload]
        in_caught += int(part["catalog_caught"])  # type: ignore[call-overload]
        in_total += int(part["catalog_total"])  # type: ignore[call-overload]
        out[stem] = {"recall": round(int(part["tp_caught"]) / max(1, int(part["tp_total"])), 3),  # type: ignore[call-overload]
                     "tp_caught": part["tp_caught"], "tp_total": part["tp_total"],
                     "catalog_recall": round(int(part["catalog_caught"]) / max(1, int(part["catalog_total"])), 3),  # type: ignore[call-overload]
                     "realistic_families_95": sum(1 for f, r in real.items() if f != "(not in catalog)" and r >= 0.95),
                     "realistic_families": sum(1 for f in real if f != "(not in catalog)"),
                     "labelled_fps_blocked": len(part["labelled_fps_blocked"]),  # type: ignore[arg-type]
                     "labelled_fps": part["labelled_fps"], "missed": part["missed"]}
    out["all"] = {"recall": round(caught / max(1, total), 3), "tp_caught": caught, "tp_total": total,
                  "catalog_recall": round(in_caught / max(1, in_total), 3), "catalog_caught": in_caught,
                  "catalog_total": in_total}
    return out


def split_disagreements(provider: SecretsProvider, data: Path, seeds: int = 3) -> int:
    """Labelled samples (true and false positives) whose verdict fed whole differs from their
    verdict fed in random 1-9 character deltas (``seeds`` splits each)."""
    def blocked(text: str, deltas: list[str]) -> bool:
        check, acc = provider.arm(CTX), ""
        assert check is not None
        for delta in deltas:
            acc += delta
            if isinstance(check.check(acc, delta), Block):
                return True
        return isinstance(check.finish(acc), Block)

    differ = 0
    for stem in SOURCES:
        for row in load(data / f"{stem}.jsonl"):
            text = row["text"]
            whole = blocked(text, [text])
            differ += any(blocked(text, _split(text, seed)) != whole for seed in range(seeds))
    return differ


def _split(text: str, seed: int) -> list[str]:
    rng, out, at = random.Random(seed), [], 0
    while at < len(text):
        n = rng.randint(1, 9)
        out.append(text[at:at + n])
        at += n
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--policy", default=None, help="a policy file (default: the shipped default policy)")
    parser.add_argument("--data", type=Path, default=Path("/work/shared/detect-eval"))
    parser.add_argument("--mirrors", type=Path, default=MIRRORS)
    parser.add_argument("--manifest", type=Path, default=MANIFEST)
    parser.add_argument("--pii", default="", help="comma-separated regions: also arm a pii guardrail (redact)")
    parser.add_argument("--tag", default="", help="suffix of the result file")
    parser.add_argument("--show-heldout", action="store_true", help="also log the held-out half's hits")
    parser.add_argument("--tune-only", action="store_true",
                        help="read the tune half only (while tuning: the held-out figure is taken once, at the end)")
    args = parser.parse_args()
    policy: Policy = load_policy(args.policy)
    guardrails = build_stream_guardrails(policy.stream_guardrails, policy.defaults.replacement)
    if args.pii:
        spec = PiiGuardrail(id="pii", kind="pii", action="redact", regions=args.pii.split(","))
        guardrails.append(PiiProvider(spec, "[pii]"))
    started = time.perf_counter()
    halves = ("tune",) if args.tune_only else ("tune", "heldout")
    trips = false_trips(guardrails, args.mirrors, args.manifest, args.show_heldout, halves)
    secrets = next((g for g in guardrails if isinstance(g, SecretsProvider)), None)
    found = recall(secrets, args.data) if secrets is not None else {}
    report = {"date": datetime.date.today().isoformat(), "policy": args.policy or "config/default.toml",
              "pii_regions": args.pii or None, "false_trips": trips,
              "split_disagreements": split_disagreements(secrets, args.data) if secrets is not None else None,
              "recall": {k: {f: v for f, v in part.items() if f != "missed"} for k, part in found.items()},  # type: ignore[union-attr]
              "seconds": round(time.perf_counter() - started, 1)}
    RESULTS.mkdir(parents=True, exist_ok=True)
    tag = f"-{args.tag}" if args.tag else ""
    (RESULTS / f"detect_trips{tag}.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    (RESULTS / f"detect_trips_missed{tag}.json").write_text(
        json.dumps({k: part.get("missed") for k, part in found.items()}, indent=1) + "\n", encoding="utf-8")  # type: ignore[union-attr]
    print_report(report)


def print_report(report: dict[str, object]) -> None:
    trips = report["false_trips"]
    assert isinstance(trips, dict)
    for split in ("tune", "heldout"):
        if split not in trips:
            continue
        part = trips[split]
        top = list(part["by_rule"].items())[:12] if split == "tune" else "(not shown)"
        print(f"false trips {split}: {part['trips']} in {part['mb']} MB ({part['files']} files, "
              f"{part.get('files_tripped')} of them tripped) = {part['per_mb']} per MB; top rules: {top}")
        for kind, counts in part.get("by_kind", {}).items():
            print(f"  tune, {kind}: {counts['trips']} in {counts['mb']} MB ({counts['files']} files, "
                  f"{counts['files_tripped']} tripped) = {counts['per_mb']} per MB; "
                  f"{len(counts['languages'])} languages: {', '.join(counts['languages'])}")
    print(f"false trips all: {trips['all']['per_mb']} per MB over {trips['all']['mb']} MB")
    found = report["recall"]
    assert isinstance(found, dict)
    for stem, part in found.items():
        print(f"recall {stem}: {part}")
    print(f"labelled samples whose streamed verdict differs from the whole text's: {report['split_disagreements']}")
    print(f"({report['seconds']} s)")


if __name__ == "__main__":
    main()
