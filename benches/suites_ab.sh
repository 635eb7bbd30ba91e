#!/usr/bin/env bash
# Whole-suite speed of two binaries, compared fairly on a noisy machine: every bundled
# synthetic kernel alone on its suite's GPU model, one thread, REPS runs per binary with the
# two binaries interleaved, best run per kernel and binary; prints M warp-inst/s per suite
# and the total for each binary. Recorded in BENCHMARKS.md.
#
#   bash benches/suites_ab.sh OLD_BIN NEW_BIN 3
set -euo pipefail
A=$(realpath "${1:?usage: suites_ab.sh OLD_BIN NEW_BIN [REPS]}")
B=$(realpath "${2:?usage: suites_ab.sh OLD_BIN NEW_BIN [REPS]}")
REPS=${3:-3}
cd "$(dirname "$0")/.."
. benches/suite_kernels.sh
suite_kernels | while read -r dir model f; do
  for _ in $(seq "$REPS"); do
    for bin in "$A" "$B"; do
      tag=$([ "$bin" = "$A" ] && echo old || echo new)
      # "simulated C cycles, I warp instructions in S s (R M warp-inst/s)"
      echo "$tag $dir $(basename "$f" .toml) $("$bin" run --threads 1 --gpu "$model" "$f" </dev/null 2>&1 | grep '^simulated')"
    done
  done
done | awk '
  { k = $1 " " $2 " " $3; s = $11
    if (!(k in best) || s < best[k]) { best[k] = s; ins[k] = $7 } }
  END {
    for (k in best) {
      split(k, a, " "); t[a[1]] += best[k]; n[a[1]] += ins[k]
      st[a[2] " " a[1]] += best[k]; sn[a[2] " " a[1]] += ins[k]
    }
    for (x in st) printf "%-24s %6.2f M warp-inst/s\n", x, sn[x] / st[x] / 1e6
    for (b in t) printf "all %-20s %6.2f M warp-inst/s (%.2f s)\n", b, n[b] / t[b] / 1e6, t[b]
  }' | sort
