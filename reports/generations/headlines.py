#!/usr/bin/env python3
"""Headline ratios of every study, own GPU and A100 / H100, from the metrics.json files.

Run from the repository root:  python3 reports/generations/headlines.py

Prints the numbers of README.md's table. Every ratio is computed the same way for the own
GPU's committed run (reports/<study>/metrics.json) and for the runs in this folder, and,
where a run here is reduced, also for the same subset of the own GPU's run, so that like
is compared with like. Reads nothing but metrics.json files; no simulation.
"""
import json
import math
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def load(rel):
    p = os.path.join(ROOT, rel)
    if not os.path.exists(p):
        return None
    with open(p) as f:
        return json.load(f)


def gmean(xs):
    xs = list(xs)
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def mean(xs):
    xs = list(xs)
    return sum(xs) / len(xs) if xs else float("nan")


def pct(x):
    return f"{(x - 1) * 100:+.1f}%"


def runs_by_policy(w):
    return {r["policy"]: r for r in w["runs"]}


# ---- Warped-Slicer: combined IPC, geometric mean of per-pair ratios, 2-kernel pairs ----
def ws(m, num="warped-slicer", den="left-over"):
    xs = []
    for w in m["workloads"]:
        if len(w["apps"]) != 2:
            continue
        r = runs_by_policy(w)
        if num in r and den in r:
            xs.append(r[num]["summary"]["combined_ipc"] / r[den]["summary"]["combined_ipc"])
    return gmean(xs), len(xs)


# ---- Punyala: queue throughput normalised to spatial (Even), geometric mean over mixes ----
def punyala(m, policy, ways):
    base = {(c["ways"], c["mix"]): c["throughput"] for c in m["cells"] if c["policy"] == "spatial"}
    xs = [c["throughput"] / base[(c["ways"], c["mix"])]
          for c in m["cells"] if c["policy"] == policy and c["ways"] == ways]
    return gmean(xs), len(xs)


def punyala_ipc(m, policy, ways):
    def avg(c):
        return mean(v for _, v in c["app_ipc"])
    base = {(c["ways"], c["mix"]): avg(c) for c in m["cells"] if c["policy"] == "spatial"}
    xs = [avg(c) / base[(c["ways"], c["mix"])]
          for c in m["cells"] if c["policy"] == policy and c["ways"] == ways]
    return gmean(xs), len(xs)


def punyala_classes(m):
    return ", ".join(f"{a['name']} {a['class']}" for a in m["apps"])


# ---- SiM / Slate: arithmetic mean of makespan_speedup (and STP) over workloads ----
def completion(m, policy, measure="makespan_speedup", category=None, name_filter=None):
    xs = []
    for w in m["workloads"]:
        if category is not None and w["category"] != category:
            continue
        if name_filter is not None and not name_filter(w["name"]):
            continue
        r = runs_by_policy(w)
        if policy not in r:
            continue
        xs.append(r[policy]["measures"][measure] if measure in r[policy]["measures"]
                  else r[policy]["summary"][measure])
    return mean(xs), len(xs)


def completion_ratio(m, num, den, measure="makespan_speedup"):
    """Arithmetic mean over workloads of num's measure / den's (as the Slate summary)."""
    xs = []
    for w in m["workloads"]:
        r = runs_by_policy(w)
        if num in r and den in r:
            a = r[num]["measures"].get(measure, r[num]["summary"].get(measure))
            b = r[den]["measures"].get(measure, r[den]["summary"].get(measure))
            xs.append(a / b)
    return mean(xs), len(xs)


def staggered(name):
    return name.endswith(" first)")


# ---- UGPU: STP, geometric mean of per-mix ratios against BP ----
def ugpu(m, num="ugpu", den="bp", category="heterogeneous"):
    xs = []
    for w in m["workloads"]:
        if w["category"] != category:
            continue
        r = runs_by_policy(w)
        if num in r and den in r:
            xs.append(r[num]["summary"]["stp"] / r[den]["summary"]["stp"])
    return gmean(xs), len(xs)


def isu_split(m):
    return ", ".join(f"{a['name']} {a['isu']:.2f}" for a in m["alone"])


# ---- Policy rankings: Kendall's tau-b of ours against each paper's (best first) ----
PAPER_RANKING = {
    "warped-slicer": ["oracle", "warped-slicer", "even", "spatial", "left-over"],
    "punyala": ["ilp-smra", "profile-based", "ilp", "spatial"],
    "sim": ["sim", "pt", "sequential"],
    "slate": ["slate", "mps", "time-slice"],
    "ugpu": ["ugpu-offline", "ugpu", "cd-search", "bp", "ugpu-soft", "ugpu-ori"],
}


def kendall(paper, ours):
    """tau-b of paper's order (best first) against ours {policy: value, higher better}."""
    common = [p for p in paper if p in ours and math.isfinite(ours[p])]
    n = len(common)
    if n < 2:
        return None
    c = d = t = 0
    for i in range(n):
        for j in range(i + 1, n):
            a, b = ours[common[i]], ours[common[j]]
            c, d, t = (c + 1, d, t) if a > b else (c, d + 1, t) if a < b else (c, d, t + 1)
    pairs = n * (n - 1) // 2
    den = math.sqrt(pairs * (pairs - t))
    if den == 0:
        return None
    order = sorted(common, key=lambda p: (-ours[p], common.index(p)))
    return (c - d) / den, n, order


def ranking_values(study, m):
    """Our headline measure per policy, as each study's summary orders it."""
    if study == "warped-slicer":
        pol = {p for w in m["workloads"] for p in runs_by_policy(w)}
        return {p: ws(m, p, "left-over")[0] for p in pol if ws(m, p, "left-over")[1]}
    if study == "punyala":
        pol = {c["policy"] for c in m["cells"]}
        ways = min(c["ways"] for c in m["cells"])
        return {p: punyala(m, p, ways)[0] for p in pol if punyala(m, p, ways)[1]}
    pol = {p for w in m["workloads"] for p in runs_by_policy(w)}
    if study == "ugpu":
        return {p: ugpu(m, p)[0] for p in pol if ugpu(m, p)[1]}
    cat = "low-isu" if study == "sim" else None
    return {p: completion(m, p, category=cat)[0] for p in pol if completion(m, p, category=cat)[1]}


def rankings(say, g):
    say("")
    say("## Policy rankings: Kendall's tau against the paper's (1 = same order)")
    runs = [("warped-slicer", "fermi-ws", "reports/warped-slicer/metrics.json"),
            ("warped-slicer", "a100", g + "warped-slicer-a100/metrics.json"),
            ("warped-slicer", "h100", g + "warped-slicer-h100/metrics.json"),
            ("punyala", "gpgpusim-60sm", "reports/punyala/metrics.json"),
            ("punyala", "h100 quick", g + "punyala-h100-quick/metrics.json"),
            ("sim", "k40c", "reports/sim/metrics.json"),
            ("sim", "a100 quick", g + "sim-a100-quick/metrics.json"),
            ("sim", "h100 quick", g + "sim-h100-quick/metrics.json"),
            ("slate", "titanxp", "reports/slate/metrics.json"),
            ("slate", "a100", g + "slate-a100/metrics.json"),
            ("slate", "h100", g + "slate-h100/metrics.json"),
            ("ugpu", "ugpu-80sm-hbm", "reports/ugpu/metrics.json"),
            ("ugpu", "a100 quick", g + "ugpu-a100-quick/metrics.json"),
            ("ugpu", "h100 quick", g + "ugpu-h100-quick/metrics.json")]
    say("| study | GPU | tau | n | paper | ours |")
    say("|---|---|---|---|---|---|")
    for study, label, rel in runs:
        m = load(rel)
        if m is None:
            continue
        paper = (m.get("config") or {}).get("paper_ranking") or PAPER_RANKING[study]
        k = kendall(paper, ranking_values(study, m))
        if k is None:
            say(f"| {study} | {label} | – | – | {' > '.join(paper)} | (fewer than 2 common) |")
            continue
        tau, n, order = k
        common = [p for p in paper if p in order]
        say(f"| {study} | {label} | {tau:+.2f} | {n} | {' > '.join(common)} | {' > '.join(order)} |")


def main():
    out = []
    say = out.append
    g = "reports/generations/"

    say("## Warped-Slicer: combined IPC, gmean over the 30 pairs")
    for label, rel in [("fermi-ws", "reports/warped-slicer/metrics.json"),
                       ("a100", g + "warped-slicer-a100/metrics.json"),
                       ("h100", g + "warped-slicer-h100/metrics.json")]:
        m = load(rel)
        if m is None:
            say(f"{label}: (no {rel})")
            continue
        parts = []
        for den in ["left-over", "even", "spatial", "fcfs"]:
            v, n = ws(m, den=den)
            if n:
                parts.append(f"WS/{den} {pct(v)} (n={n})")
        lo_even, _ = ws(m, "even", "left-over")
        lo_sp, _ = ws(m, "spatial", "left-over")
        parts.append(f"even/left-over {pct(lo_even)}, spatial/left-over {pct(lo_sp)}")
        say(f"{label}: " + "; ".join(parts))

    say("")
    say("## Punyala: queue throughput vs spatial (Even), gmean over the mixes")
    for label, rel in [("gpgpusim-60sm", "reports/punyala/metrics.json"),
                       ("a100 quick", g + "punyala-a100-quick/metrics.json"),
                       ("h100 quick", g + "punyala-h100-quick/metrics.json"),
                       ("a100 full", g + "punyala-a100/metrics.json"),
                       ("h100 full", g + "punyala-h100/metrics.json")]:
        m = load(rel)
        if m is None:
            say(f"{label}: (no {rel})")
            continue
        for ways in sorted({c["ways"] for c in m["cells"]}):
            parts = []
            for p in ["profile-based", "ilp", "ilp-smra", "ilp-app"]:
                v, n = punyala(m, p, ways)
                if n:
                    vi, _ = punyala_ipc(m, p, ways)
                    parts.append(f"{p} T {pct(v)} / IPC {pct(vi)} (n={n})")
            say(f"{label} {ways}-way: " + "; ".join(parts))
        say(f"{label} classes: {punyala_classes(m)}")

    say("")
    say("## SiM: mean makespan_speedup vs sequential")
    own = load("reports/sim/metrics.json")
    for label, m, filt in [("k40c (all 3 arrival orders)", own, None),
                           ("k40c (a-first/b-first only)", own, staggered),
                           ("a100 quick", load(g + "sim-a100-quick/metrics.json"), None),
                           ("h100 quick", load(g + "sim-h100-quick/metrics.json"), None),
                           ("a100 full", load(g + "sim-a100/metrics.json"), None),
                           ("h100 full", load(g + "sim-h100/metrics.json"), None)]:
        if m is None:
            continue
        parts = []
        for cat in ["low-isu", "high-isu", None]:
            for p in ["sim", "mps", "pt"]:
                v, n = completion(m, p, category=cat, name_filter=filt)
                if n:
                    parts.append(f"{cat or 'all'} {p} {pct(v)} (n={n})")
        for cat in ["low-isu", None]:
            xs = []
            for w in m["workloads"]:
                if (cat and w["category"] != cat) or (filt and not filt(w["name"])):
                    continue
                r = runs_by_policy(w)
                if "sim" in r and "sequential" in r:
                    xs.append(r["sim"]["summary"]["antt"] / r["sequential"]["summary"]["antt"])
            if xs:
                parts.append(f"{cat or 'all'} sim ANTT {pct(mean(xs))} (n={len(xs)})")
        say(f"{label}: " + "; ".join(parts))
        say(f"{label} ISU alone: {isu_split(m)}")

    say("")
    say("## Slate: mean makespan_speedup vs time-slice (CUDA); slate/mps mean per pair")
    for label, rel in [("titanxp", "reports/slate/metrics.json"),
                       ("a100", g + "slate-a100/metrics.json"),
                       ("h100", g + "slate-h100/metrics.json"),
                       ("a100 quick", g + "slate-a100-quick/metrics.json"),
                       ("h100 quick", g + "slate-h100-quick/metrics.json")]:
        m = load(rel)
        if m is None:
            continue
        s, n = completion(m, "slate")
        p, _ = completion(m, "mps")
        r, _ = completion_ratio(m, "slate", "mps")
        say(f"{label}: slate/CUDA {pct(s)}, mps/CUDA {pct(p)}, slate/mps {pct(r)} (n={n})")

    say("")
    say("## UGPU: STP vs BP, gmean over the heterogeneous mixes")
    for label, rel in [("ugpu-80sm-hbm", "reports/ugpu/metrics.json"),
                       ("a100 quick", g + "ugpu-a100-quick/metrics.json"),
                       ("h100 quick", g + "ugpu-h100-quick/metrics.json"),
                       ("a100 full", g + "ugpu-a100/metrics.json"),
                       ("h100 full", g + "ugpu-h100/metrics.json")]:
        m = load(rel)
        if m is None:
            continue
        parts = []
        for num in ["ugpu", "ugpu-offline", "cd-search"]:
            v, n = ugpu(m, num)
            if n:
                parts.append(f"{num}/bp {pct(v)} (n={n})")
        say(f"{label}: " + "; ".join(parts))

    rankings(say, g)
    print("\n".join(out))


if __name__ == "__main__":
    sys.exit(main())
