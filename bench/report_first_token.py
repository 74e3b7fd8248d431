"""The first-token section of the bench report (scenario ``first_token`` of ``bench.run``).

Streams go one at a time, contenders in turn, so a stream's time to first token holds no wait
behind other streams' starts (32 or 16 streams started at once, as in the concurrent scenarios,
put the relay's own set-up queue into every figure: the bare relay measured 1.6 deltas behind the
upstream at 5 ms per delta that way, and 0.1 one at a time). A contender's extra is its TTFT minus
the bare relay's *of the same round*, in deltas as the upstream actually paced them: the median
gap between deltas on the direct streams (``asyncio.sleep`` oversleeps each nominal pace a little).
"""

from __future__ import annotations

from typing import Any

DELTAS = 16
"""Deltas per stream in the scenario (``bench-d16-...``)."""
GAPS = DELTAS + 1
"""Paced gaps after the first frame: the fake upstream sleeps before every later frame, the finish
frame and ``[DONE]`` included."""

WAIT_EXPLAINED = (
    "Where the wait comes from: a frame goes out whole once all of it lies before every armed check's "
    "horizon. Deltas cut mid-word (3-8 characters: `The de`, `ploymen`, `t finish`) keep a word in "
    "progress at the end of the text, and a word still being typed can begin a credential: some of the "
    "catalog's keys put up to 52 characters of their random part before their keyword (Azure identifiable "
    "keys; Dropbox: 11 lowercase letters or digits, then `AAAAAAAAAA`; Terraform: 14, then `.atlasv1.`), so "
    "`deploymen` may still become one, and `secrets` holds the trailing word: the first frame goes out with "
    "the delta that ends its word (the third here: 2 deltas). Deltas shaped like tokens (`The`, "
    "` deployment`) end their word when the next one begins: 1 delta. Less would mean releasing "
    "characters that could still be the start of a key, or splitting a frame (rewriting its bytes).\n\n")


def _pace(run: dict[str, Any], nominal: float) -> float:
    """The gap between frames as the direct streams received them: (total - TTFT) / GAPS, medians
    (the nominal pace when absent)."""
    direct = run.get("direct") or {}
    ttft, total = (direct.get("ttft") or {}).get("p50_ms"), (direct.get("total") or {}).get("p50_ms")
    if ttft is None or total is None or total <= ttft:
        return nominal
    return float(total - ttft) / GAPS


def _runs(sc: dict[str, Any]) -> list[tuple[str, float, bool, float, dict[str, Any]]]:
    out = []
    for key, v in sc.items():
        if key.startswith("first_token_p") and isinstance(v, dict) and v.get("rounds"):
            nominal = float(v["pace_ms"])
            out.append((key, nominal, bool(v.get("tokens")), _pace(v["rounds"], nominal), v["rounds"]))
    return out


def extra_deltas(sc: dict[str, Any], contender: str, nominal: float, tokens: bool) -> tuple[float, float, float] | None:
    """(p50, p25, p75) of ``contender``'s extra over the bare relay, in measured deltas."""
    for _, pace_ms, tok, pace, runs in _runs(sc):
        if pace_ms == nominal and tok == tokens:
            e = (runs.get(contender) or {}).get("extra_ms") or {}
            if e.get("p50_ms") is None:
                return None
            return e["p50_ms"] / pace, e["p25_ms"] / pace, e["p75_ms"] / pace
    return None


def section(sc: dict[str, Any], table: Any, f: Any, names: Any) -> list[str]:
    rows = []
    for _, nominal, tokens, pace, runs in _runs(sc):
        for n in names(runs):
            r = runs[n]
            t, e = r.get("ttft") or {}, r.get("extra_ms") or {}
            spread = (f"{f(e.get('p50_ms'), 1)} ({f(e.get('p25_ms'), 1)} to {f(e.get('p75_ms'), 1)})"
                      if e.get("p50_ms") is not None else "—")
            in_deltas = (f"{e['p50_ms'] / pace:.2f} ({e['p25_ms'] / pace:.2f} to {e['p75_ms'] / pace:.2f})"
                         if e.get("p50_ms") is not None else "—")
            rows.append([f"{nominal:g} ms ({pace:.2f})", "tokens" if tokens else "mid-word", n,
                         f"{f(t.get('p50_ms'), 1)} ({f(t.get('p25_ms'), 1)} to {f(t.get('p75_ms'), 1)})",
                         spread, in_deltas, f"{r.get('verified', 0)}/{r.get('streams', 0)}"])
    if not rows:
        return []
    return ["### First token, one stream at a time, against the bare relay of the same round\n\n"
            "Goal: within 2 deltas of the bare relay with the default policy, 4 with everything armed. "
            "16-delta streams, contenders in turn (the order rotates each round), medians and quartiles "
            "(p25 to p75) over the rounds; pace: nominal (measured gap between deltas at the client).\n\n"
            + WAIT_EXPLAINED
            + table(["pace", "deltas", "contender", "TTFT p50 ms (p25 to p75)", "extra ms over bare relay",
                     "extra, in deltas", "verified"], rows, "lllrrrl")]


def targets(sc: dict[str, Any]) -> list[tuple[str, str, str, bool]]:
    rows = []
    for contender, goal in (("gp-default", 2.0), ("gp-armed", 4.0)):
        for _, nominal, tokens, _, _ in sorted(_runs(sc), key=lambda r: (r[1], r[2])):
            x = extra_deltas(sc, contender, nominal, tokens)
            if x is None:
                continue
            name = (f"first token, one stream at a time, paced {nominal:g} ms, "
                    f"{'token-shaped' if tokens else 'mid-word'} deltas, {contender}: extra deltas over the "
                    "bare relay (p50, quartiles)")
            rows.append((name, f"{x[0]:.2f} ({x[1]:.2f} to {x[2]:.2f})", f"<= {goal:g}", x[0] <= goal))
    return rows
