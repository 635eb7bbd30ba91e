#!/bin/bash
# Detailed speed beside Accel-Sim, on the same host in one run (issue 47's bar: >= 150x over
# the reference kernels, none below 60x).
#
#   ACCEL_RUN=/work/accel/run.sh bash benches/vs_accel.sh BIN [BIN2 ...]
#
# Per reference kernel (../shared/reference/traces/kernels, all 12; gups alone runs 7.5 minutes
# in Accel-Sim on an idle 2-core VM, over 20 under load, 21.5 on the reference CSV's host;
# `KERNELS="..."` picks a subset): Accel-Sim once, through ACCEL_RUN (a script that takes a run
# name and a trace folder, runs Accel-Sim's SM7_QV100 there under `/usr/bin/time -v -o
# time.txt` and keeps the run in `runs/NAME` beside itself; see ../shared/reference/accel-sim.md
# and BENCHMARKS.md), then each BIN three times, interleaved, `run <kernel folder> --gpu qv100
# --threads 1 -q` (the .traceg.gz text: the reader is timed too, as Accel-Sim reads text);
# best of three. Prints a markdown table: seconds, and Accel-Sim's seconds over each BIN's,
# per kernel, over all of them (total time over total time, which gups dominates when it is
# in), over all but gups, and the geometric mean of the per-kernel ratios.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: ACCEL_RUN=... $0 BIN [BIN2 ...]" >&2; exit 2; }
: "${ACCEL_RUN:?set ACCEL_RUN to the Accel-Sim run script}"
HERE=$(cd "$(dirname "$0")/.." && pwd)
REF=${REF:-$HERE/../shared/reference/traces/kernels}
RUNS=$(cd "$(dirname "$ACCEL_RUN")" && pwd)/runs
KERNELS=${KERNELS:-"stream_copy fma_chain fma_ilp4 sfu_heavy int_imad smem_tiled random_gather l1_resident l2_resident atomics ridge_mixed gups"}
BINS=("$@")

wall() { # wall seconds of a command, to the millisecond
  local a b
  a=$(date +%s.%N)
  "$@" > /dev/null 2>&1
  b=$(date +%s.%N)
  echo "$a $b" | awk '{printf "%.3f", $2 - $1}'
}

elapsed() { # GNU time's "Elapsed (wall clock)" of a time.txt, in seconds
  awk -F': ' '/Elapsed/ {n = split($2, p, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + p[i]; printf "%.2f", s}' "$1"
}

head="| kernel | Accel-Sim s |"
sep="|---|---:|"
for b in "${BINS[@]}"; do head="$head $(basename "$b") s |"; sep="$sep---:|"; done
for b in "${BINS[@]}"; do head="$head $(basename "$b") |"; sep="$sep---:|"; done
echo "$head"
echo "$sep"
tot_a=0
gups_a=0
declare -a tot gups lg
for k in $KERNELS; do
  "$ACCEL_RUN" "speed-$k" "$REF/$k" > /dev/null
  a=$(elapsed "$RUNS/speed-$k/time.txt")
  declare -a best
  for i in "${!BINS[@]}"; do best[$i]=999999; done
  for _ in 1 2 3; do
    for i in "${!BINS[@]}"; do
      t=$(wall "${BINS[$i]}" run "$REF/$k" --gpu qv100 --threads 1 -q)
      best[$i]=$(echo "${best[$i]} $t" | awk '{print ($2 < $1) ? $2 : $1}')
    done
  done
  row="| $k | $a |"
  for i in "${!BINS[@]}"; do row="$row ${best[$i]} |"; done
  for i in "${!BINS[@]}"; do
    row="$row $(echo "$a ${best[$i]}" | awk '{printf "%.0fx", $1 / $2}') |"
    tot[$i]=$(echo "${tot[$i]:-0} ${best[$i]}" | awk '{print $1 + $2}')
    lg[$i]=$(echo "${lg[$i]:-0} $a ${best[$i]}" | awk '{print $1 + log($2 / $3)}')
    [ "$k" != gups ] || gups[$i]=${best[$i]}
  done
  [ "$k" != gups ] || gups_a=$a
  tot_a=$(echo "$tot_a $a" | awk '{print $1 + $2}')
  echo "$row"
done
row="| **all** | $tot_a |"
for i in "${!BINS[@]}"; do row="$row ${tot[$i]} |"; done
for i in "${!BINS[@]}"; do row="$row **$(echo "$tot_a ${tot[$i]}" | awk '{printf "%.0fx", $1 / $2}')** |"; done
echo "$row"
if [ "$gups_a" != 0 ]; then
  row="| all but gups | $(echo "$tot_a $gups_a" | awk '{print $1 - $2}') |"
  for i in "${!BINS[@]}"; do row="$row $(echo "${tot[$i]} ${gups[$i]}" | awk '{print $1 - $2}') |"; done
  for i in "${!BINS[@]}"; do
    row="$row $(echo "$tot_a $gups_a ${tot[$i]} ${gups[$i]}" | awk '{printf "%.0fx", ($1 - $2) / ($3 - $4)}') |"
  done
  echo "$row"
fi
n=$(echo $KERNELS | wc -w)
row="| geometric mean of the ratios | |"
for i in "${!BINS[@]}"; do row="$row |"; done
for i in "${!BINS[@]}"; do row="$row $(echo "${lg[$i]} $n" | awk '{printf "%.0fx", exp($1 / $2)}') |"; done
echo "$row"
