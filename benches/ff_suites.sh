#!/usr/bin/env bash
# Fast-forward against detailed on every bundled synthetic kernel alone (suite model, one
# thread, no occupancy samples), optionally with the first grid dimension scaled by SCALE
# (integer grids only). Prints per kernel: suite, kernel, detailed cycles, fast-forward
# cycles, error %, detailed s, fast-forward s, warp instructions (both), skipped cycles,
# jumps, what ended them. Recorded in BENCHMARKS.md.
#
#   bash benches/ff_suites.sh target/release/gpumodel [SCALE]
#
# GPU runs every kernel on that model instead of its suite's.
# FF_ARGS adds fast-forward options, e.g. FF_ARGS="--ff-age true --ff-stride 32".
set -euo pipefail
cd "$(dirname "$0")/.."
. benches/suite_kernels.sh
B=$(realpath "${1:?usage: ff_suites.sh BIN [SCALE]}"); S=${2:-1}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
suite_kernels | while read -r dir model f; do
  k=$(basename "$f" .toml)
  if [ "$S" != 1 ]; then
    case "$(grep -m1 -E "^grid *=" "$f")" in *[[]*) continue;; esac  # grids of 2-3 dimensions are not scaled
    g=$(grep -m1 -E '^grid *=' "$f" | sed 's/.*= *//; s/ .*//')
    sed "0,/^grid *=.*/s//grid = $((g*S))/" "$f" > "$tmp/$k.toml"; f=$tmp/$k.toml
  fi
  model=${GPU:-$model}
  a=$("$B" run --threads 1 --sample 0 --gpu "$model" "$f" --json "$tmp/d.json" </dev/null 2>&1 | grep '^simulated')
  b=$("$B" run --threads 1 --sample 0 --gpu "$model" "$f" --fast-forward ${FF_ARGS:-} --json "$tmp/f.json" </dev/null 2>&1 | grep '^simulated')
  ca=$(echo "$a" | awk '{print $2}'); cb=$(echo "$b" | awk '{print $2}')
  wa=$(echo "$a" | awk '{print $8}'); wb=$(echo "$b" | awk '{print $8}')
  ia=$(echo "$a" | awk '{print $4}'); ib=$(echo "$b" | awk '{print $4}')
  fc=$(python3 -c "import json; d=json.load(open('$tmp/f.json')); f=d.get('fast_forward') or {}; print(f.get('cycles',0), len(f.get('jumps',[])), ','.join(sorted(set(j['ended_by'] for j in f.get('jumps',[])))) or '-')")
  echo "$dir $k $ca $cb $(python3 -c "print(f'{($cb-$ca)/$ca*100:+.2f}')") $wa $wb $ia $ib $fc"
done
