#!/usr/bin/env bash
# Issue 49, item 5: the production mechanisms (MIG, MPS with active-thread
# percentages, MPS static partitions, green contexts, time slicing) against the research
# policies that run on each mix, with `gpumodel advise`, on the cross-generation suites
# (reports/generations/) on a100 and h100. One mix per suite: a memory-heavy application,
# a compute-heavy one and (for three-way mixes) a third, by the suites' own classes.
#
#   bash scripts/production_study.sh                 # every mix, both GPUs, both objectives
#   ONLY=ugpu GPUS=h100 OBJECTIVES=stp bash scripts/production_study.sh   # one case
#
# Writes reports/production/<gpu>/<mix>-<objective>/ (metrics.json, advise.csv, advise.svg,
# stdout.txt) and reports/production/summary.tsv: per case the recommendation and the best
# configuration of each mechanism. Measured on the shared 2-core VM (loaded): the two-
# application slate case on a100 (37 of 68 configurations) in 50 s
# (`ONLY=slate GPUS=a100 OBJECTIVES=stp`), a three-application case (ugpu on h100, 92 of 270)
# in 4 min 10 s (docs/advise.md). The whole set (5 mixes x 2 GPUs x 2 objectives, 20 cases)
# is about an hour there: run it on a bigger host, or shard a case with
# `advise --shard I/N` and `advise --merge`.
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=${GPUMODEL:-target/release/gpumodel}
OUT=${OUT:-reports/production}
WINDOW=${WINDOW:-30000}
GPUS=${GPUS:-a100 h100}
OBJECTIVES=${OBJECTIVES:-stp fairness}
ONLY=${ONLY:-}

# name:apps (paths, so that names shared by two suites are unambiguous). Classes from each
# suite's suite.toml / CARD.md.
MIXES=(
  # UGPU: memory-bound lbm, compute-bound cp, hotspot.
  "ugpu:traces/ugpu/lbm.toml,traces/ugpu/cp.toml,traces/ugpu/hotspot.toml"
  # Warped-Slicer: lbm (memory), hot (compute), blk.
  "warped-slicer:traces/warped-slicer/lbm.toml,traces/warped-slicer/hot.toml,traces/warped-slicer/blk.toml"
  # Slate: tr (L_C/H_M) beside mm (H_C/M_M), the complementary pair Slate co-runs.
  "slate:traces/slate/tr.toml,traces/slate/mm.toml"
  # SiM: low-ISU fd and pf beside high-ISU md.
  "sim:traces/sim/fd.toml,traces/sim/md.toml,traces/sim/pf.toml"
  # Punyala (scaled for each GPU by reports/generations/traces/make.sh): blk (M), bfs2 (C),
  # bp (MC on gpgpusim-60sm).
  "punyala:reports/generations/traces/punyala-GPU/blk.toml,reports/generations/traces/punyala-GPU/bfs2.toml,reports/generations/traces/punyala-GPU/bp.toml"
)

[ -x "$BIN" ] || cargo build --release
mkdir -p "$OUT"
summary="$OUT/summary.tsv"
printf 'gpu\tmix\tobjective\tseconds\tsimulated\tfeasible\trecommendation\tbest per mechanism\n' > "$summary"
for gpu in $GPUS; do
  for mix in "${MIXES[@]}"; do
    name=${mix%%:*}
    apps=${mix#*:}
    apps=${apps//GPU/$gpu}
    [ -n "$ONLY" ] && [ "$ONLY" != "$name" ] && continue
    for obj in $OBJECTIVES; do
      dir="$OUT/$gpu/$name-$obj"
      mkdir -p "$dir"
      start=$(date +%s)
      # A case that fails is recorded as such and the others still run.
      if ! "$BIN" advise --apps "$apps" --gpu "$gpu" --objective "$obj" --window "$WINDOW" \
        -q -o "$dir" > "$dir/stdout.txt" 2> "$dir/stderr.txt"; then
        printf '%s\t%s\t%s\tFAILED: %s\n' "$gpu" "$name" "$obj" "$(tail -1 "$dir/stderr.txt")" >> "$summary"
        echo "$gpu $name $obj: FAILED"
        continue
      fi
      secs=$(( $(date +%s) - start ))
      rec=$(sed -n 's/^Recommendation: //p' "$dir/stdout.txt")
      counts=$(sed -n 's/^simulated \([0-9]*\) of \([0-9]*\) feasible.*/\1\t\2/p' "$dir/stdout.txt")
      best=$(sed -n 's/^  Best of each mechanism by [^:]*: //p' "$dir/stdout.txt")
      printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$gpu" "$name" "$obj" "$secs" "$counts" "$rec" "$best" >> "$summary"
      echo "$gpu $name $obj: ${secs} s: $rec"
    done
  done
done
echo "wrote $summary"
