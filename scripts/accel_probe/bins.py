#!/usr/bin/env python3
"""Counts the events of a probe log (probe.patch) per time bin, application and kind.

usage: bins.py LOG [BIN_CYCLES] [KINDS]
  KINDS: comma-separated event letters (default M,L,D). Columns are KIND+APP(+r/w).
Example: bins.py runs/p_l1_resident+stream_copy/probe.txt 500 M,D
"""
import sys
from collections import defaultdict


def main():
    path = sys.argv[1]
    width = int(sys.argv[2]) if len(sys.argv) > 2 else 500
    kinds = (sys.argv[3] if len(sys.argv) > 3 else "M,L,D").split(",")
    bins = defaultdict(lambda: defaultdict(int))
    with open(path) as f:
        for line in f:
            ev = line.split()
            if not ev or ev[0] not in kinds or ev[0] == "I":
                continue
            t, app = int(ev[1]), ev[2]
            rw = "" if ev[0] == "D" else ("w" if ev[3] == "1" else "r")
            bins[t // width][ev[0] + app + rw] += 1
    cols = sorted({c for b in bins.values() for c in b})
    print("cycle " + " ".join(f"{c:>7}" for c in cols))
    for b in sorted(bins):
        print(f"{b * width:5d} " + " ".join(f"{bins[b][c]:7d}" for c in cols))


if __name__ == "__main__":
    main()
