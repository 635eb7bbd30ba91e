#!/usr/bin/env bash
# Whole-suite engine speed: every bundled synthetic kernel alone on its suite's GPU model, one
# thread, best of REPS runs per kernel; prints per suite the total warp instructions over the
# total seconds (M warp-inst/s) and each kernel's rate. Recorded in BENCHMARKS.md.
#
#   cargo build --release && bash benches/suites.sh target/release/gpumodel 3
set -euo pipefail
BIN=${1:-target/release/gpumodel}
REPS=${2:-3}
cd "$(dirname "$0")/.."
. benches/suite_kernels.sh
suite_kernels | while read -r dir model f; do
  for _ in $(seq "$REPS"); do
    # "simulated C cycles, I warp instructions in S s (R M warp-inst/s)"
    echo "$dir $(basename "$f" .toml) $("$BIN" run --threads 1 --gpu "$model" "$f" </dev/null 2>&1 | grep '^simulated')"
  done
done | awk '
  { k = $1 " " $2; i = $6; s = $10
    if (!(k in best) || s < best[k]) { best[k] = s; ins[k] = i; suite[k] = $1 } }
  END {
    for (k in best) {
      ti[suite[k]] += ins[k]; ts[suite[k]] += best[k]
      r[suite[k]] = r[suite[k]] sprintf(" %s=%.2f", substr(k, index(k, " ") + 1), ins[k] / best[k] / 1e6)
    }
    for (s in ti) printf "%s: %.2f M warp-inst/s (%d warp insts, %.2f s) |%s\n", s, ti[s] / ts[s] / 1e6, ti[s], ts[s], r[s]
  }' | sort
