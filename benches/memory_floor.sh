#!/usr/bin/env bash
# How fast could a kernel run if the SM model cost nothing? For each kernel given, runs it
# alone under callgrind (one thread) and splits the instructions the simulator executed
# into the memory side — everything below the SM: L1, crossbar, L2, DRAM and the delivery
# of data back to warps (`MemSys::load/store/atomic` as called by the SM, `run_channel`,
# `Engine::drain_mem`) — and the rest (SM issue, dispatch, events). Prints per kernel the
# simulator instructions per warp instruction of each side, the DRAM bursts per warp
# instruction, the memory side's cost per DRAM burst, and the ceiling in M warp-inst/s that
# the memory side alone allows at the native speed measured for that run (instructions per
# second of an uninstrumented run of the same binary; median of 3).
#
# GRID_DIV=N runs each synthetic kernel with its grid divided by N (the first dimension of
# a 2-D grid), so that callgrind's ~50x slow-down stays affordable; the cost per warp
# instruction hardly depends on the grid once every SM is busy.
#
# Needs valgrind. Recorded in BENCHMARKS.md ("Eighth round").
#
#   GRID_DIV=4 bash benches/memory_floor.sh target/release/gpumodel \
#     MODEL KERNEL.toml [MODEL KERNEL.toml ...]
set -euo pipefail
BIN=$(realpath "${1:?usage: memory_floor.sh BIN MODEL KERNEL.toml ...}")
shift
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
. "$(dirname "$0")/suite_kernels.sh"
# Largest inclusive count of function $1 in callgrind_annotate output $2 (a function is
# listed once per file it was inlined from).
incl() {
  awk -v f=":gpumodel::$1" 'index($0, f) && (substr($0, index($0, f) + length(f), 1) ~ /^( |)$/) {
    gsub(",", "", $1); if ($1 + 0 > m) m = $1 + 0 } END { print m + 0 }' "$2"
}
printf "%-18s %-14s %9s %8s %8s %8s %9s %9s\n" kernel model "warp-inst" "mem Ir/i" "SM Ir/i" \
  "DRAM/i" "Ir/burst" "ceil M/s"
while [ $# -ge 2 ]; do
  model=$1 f=$2
  shift 2
  if [ "${GRID_DIV:-1}" != 1 ]; then
    g=$TMP/$(basename "$f")
    awk -v d="$GRID_DIV" '!done && /^grid *=/ {
      match($0, /[0-9]+/); n = substr($0, RSTART, RLENGTH); n = int(n / d); if (n < 1) n = 1
      $0 = substr($0, 1, RSTART - 1) n substr($0, RSTART + RLENGTH); done = 1 } { print }' "$f" >"$g"
    f=$g
  fi
  out=$TMP/cg.out
  valgrind --tool=callgrind --callgrind-out-file="$out" "$BIN" run -q --threads 1 \
    --gpu "$model" "$f" --json "$TMP/run.json" >/dev/null 2>&1
  ann=$TMP/ann.txt
  callgrind_annotate --inclusive=yes "$out" >"$ann" 2>/dev/null
  total=$(awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}' "$ann")
  mem=0
  for fn in engine::memsys::MemSys::load engine::memsys::MemSys::store \
    engine::memsys::MemSys::atomic engine::memsys::MemSys::run_channel \
    engine::sim::Engine::drain_mem; do
    mem=$((mem + $(incl "$fn" "$ann")))
  done
  insts=$(counter warp_insts "$TMP/run.json")
  bursts=$(($(counter dram_reads "$TMP/run.json") + $(counter dram_writes "$TMP/run.json")))
  # Native speed of the same run: simulator instructions per second.
  secs=$(for _ in 1 2 3; do
    /usr/bin/time -f %U "$BIN" run -q --threads 1 --gpu "$model" "$f" 2>&1 >/dev/null | tail -1
  done | sort -n | sed -n 2p)
  awk -v k="$(basename "$f" .toml)" -v m="$model" -v i="$insts" -v t="$total" -v mem="$mem" \
    -v b="$bursts" -v s="$secs" 'BEGIN {
      rate = t / s
      printf "%-18s %-14s %9d %8.0f %8.0f %8.2f %9.0f %9.2f\n", k, m, i, mem / i, (t - mem) / i,
        b / i, (b > 0 ? mem / b : 0), i / (mem / rate) / 1e6 }'
done
