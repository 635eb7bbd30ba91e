#!/usr/bin/env bash
# How much UGPU's outcome for one mix depends on where its first reallocation lands:
# a mix (BH + CP by default) on ugpu-80sm-hbm, `--share ugpu`, one epoch (the first
# reallocation) at E = 4.90 .. 5.10 M cycles, an 8 M-cycle window, every run in detail; then
# E = 5.00 M fast-forwarded (co-run strides 32 and 8). Writes a TSV here: per run, each
# application's warp instructions in the window, the first application's pass time after the
# migration (median of its last five whole passes) and its mean live warps over the last
# 1 M cycles.
#
# usage: run.sh [BIN]     (default target/release/gpumodel; ~6 minutes on 2 cores; needs jq)
# APPS="ai/lstm dxtc" OUT=results-lstm-dxtc.tsv run.sh: another mix (specs under traces/ugpu/,
# the first is the one whose passes and warps are reported); OUT defaults to results.tsv.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../../.." && pwd)
bin=${1:-$root/target/release/gpumodel}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
W=8000000
read -ra apps <<< "${APPS:-bh cp}"
files=(); for a in "${apps[@]}"; do files+=("$root/traces/ugpu/$a.toml"); done
out=$here/${OUT:-results.tsv}
run() { # name epoch extra-args...
  local name=$1 e=$2; shift 2
  "$bin" -q run --threads 1 --gpu ugpu-80sm-hbm --share ugpu \
    --policy-param ugpu.epoch="$e" --policy-param ugpu.profile_cycles="$e" \
    --window "$W" "${files[@]}" \
    --json "$tmp/$name.json" "$@" > /dev/null
}
jobs=(
  "detail-4900000 4900000 --no-fast-forward"
  "detail-4950000 4950000 --no-fast-forward"
  "detail-5000000 5000000 --no-fast-forward"
  "detail-5050000 5050000 --no-fast-forward"
  "detail-5100000 5100000 --no-fast-forward"
  "ff32-5000000 5000000 --fast-forward --ff-corun-stride 32"
  "ff8-5000000 5000000 --fast-forward --ff-corun-stride 8"
)
# Two runs at a time; a run that fails stops the script (set -e on its wait).
pids=()
wait_all() { for p in "${pids[@]}"; do wait "$p"; done; pids=(); }
for j in "${jobs[@]}"; do
  read -r name e args <<< "$j"
  # shellcheck disable=SC2086
  run "$name" "$e" $args &
  pids+=($!)
  if (( ${#pids[@]} == 2 )); then wait_all; fi
done
wait_all
{
  printf 'run\tepoch\tfirst_warp_insts\tsecond_warp_insts\tfirst_pass_after\tfirst_live_warps\n'
  for j in "${jobs[@]}"; do
    read -r name e _ <<< "$j"
    jq -r --arg n "$name" --argjson e "$e" --argjson w "$W" '
      ([.apps[0].kernels[] | select(.end < $w) | .cycles] | .[-5:] | sort | .[2]) as $pass |
      ([.timeline[] | select(.cycle >= $w - 1000000) | .warps[0]] | add / length | floor) as $live |
      [$n, $e, .apps[0].counters.warp_insts, .apps[1].counters.warp_insts, $pass, $live] | @tsv' \
      "$tmp/$name.json"
  done
} > "$out"
cat "$out"
