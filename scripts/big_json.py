#!/usr/bin/env python3
"""Large but valid inputs for measuring `gpumodel report` and `gpumodel merge` (issue 44,
BENCHMARKS.md "Reading large results"), made by replicating real records; written piece
by piece, so this script itself stays small in memory.

  big_json.py metrics SRC.json OUT.json MB
      SRC's `workloads` repeated (names suffixed `#k`) until OUT is about MB megabytes,
      pretty-printed with two-space indents as `study` and `merge` write it.
  big_json.py shards SRC_DIR OUT_DIR MB
      SRC_DIR holds shard-I-of-N.json of one study without sweep, curves, solo or slice
      jobs (runs only); its tasks and run results are repeated (names suffixed `#k`) and
      dealt round-robin again into N shards of about MB megabytes in all, compact as
      `study --shard` writes them.
"""
import glob
import json
import os
import sys


def dump(v):
    return json.dumps(v, separators=(",", ":"))


def pretty(v, depth):
    """`v` indented as serde_json's pretty printer does, starting at `depth` levels."""
    text = json.dumps(v, indent=2)
    return text.replace("\n", "\n" + "  " * depth)


def metrics(src, out, mb):
    v = json.load(open(src))
    work = v.pop("workloads")
    one = sum(len(pretty(w, 2)) + 6 for w in work)
    copies = max(1, mb * 1_000_000 // one)
    with open(out, "w") as f:
        f.write("{\n")
        for k, x in v.items():
            f.write("  " + dump(k) + ": " + pretty(x, 1) + ",\n")
        f.write('  "workloads": [')
        sep = "\n"
        for c in range(copies):
            for w in work:
                w = dict(w, name=f"{w['name']}#{c}")
                f.write(sep + "    " + pretty(w, 2))
                sep = ",\n"
        f.write("\n  ]\n}\n")


def shards(src, out, mb):
    files = [json.load(open(p)) for p in sorted(glob.glob(os.path.join(src, "shard-*.json")))]
    n = files[0]["of"]
    assert len(files) == n, "need every shard of the set"
    (outline,) = files[0]["outlines"]
    assert not outline["point"] and not outline["curve_points"]
    assert outline["solo"] == 0 and outline["slices"] == 0
    runs = dict(j for f in files for j in f["outputs"])
    jobs = files[0]["jobs"]
    assert sorted(runs) == list(range(jobs))
    one = sum(len(dump(runs[j])) for j in range(jobs))
    copies = max(1, mb * 1_000_000 // one)
    tasks = [
        dict(t, name=f"{t['name']}#{c}") for c in range(copies) for t in outline["tasks"]
    ]
    big = dict(outline, tasks=tasks)
    os.makedirs(out, exist_ok=True)
    for f in files:
        i = f["shard"]
        head = {k: x for k, x in f.items() if k not in ("outlines", "outputs")}
        head["jobs"] = jobs * copies
        with open(os.path.join(out, f"shard-{i}-of-{n}.json"), "w") as w:
            w.write("{")
            for k, x in head.items():
                w.write(dump(k) + ":" + dump(x) + ",")
            w.write('"outlines":[' + dump(big) + '],"outputs":[')
            first = True
            for j in range(i - 1, jobs * copies, n):
                w.write(("" if first else ",") + dump([j, runs[j % jobs]]))
                first = False
            w.write("]}\n")


if __name__ == "__main__":
    what, src, out, mb = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    {"metrics": metrics, "shards": shards}[what](src, out, mb)
