#!/usr/bin/env bash
# Issue 46 item 4: every suite's workload card on its paper's GPU and on a100 and h100, as
# findings (no pass/fail on the modern GPUs: the cards' tolerances are the papers'). Writes
# reports/generations/cards/<suite>-<gpu>.{json,md}; then scripts/cards_generations.py
# writes the README there (which benchmark changed class, and its measured figures).
#
#   bash scripts/cards_generations.sh [BIN]
set -uo pipefail
cd "$(dirname "$0")/.."
B=${1:-target/release/gpumodel}
OUT=reports/generations/cards
mkdir -p "$OUT"
for s in warped-slicer punyala slate sim ugpu; do
  for g in paper a100 h100; do
    gpu=(); [ "$g" != paper ] && gpu=(--gpu "$g")
    "$B" card "traces/$s" "${gpu[@]}" -q --json "$OUT/$s-$g.json" --markdown "$OUT/$s-$g.md" > /dev/null 2>&1
    rc=$?
    [ $rc -gt 1 ] && { echo "card $s on $g failed (exit $rc)" >&2; exit 1; }
    echo "$s $g done (exit $rc)"
  done
done
python3 scripts/cards_generations.py "$OUT"
