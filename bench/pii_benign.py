"""What the ``pii`` check redacts in real code and docs: ``bench.benign_corpus`` (read from the snapshots).

Run: ``.venv/bin/python -m bench.pii_benign [--mb 25] [--baseline DIR] [--show 20]``. Feeds each file as a
model's answer in 64-character deltas through ``pii`` with ``action = "redact"``, the default
regions and the policy's defaults, and counts redactions per MB by mask. None of that text is an
answer that leaks personal data, but some of what it holds is personal data all the same: an email
in a package's metadata, a maintainer's address in a licence header. So emails are counted apart
(``email`` and, for those the check let pass as code metadata, ``email kept as metadata``); every
other mask is a false positive (a number read as a phone, a card, an id). ``--baseline DIR`` runs
the same count with the tree in ``DIR`` (``git archive REV | tar -x -C DIR``) over the same files.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve()
DELTA = 64


def count(mb: float, show: int) -> dict[str, object]:
    sys.path.insert(0, str(HERE.parents[1]))  # the corpus reader is this tree's, the check DIR's
    from bench.benign_corpus import corpus_files
    sys.path.pop(0)
    from config.policy import PiiGuardrail
    from guardrails.decision import Redact
    from guardrails.seams import StreamContext
    from guardrails.stream.pii import PiiProvider

    provider = PiiProvider(PiiGuardrail(id="pii", kind="pii", action="redact"), "[withheld]")
    checked = PiiProvider(PiiGuardrail(id="pii", kind="pii", action="redact", categories=["email"],
                                       metadata_emails=True), "[withheld]")
    ctx = StreamContext(system_prompt="")
    size, hits, examples = 0, Counter[str](), []

    def redactions(chosen: PiiProvider, text: str) -> list[Redact]:
        check = chosen.arm(ctx)
        assert check is not None
        out, acc = [], ""
        for i in range(0, len(text), DELTA):
            acc += text[i:i + DELTA]
            decision = check.check(acc, text[i:i + DELTA])
            while isinstance(decision, Redact):
                out.append(decision)
                decision = check.check(acc, "")
        decision = check.finish(acc)
        while isinstance(decision, Redact):
            out.append(decision)
            decision = check.finish(acc)
        return out

    for f in corpus_files():
        if size >= mb * 1e6:
            break
        size += len(f.text.encode())
        found = redactions(provider, f.text)
        for r in found:
            hits[r.mask] += 1
            if r.mask != "[email]" and len(examples) < show:
                examples.append(f"{r.mask} {f.repo}/{f.path}: {f.text[max(0, r.start - 30):r.end + 30]!r}")
        emails = sum(r.mask == "[email]" for r in found)
        every_email = len(redactions(checked, f.text)) if "@" in f.text else 0
        hits["email kept as metadata"] += max(0, every_email - emails)
    mb_read = size / 1e6
    other = sum(n for mask, n in hits.items() if "email" not in mask)
    return {"mb": round(mb_read, 1), "by_mask": dict(hits), "non_email_per_mb": round(other / mb_read, 2),
            "examples": examples}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=float, default=25.0)
    parser.add_argument("--show", type=int, default=20)
    parser.add_argument("--baseline", type=Path)
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.json:
        print(json.dumps(count(args.mb, args.show)))
        return
    trees = {"now": HERE.parents[1]}
    if args.baseline:
        trees = {"before": args.baseline.resolve(), **trees}
    for name, tree in trees.items():
        env = {**os.environ, "PYTHONPATH": str(tree)}
        done = subprocess.run([sys.executable, str(HERE), "--json", "--mb", str(args.mb), "--show", str(args.show)],
                              cwd=tree, env=env, check=True, capture_output=True, text=True)
        result = json.loads(done.stdout)
        print(f"{name}: {result['mb']} MB, non-email redactions {result['non_email_per_mb']}/MB, by mask {result['by_mask']}")
        for line in result["examples"]:
            print("   ", line)


if __name__ == "__main__":
    main()
