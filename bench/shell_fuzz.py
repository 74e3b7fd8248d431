"""Crash fuzzing of the shell parser, bounded in time: the raw tree-sitter-bash parse against the
proxy's analysis (``shell.analyze``, which parses ``ctype_safe`` text).

Run: ``python -m bench.shell_fuzz [--seconds 150] [--mode raw|safe|windows|both]`` (``windows``: the
PowerShell and cmd readings, ``analyze(dialect="windows")``, pure Python: a death there is an uncaught error). Each mode runs child
processes of at most 20 s each; a child draws inputs with hypothesis (shell fragments mixed with
characters from every Unicode plane), writes each input to a file before it parses it, and so a child
that dies of a signal leaves the input that killed it behind. Writes bench/results/shell_fuzz.json
with the inputs parsed, the children that died and their inputs.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RESULTS = Path(__file__).parent / "results" / "shell_fuzz.json"
FRAGMENTS = ["$(", ")", "`", "<<EOF\n", "EOF\n", "|", "&&", ";", "'", '"', "\\", "bash -c ", "{", "}", "{1..3}",
             "gc ", "%X%", "^", "@(", "[IO.File]::", "& ", "cmd /c ", "pwsh -c ", "@'\n", "\n'@", "--% ",
             "${", "[[ -", " ]]", "echo ", "x=", "$", "\n", " ", "a", "1", "..", "?", "#", "<<<", ">", "((", "))",
             "case x in a) ", ";;", " esac"]


def child(mode: str, seconds: float, seed: int, last: str) -> None:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import seed as fixed_seed
    from hypothesis import strategies as st

    if mode in ("safe", "windows"):
        from guardrails.tools.shell import analyze

        def run(text: str) -> None:
            analyze(text, dialect="windows" if mode == "windows" else "bash")
    else:
        import tree_sitter_bash
        from tree_sitter import Language, Parser

        parser = Parser(Language(tree_sitter_bash.language()))

        def run(text: str) -> None:
            parser.parse(text.encode("utf-8", "surrogatepass"))

    chars = st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=("Cs",))
    piece = st.one_of(st.sampled_from(FRAGMENTS), chars.map(str), st.text(chars, max_size=4))
    end = time.monotonic() + seconds
    count = 0

    @fixed_seed(seed)
    @settings(database=None, deadline=None, max_examples=10**9, suppress_health_check=list(HealthCheck))
    @given(st.lists(piece, max_size=60).map("".join))
    def fuzz(text: str) -> None:
        nonlocal count
        if time.monotonic() > end:
            print(count, flush=True)
            os._exit(0)
        Path(last).write_text(text, encoding="utf-8", errors="surrogatepass")
        run(text)
        count += 1

    fuzz()


def campaign(mode: str, seconds: float) -> dict[str, object]:
    end = time.monotonic() + seconds
    clean, children, deaths = 0, 0, []
    with tempfile.TemporaryDirectory() as tmp:
        while time.monotonic() < end:
            children += 1
            last = str(Path(tmp) / f"{children}.txt")
            budget = max(1.0, min(20.0, end - time.monotonic()))
            done = subprocess.run([sys.executable, "-m", "bench.shell_fuzz", "--child", mode, str(budget),
                                   str(children), last], capture_output=True, text=True, check=False)
            if done.returncode == 0:
                clean += int(done.stdout.split()[-1])
            else:
                killer = Path(last).read_text(encoding="utf-8", errors="surrogatepass")
                deaths.append({"returncode": done.returncode, "input": killer})
                print(f"{mode}: child died ({done.returncode}) on {killer!r}", file=sys.stderr)
    return {"mode": mode, "seconds": seconds, "children": children, "inputs_survived": clean,
            "deaths": deaths}


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.shell_fuzz", description=__doc__)
    ap.add_argument("--seconds", type=float, default=150.0, help="per mode")
    ap.add_argument("--mode", choices=["raw", "safe", "windows", "both"], default="both")
    ap.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        mode, seconds, seed, last = args.child
        child(mode, float(seconds), int(seed), last)
        return
    modes = ["raw", "safe"] if args.mode == "both" else [args.mode]
    rows = [campaign(m, args.seconds) for m in modes]
    for r in rows:
        print(f"{r['mode']:5} {r['seconds']:>6.0f} s  children {r['children']:>3}  inputs survived "
              f"{r['inputs_survived']:>7}  children killed {len(r['deaths'])}")  # type: ignore[arg-type]
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(rows, indent=2, ensure_ascii=True) + "\n")


if __name__ == "__main__":
    main()
