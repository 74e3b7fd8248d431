"""Turn one ``bench.run`` result into latest.json, latest.md, latest.png and docs/bench-latest.md.

Per scenario and contender the value shown is the median over the alternating rounds; every round's
raw numbers stay in latest.json. Targets are ratios within this one run.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

from bench import report_first_token

ORDER = ["direct", "bare-relay", "gp-off", "gp-default", "gp-armed", "gp-judge", "litellm"]


def _med(values: list[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return round(statistics.median(vals), 3) if vals else None


def _f(v: float | None, digits: int = 1, unit: str = "") -> str:
    if v is None:
        return "—"
    if abs(v) >= 1000:
        return f"{v:,.0f}{unit}"
    return f"{v:.{digits}f}{unit}"


def summarize(out: dict[str, Any]) -> dict[str, Any]:
    sc = out["scenarios"]
    s: dict[str, Any] = {"load": {}, "streams": {}}
    for key in ("ns_c1", "ns_c32", "ns_c128", "judge_ns_c1", "judge_ns_c32", "ns_sys_c32", "ns_agent_c1",
                "ns_agent_grow_c1", "ns_agent_c32"):
        for name, rounds in sc.get(key, {}).get("rounds", {}).items():
            s["load"].setdefault(key, {})[name] = {
                "rps": _med([r.get("rps") for r in rounds]),
                "p50_ms": _med([r.get("p50_ms") for r in rounds]),
                "p99_ms": _med([r.get("p99_ms") for r in rounds]),
                "cpu_ms_per_req": _med([r.get("server_cpu_ms_per_req") for r in rounds]),
                "ok": sum(r.get("ok", 0) for r in rounds), "verified": sum(r.get("verified", 0) for r in rounds),
                "errors": sum(r.get("errors", 0) for r in rounds),
            }
    for key in ("stream200_c32", "stream200_c32_paced5ms", "stream200_c16_paced17ms", "judge_stream200_c1",
                "stream_agent_c32"):
        for name, rounds in sc.get(key, {}).get("rounds", {}).items():
            streams = sum(r.get("streams", 0) for r in rounds)
            s["streams"].setdefault(key, {})[name] = {
                "ttft_p50_ms": _med([(r.get("ttft") or {}).get("p50_ms") for r in rounds]),
                "ttft_p99_ms": _med([(r.get("ttft") or {}).get("p99_ms") for r in rounds]),
                "total_p50_ms": _med([(r.get("total") or {}).get("p50_ms") for r in rounds]),
                "completion_rate": round(sum(r.get("completed", 0) for r in rounds) / max(streams, 1), 4),
                "verified_rate": round(sum(r.get("verified", 0) for r in rounds) / max(streams, 1), 4),
            }
    direct = s["load"].get("ns_c1", {}).get("direct", {}).get("p50_ms")
    s["added_c1"] = {n: (None if v["p50_ms"] is None or direct is None else round(v["p50_ms"] - direct, 3))
                     for n, v in s["load"].get("ns_c1", {}).items()}
    s["cpu"] = {n: {k: v.get("us_per_delta") for k, v in rows.items()}
                for n, rows in sc.get("cpu_per_delta", {}).items()}
    s["memory"] = {n: r.get("kib_per_stream") for n, r in sc.get("memory_idle_streams", {}).items()}
    s["memory_by_50"] = {n: r.get("kib_per_stream") for n, r in sc.get("memory_idle_streams_by_50", {}).items()}
    own = sc.get("judge_own_latency", {})
    jd = s["load"].get("judge_ns_c1", {})
    if own and jd.get("gp-judge") and jd.get("gp-default"):
        added = jd["gp-judge"]["p50_ms"] - jd["gp-default"]["p50_ms"]
        s["judge"] = {"judge_own_p50_ms": own.get("p50_ms"), "added_p50_ms": round(added, 3),
                      "overhead_beyond_judge_ms": round(added - (own.get("p50_ms") or 0), 3)}
    return s


def targets(out: dict[str, Any], s: dict[str, Any]) -> list[dict[str, Any]]:
    load = s["load"]
    rps32 = {n: v["rps"] for n, v in load.get("ns_c32", {}).items()}
    rows: list[dict[str, Any]] = []

    def add(name: str, value: str, goal: str, ok: bool | None) -> None:
        rows.append({"target": name, "measured": value, "goal": goal,
                     "result": "n/a" if ok is None else ("PASS" if ok else "MISS")})

    gd, lite, bare = rps32.get("gp-default"), rps32.get("litellm"), rps32.get("bare-relay")
    if gd and lite:
        add("req/s at 32 concurrent, gp-default vs LiteLLM", f"{gd / lite:.1f}x ({gd:.0f} vs {lite:.0f})",
            ">= 50x", gd / lite >= 50)
    else:
        add("req/s at 32 concurrent, gp-default vs LiteLLM", "not run (make bench-peers)", ">= 50x", None)
    if gd and bare:
        add("req/s at 32 concurrent, gp-default vs bare relay", f"{gd / bare:.2f}x ({gd:.0f} vs {bare:.0f})",
            ">= 0.85x", gd / bare >= 0.85)
    off = rps32.get("gp-off")
    if gd and off:
        add("req/s at 32 concurrent, gp-default vs gp-off (guardproxy's own passthrough; informative)",
            f"{gd / off:.2f}x ({gd:.0f} vs {off:.0f})", ">= 0.85x", gd / off >= 0.85)
    sys32 = {n: v["rps"] for n, v in load.get("ns_sys_c32", {}).items()}
    gs, bs = sys32.get("gp-default"), sys32.get("bare-relay")
    if gs and bs:
        add("req/s at 32 concurrent with a 180-char system prompt, gp-default vs bare relay",
            f"{gs / bs:.2f}x ({gs:.0f} vs {bs:.0f})", ">= 0.9x", gs / bs >= 0.9)
    for key, label in (("ns_agent_c1", "agent-shaped request (15 KB prompt, tools, 50 KB history)"),
                       ("ns_agent_grow_c1", "agent conversation growing turn by turn (20 turns, 66-84 KB)")):
        value, ok = _agent_added(load.get(key, {}), out["scenarios"].get(f"{key}_paired", {}))
        if value:
            add(f"{label}, c=1 p50 added over gp-off", value, "<= 0.2 ms", ok)
    added = s["added_c1"].get("gp-default")
    if added is not None:
        bare_added = s["added_c1"].get("bare-relay")
        floor = f"; the bare relay adds {bare_added:.2f} ms" if bare_added is not None else ""
        add("added latency p50 at concurrency 1, gp-default", f"{added:.2f} ms{floor}", "< 1 ms", added < 1.0)
    cpu = s["cpu"]
    for mode in ("paced", "burst"):
        a, o = (cpu.get("gp-armed") or {}).get(f"{mode}_10000"), (cpu.get("gp-off") or {}).get(f"{mode}_10000")
        if a is not None and o:
            add(f"CPU/delta at 10,000 deltas ({mode}), all armed vs off", f"{a / o:.2f}x ({a:.0f} vs {o:.0f} µs)",
                "<= 2x", a / o <= 2)
    for mode in ("paced",):
        a100, a10k = (cpu.get("gp-armed") or {}).get(f"{mode}_100"), (cpu.get("gp-armed") or {}).get(f"{mode}_10000")
        if a100 and a10k is not None:
            add("all-armed CPU/delta flat from 100 to 10,000 deltas (paced)",
                f"{a10k / a100:.2f}x ({a100:.0f} → {a10k:.0f} µs)", "<= 1.5x", a10k / a100 <= 1.5)
    a1k, a10k = (cpu.get("gp-armed") or {}).get("paced_1000"), (cpu.get("gp-armed") or {}).get("burst_10000")
    if a1k and a10k is not None:
        add("all-armed CPU/delta, 10,000-delta burst vs 1,000 paced", f"{a10k / a1k:.2f}x ({a1k:.0f} → {a10k:.0f} µs)",
            "<= 1.5x", a10k / a1k <= 1.5)
    for name, value, goal, ok in report_first_token.targets(out["scenarios"]):
        add(name, value, goal, ok)
    for key, label in (("stream200_c32", "unpaced"), ("stream200_c32_paced5ms", "paced 5 ms")):
        t = s["streams"].get(key, {}).get("gp-default", {}).get("ttft_p99_ms")
        if t is not None:
            add(f"first token p99, 32 concurrent 200-delta streams ({label}), gp-default", f"{t:.1f} ms",
                "< 60 ms", t < 60)
    for n in ("gp-default", "gp-armed"):
        m = s["memory"].get(n)
        if m is not None:
            add(f"memory per open stream with 1,000 open, {n}", f"{m:.1f} KiB", "< 64 KiB", m < 64)
        m = s["memory_by_50"].get(n)
        if m is not None:
            add(f"memory per open stream with 1,000 open, opened 50 at a time, {n} (informative)", f"{m:.1f} KiB",
                "< 64 KiB", m < 64)
    return rows


def _table(header: list[str], rows: list[list[str]], align: str) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(":---" if a == "l" else "---:" for a in align) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def _names(d: dict[str, Any]) -> list[str]:
    return [n for n in ORDER if n in d] + [n for n in d if n not in ORDER]


def markdown(out: dict[str, Any], s: dict[str, Any], tg: list[dict[str, Any]]) -> str:
    m = out["machine"]
    parts = [f"Run {m['date']} on {m['nproc']} cores ({m['cpu_model']}), Python {m['python']}, "
             f"{m['event_loop']}, kernel {m['kernel']}, guardproxy at {m.get('commit', 'unknown')}; "
             f"{out['elapsed_s']} s in all. Load generator, fake upstream "
             "and contender share the same two cores. Medians over alternating rounds; raw rounds in latest.json."
             + (" **Quick run (smoke test), not for publishing.**" if out.get("quick") else "")]
    parts.append("### Targets\n\n" + _table(["target", "measured", "goal", "result"],
                                           [[t["target"], t["measured"], t["goal"], t["result"]] for t in tg], "lllc"))
    load = s["load"]
    rows = []
    for n in _names(load.get("ns_c1", {})):
        c1, c32, c128 = (load.get(k, {}).get(n, {}) for k in ("ns_c1", "ns_c32", "ns_c128"))
        bad = sum(load.get(k, {}).get(n, {}).get("errors", 0) for k in ("ns_c1", "ns_c32", "ns_c128"))
        ver = all(load.get(k, {}).get(n, {}).get("verified") == load.get(k, {}).get(n, {}).get("ok")
                  for k in ("ns_c1", "ns_c32", "ns_c128"))
        rows.append([n, _f(c1.get("p50_ms"), 2), _f(s["added_c1"].get(n), 2), _f(c1.get("rps"), 0),
                     _f(c32.get("rps"), 0), _f(c32.get("p50_ms"), 1), _f(c32.get("p99_ms"), 1),
                     _f(c32.get("cpu_ms_per_req"), 2), _f(c128.get("rps"), 0), _f(c128.get("p99_ms"), 1),
                     f"{bad} / {'yes' if ver else 'NO'}"])
    parts.append("### Non-streaming (small chat completion)\n\n" + _table(
        ["contender", "c=1 p50 ms", "added p50 ms", "c=1 req/s", "c=32 req/s", "c=32 p50 ms", "c=32 p99 ms",
         "proxy CPU ms/req (c=32)", "c=128 req/s", "c=128 p99 ms", "errors / bodies equal"], rows, "lrrrrrrrrrl"))
    rows = []
    for n in _names(load.get("ns_agent_c32", {})):
        a, b, c = (load.get(k, {}).get(n, {}) for k in ("ns_sys_c32", "ns_agent_c1", "ns_agent_c32"))
        sa = s["streams"].get("stream_agent_c32", {}).get(n, {})
        rows.append([n, _f(a.get("rps"), 0), _f(a.get("cpu_ms_per_req"), 2), _f(b.get("p50_ms"), 2),
                     _f(c.get("rps"), 0), _f(c.get("p50_ms"), 1), _f(c.get("cpu_ms_per_req"), 2),
                     _f(sa.get("ttft_p50_ms"), 1), _f(sa.get("total_p50_ms"), 1),
                     f"{sa.get('completion_rate', 0):.0%} / {sa.get('verified_rate', 0):.0%}"])
    if rows:
        parts.append("### Requests shaped like real traffic\n\n\"sys\": a 180-character system prompt. \"agent\": a "
                     "coding agent's turn, 66 KB (a 15 KB system prompt, eight tools, 50 KB of read_file calls "
                     "and results); the same body every time, as on turn N of a conversation.\n\n" + _table(
                         ["contender", "sys c=32 req/s", "sys CPU ms/req", "agent c=1 p50 ms", "agent c=32 req/s",
                          "agent c=32 p50 ms", "agent CPU ms/req", "agent stream TTFT p50", "agent stream total p50",
                          "completed / verified"], rows, "lrrrrrrrrl"))
    rows = []
    st = s["streams"]
    for n in _names(st.get("stream200_c32", {})):
        a, b = st.get("stream200_c32", {}).get(n, {}), st.get("stream200_c32_paced5ms", {}).get(n, {})
        rows.append([n, _f(a.get("ttft_p50_ms"), 1), _f(a.get("ttft_p99_ms"), 1), _f(a.get("total_p50_ms"), 1),
                     f"{a.get('completion_rate', 0):.0%} / {a.get('verified_rate', 0):.0%}",
                     _f(b.get("ttft_p50_ms"), 1), _f(b.get("ttft_p99_ms"), 1), _f(b.get("total_p50_ms"), 1),
                     f"{b.get('completion_rate', 0):.0%} / {b.get('verified_rate', 0):.0%}"])
    parts.append("### 32 concurrent 200-delta streams\n\nUnpaced: the upstream writes all 200 deltas at once. "
                 "Paced: 5 ms between deltas (closer to a real model). \"verified\": the body equals the "
                 "upstream's bytes (LiteLLM re-encodes chunks, so for it: the same text and a `[DONE]`). "
                 "guardproxy holds back only the text that could still become part of a match (the checks' "
                 "horizons; see the first-token table below); the unpaced TTFT is CPU.\n\n" + _table(
                     ["contender", "TTFT p50 ms", "TTFT p99 ms", "total p50 ms", "completed / verified",
                      "paced TTFT p50", "paced TTFT p99", "paced total p50", "paced completed / verified"],
                     rows, "lrrrlrrrl"))
    parts += report_first_token.section(out["scenarios"], _table, _f, _names)
    parts += _first_token_in_deltas(st)
    cpu = s["cpu"]
    if cpu:
        cols = ["paced_100", "paced_1000", "paced_10000", "burst_10000"]
        rows = [[n] + [_f((cpu.get(n) or {}).get(c), 1) for c in cols] for n in _names(cpu)]
        parts.append("### Proxy CPU per streamed delta (µs, utime+stime of the proxy process)\n\n"
                     "Paced: 1 ms between deltas, so each upstream read holds about one frame (as with a real "
                     "model). Burst: one 10,000-delta stream written at once (reads of many frames).\n\n"
                     + _table(["contender", "100 deltas", "1,000", "10,000", "10,000 burst"], rows, "lrrrr"))
    mem, by50 = (out["scenarios"].get(k, {}) for k in ("memory_idle_streams", "memory_idle_streams_by_50"))
    if mem:
        rows = [[n, f"{r.get('opened')}/{r.get('n')}", _f(r.get("rss_before_kib", 0) / 1024, 1),
                 _f(r.get("rss_open_kib", 0) / 1024, 1), _f(r.get("kib_per_stream"), 1),
                 " / ".join(_f(k, 1) for k in r.get("runs_kib") or [r.get("kib_per_stream")]),
                 _f((by50.get(n) or {}).get("kib_per_stream"), 1)] for n, r in mem.items()]
        parts.append("### Memory: 1,000 open idle streams (fresh process each)\n\n"
                     "Each stream gets 100 deltas at once, then nothing for 20 s. Opened all at once, the "
                     "figure holds the peak of the 1,000 bursts read before they are checked (their freed "
                     "small objects leave the allocator's arenas in use, so it moves with how far the "
                     "checks fall behind the reads, and varies by several KiB from one fresh process to the "
                     "next: the median of the runs is given, every run beside it); opened 50 at a time, it is "
                     "what an open stream keeps.\n\n"
                     + _table(["contender", "open", "RSS before MiB", "RSS open MiB", "KiB per stream (median)",
                               "each run", "KiB per stream, opened 50 at a time"], rows, "llrrrlr"))
    if s.get("judge"):
        j, jl, js = s["judge"], load.get("judge_ns_c1", {}), st.get("judge_stream200_c1", {})
        j32 = load.get("judge_ns_c32", {})
        rows = [[n, _f(jl.get(n, {}).get("p50_ms"), 2), _f(jl.get(n, {}).get("p99_ms"), 2),
                 _f(j32.get(n, {}).get("rps"), 0), _f(j32.get(n, {}).get("p50_ms"), 1),
                 _f(js.get(n, {}).get("ttft_p50_ms"), 1), _f(js.get(n, {}).get("total_p50_ms"), 1)]
                for n in ("gp-default", "gp-judge") if n in jl]
        parts.append("### A configured LLM judge (fake judge answers PASS after 50 ms)\n\n"
                     f"The judge's own latency (fake upstream called directly, p50): {_f(j['judge_own_p50_ms'], 2)} ms. "
                     f"Added by guardproxy with the judge over the default policy (p50, c=1): "
                     f"{_f(j['added_p50_ms'], 2)} ms, i.e. {_f(j['overhead_beyond_judge_ms'], 2)} ms beyond the "
                     "judge itself. With a judge, delivery is buffered: the first token waits for the verdict.\n\n"
                     + _table(["contender", "c=1 p50 ms", "c=1 p99 ms", "c=32 req/s", "c=32 p50 ms",
                               "stream c=1 TTFT p50", "stream c=1 total p50"], rows, "lrrrrrr"))
    hb = out.get("holdback")
    if hb and hb.get("table"):
        parts.append("### bench/holdback.py (what is held back on real text, no HTTP)\n\n" + hb["table"])
    gc = out.get("guard_cost")
    if gc and gc.get("table"):
        parts.append("### bench/guard_cost.py (guardrails alone, no HTTP)\n\n" + gc["table"])
    parts.append("### Contenders\n\n" + "\n".join(f"- **{n}**: {d}" for n, d in out["contenders"].items()))
    if out.get("notes"):
        parts.append("### Notes\n\n" + "\n".join(f"- {n}" for n in out["notes"]))
    return "\n\n".join(parts) + "\n"


def _first_token_in_deltas(st: dict[str, Any]) -> list[str]:
    """TTFT of each guardproxy contender over the bare relay's, in deltas of the upstream's pace."""
    rows = []
    for key, pace in (("stream200_c32_paced5ms", 5.0), ("stream200_c16_paced17ms", 17.0)):
        runs = st.get(key, {})
        bare = (runs.get("bare-relay") or {}).get("ttft_p50_ms")
        for n in _names(runs):
            if n == "bare-relay" or bare is None or (runs[n] or {}).get("ttft_p50_ms") is None:
                continue
            extra = runs[n]["ttft_p50_ms"] - bare
            rows.append([f"{pace:g} ms/delta", n, _f(runs[n]["ttft_p50_ms"], 1), _f(bare, 1), _f(extra / pace, 2)])
    if not rows:
        return []
    return ["### First token on paced streams started together, against the bare relay (same run)\n\n"
            "The paced rows of the concurrent scenarios (32 streams at 5 ms, 16 at 17 ms, all started at "
            "once): each figure holds the wait behind the other streams' set-up, which moves with the "
            "contender's cost per request and the machine's load (the goal is judged on the one-at-a-time "
            "table above).\n\n"
            + _table(["pace", "contender", "TTFT p50 ms", "bare relay TTFT p50 ms", "extra, in deltas"],
                     rows, "llrrr")]


def plot(out: dict[str, Any], s: dict[str, Any], path: Path) -> str | None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is not installed; no plot"
    fig, ax = plt.subplots(2, 3, figsize=(16, 9))
    load = s["load"]
    names = _names(load.get("ns_c32", {}))
    x = range(len(names))
    for i, key in enumerate(("ns_c32", "ns_c128")):
        ax[0][0].bar([p + i * 0.4 for p in x], [load.get(key, {}).get(n, {}).get("rps") or 0 for n in names], 0.4,
                     label={"ns_c32": "c=32", "ns_c128": "c=128"}[key])
    ax[0][0].set_xticks([p + 0.2 for p in x], names, rotation=30, ha="right")
    ax[0][0].set_title("non-streaming req/s (higher is better)")
    ax[0][0].legend()
    n1 = [n for n in _names(s["added_c1"]) if n != "direct"]
    ax[0][1].bar(n1, [s["added_c1"].get(n) or 0 for n in n1], color="tab:orange")
    ax[0][1].set_yscale("symlog", linthresh=1)
    ax[0][1].axhline(1.0, color="red", ls="--", lw=1)
    ax[0][1].set_title("added latency p50 at c=1, ms (target < 1)")
    ax[0][1].tick_params(axis="x", rotation=30)
    st = s["streams"].get("stream200_c32", {})
    sn = _names(st)
    xs = range(len(sn))
    ax[0][2].bar([p for p in xs], [st[n]["ttft_p50_ms"] or 0 for n in sn], 0.4, label="p50")
    ax[0][2].bar([p + 0.4 for p in xs], [st[n]["ttft_p99_ms"] or 0 for n in sn], 0.4, label="p99")
    ax[0][2].set_yscale("log")
    ax[0][2].axhline(60, color="red", ls="--", lw=1)
    ax[0][2].set_xticks([p + 0.2 for p in xs], sn, rotation=30, ha="right")
    ax[0][2].set_title("TTFT, 32 concurrent 200-delta streams, ms")
    ax[0][2].legend()
    for n, rows in s["cpu"].items():
        pts = [(d, rows.get(f"paced_{d}")) for d in (100, 1000, 10_000)]
        ax[1][0].plot([p[0] for p in pts if p[1]], [p[1] for p in pts if p[1]], marker="o", label=n)
    ax[1][0].set_xscale("log")
    ax[1][0].set_yscale("log")
    ax[1][0].set_title("proxy CPU µs per delta (paced) vs stream length")
    ax[1][0].legend()
    burst = {n: r.get("burst_10000") for n, r in s["cpu"].items() if r.get("burst_10000")}
    ax[1][1].bar(list(burst), list(burst.values()), color="tab:purple")
    ax[1][1].set_yscale("log")
    ax[1][1].set_title("proxy CPU µs per delta, one 10,000-delta burst")
    ax[1][1].tick_params(axis="x", rotation=30)
    mem = {n: v for n, v in s["memory"].items() if v is not None}
    ax[1][2].bar(list(mem), list(mem.values()), color="tab:green")
    ax[1][2].axhline(64, color="red", ls="--", lw=1)
    ax[1][2].set_title("KiB per open stream, 1,000 open (target < 64)")
    ax[1][2].tick_params(axis="x", rotation=30)
    fig.suptitle(f"guardproxy bench, {out['machine']['date']}, {out['machine']['nproc']} cores "
                 f"({out['machine']['cpu_model']})")
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return None


def write(out: dict[str, Any], results: Path) -> None:
    results.mkdir(parents=True, exist_ok=True)
    s = summarize(out)
    tg = targets(out, s)
    out["summary"], out["targets"] = s, tg
    err = plot(out, s, results / "latest.png")
    if err:
        out["notes"].append(err)
    (results / "latest.json").write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    md = markdown(out, s, tg)
    (results / "latest.md").write_text("# guardproxy benchmark: latest run\n\n" + md, encoding="utf-8")
    page = ("# The latest `make bench` run\n\n"
            "Generated by `bench/report.py` from `bench/results/latest.json` (`python -m bench.report` "
            "re-renders it without measuring again); what the figures mean and how they compare with "
            "earlier runs is in [benchmarks.md](benchmarks.md).\n\n"
            "![benchmark plot](../bench/results/latest.png)\n\n" + md.replace("\n### ", "\n## "))
    docs = results.parent.parent / "docs"
    if docs.is_dir():
        (docs / "bench-latest.md").write_text(page, encoding="utf-8")


def main() -> None:
    """Re-render latest.md, latest.png and docs/bench-latest.md from latest.json (no new measurement)."""
    results = Path(__file__).parent / "results"
    out = json.loads((results / "latest.json").read_text(encoding="utf-8"))
    out["notes"] = [n for n in out.get("notes", []) if "matplotlib" not in n]
    write(out, results)



def _agent_added(rounds: dict[str, Any], paired: dict[str, Any]) -> tuple[str, bool | None]:
    """gp-default's c=1 p50 over gp-off's: judged on the interleaved run (``op_paired``) when there is
    one, with the alternating rounds' figure beside it."""
    d, o = rounds.get("gp-default", {}).get("p50_ms"), rounds.get("gp-off", {}).get("p50_ms")
    in_rounds = None if d is None or o is None else d - o
    pd = (paired.get("contenders") or {}).get("gp-default") or {}
    diff, per_round = pd.get("p50_diff_ms"), (pd.get("extra_ms") or {}).get("p50_ms")
    if diff is not None:
        beside = f"; alternating rounds: {in_rounds:.2f} ms" if in_rounds is not None else ""
        return (f"{diff:.2f} ms interleaved (per-request pairs: {per_round:.2f} ms{beside})", diff <= 0.2)
    if in_rounds is not None:
        return f"{in_rounds:.2f} ms ({d:.2f} vs {o:.2f})", in_rounds <= 0.2
    return "", None


if __name__ == "__main__":
    main()
