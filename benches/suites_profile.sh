#!/usr/bin/env bash
# Where the bundled suites' time goes: every synthetic kernel alone on its suite's GPU model,
# one thread, once; prints per kernel its seconds, share of all seconds, M warp-inst/s,
# nanoseconds per warp instruction and its memory intensity per warp instruction (L1 and L2
# accesses, DRAM bursts), slowest first, then each suite's total. Recorded in BENCHMARKS.md.
#
#   cargo build --release && bash benches/suites_profile.sh target/release/gpumodel
set -euo pipefail
BIN=${1:-target/release/gpumodel}
cd "$(dirname "$0")/.."
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
. benches/suite_kernels.sh
suite_kernels | while read -r dir model f; do
  j=$TMP/run.json
  # "simulated C cycles, I warp instructions in S s (R M warp-inst/s)"
  line=$("$BIN" run --threads 1 --gpu "$model" "$f" --json "$j" </dev/null 2>&1 | grep '^simulated')
  echo "$dir $(basename "$f" .toml) $model $(echo "$line" | awk '{print $2, $4, $8}')" \
    "$(counter l1_accesses "$j") $(counter l2_accesses "$j")" \
    "$(( $(counter dram_reads "$j") + $(counter dram_writes "$j") ))"
done | awk '
  { n++; suite[n] = $1; name[n] = $2; model[n] = $3; cyc[n] = $4; ins[n] = $5; sec[n] = $6
    l1[n] = $7; l2[n] = $8; dram[n] = $9; total += $6
    ts[$1] += $6; ti[$1] += $5 }
  END {
    printf "%-28s %-14s %7s %6s %7s %7s %6s %6s %7s\n", "kernel", "model", "s", "share", \
      "M/s", "ns/inst", "L1/i", "L2/i", "DRAM/i"
    # Slowest first (a selection sort keeps this portable awk).
    for (k = 1; k <= n; k++) done_[k] = 0
    for (r = 1; r <= n; r++) {
      b = 0
      for (k = 1; k <= n; k++) if (!done_[k] && (b == 0 || sec[k] > sec[b])) b = k
      done_[b] = 1
      printf "%-28s %-14s %7.2f %5.1f%% %7.2f %7.0f %6.2f %6.2f %7.2f\n", suite[b] "/" name[b], \
        model[b], sec[b], 100 * sec[b] / total, ins[b] / sec[b] / 1e6, 1e9 * sec[b] / ins[b], \
        l1[b] / ins[b], l2[b] / ins[b], dram[b] / ins[b]
    }
    for (s in ts) printf "suite %-14s %7.2f s %5.1f%% %6.2f M warp-inst/s\n", s, ts[s], \
      100 * ts[s] / total, ti[s] / ts[s] / 1e6
  }'
