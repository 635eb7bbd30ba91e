#!/usr/bin/env bash
# The H200 measurements of ../README.md ("A GUPS hog beside a victim, per mechanism") on the
# model: the kernels of ../../../punyala/hw/model/ with two CTAs of 1024 threads per SM (no
# shared-memory padding, as ../twoproc.cu and ../green2.cu launch them), each victim alone on
# its SMs and beside GUPS under MPS 50% + 50% (66 + 66 SMs), green contexts of 64 + 64 and MPS
# 30% (GUPS, 38 SMs) + 70% (the victim, 92 SMs).
# usage: run.sh [GPU] [OUT]   (defaults: models/h100.toml, results.json). Needs jq.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../../.." && pwd)
bin=${GPUMODEL:-$root/target/release/gpumodel}
gpu=${1:-$root/models/h100.toml}
out=${2:-$here/results.json}
src=$root/reports/punyala/hw/model
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
spec() { # name grid -> a copy of the spec with that grid and no shared-memory padding
  sed -e "s/^grid = .*/grid = $2/" -e '/^smem = /d' "$src/$1.toml" > "$tmp/$1-$2.toml"
  echo "$tmp/$1-$2.toml"
}
run() { # name window share param apps...
  local name=$1 window=$2 share=$3 param=$4; shift 4
  "$bin" -q run "$@" --gpu "$gpu" --share "$share" --policy-param "$param" --window "$window" \
    --threads 1 --sample 0 --json "$tmp/$name.json" > /dev/null
}
launch() { # file app-index pass -> cycles of that launch
  jq -e --argjson a "$2" --argjson p "$3" \
    '. as $r | [.apps[$a].kernels[] | select(.pass == $p and .end < $r.cycles)][0].cycles' "$1" \
    || { echo "run.sh: $1: launch $3 did not end in the window" >&2; exit 1; }
}
# victim, launch timed, window alone, window beside GUPS
jobs=("reuse 1 300000 1500000" "stream 0 300000 1500000")
for j in "${jobs[@]}"; do
  read -r v _ wa wc <<< "$j"
  run "$v.mps-alone" "$wa" mps mps.active_thread_percentage=50 "$(spec $v 132)" &
  run "$v.mps" "$wc" mps mps.active_thread_percentage=50 "$(spec gups 132)" "$(spec $v 132)" &
  wait
  run "$v.green-alone" "$wa" green-context green-context.sms=64 "$(spec $v 128)" &
  run "$v.green" "$wc" green-context green-context.sms=64 "$(spec gups 128)" "$(spec $v 128)" &
  wait
  # MPS hog 30% (38 SMs), victim 70% (92 SMs): each process launches two CTAs per SM it sees.
  run "$v.mps70-alone" "$wa" mps mps.active_thread_percentage=70 "$(spec $v 184)" &
  run "$v.mps70" "$wc" mps 'mps.active_thread_percentage=[30,70]' "$(spec gups 76)" "$(spec $v 184)" &
  wait
done
{
  echo '{"gpu": "'"${gpu#"$root"/}"'", "hardware_h200": {"mps": {"reuse": 0.96, "stream": 1.64}, "green": {"reuse": 1.09, "stream": 2.58}, "mps_30_70": {"reuse": 0.96, "stream": 1.42}}, "victims": {'
  first=1
  for j in "${jobs[@]}"; do
    read -r v p _ _ <<< "$j"
    ma=$(launch "$tmp/$v.mps-alone.json" 0 "$p"); mc=$(launch "$tmp/$v.mps.json" 1 "$p")
    ga=$(launch "$tmp/$v.green-alone.json" 0 "$p"); gc=$(launch "$tmp/$v.green.json" 1 "$p")
    sa=$(launch "$tmp/$v.mps70-alone.json" 0 "$p"); sc=$(launch "$tmp/$v.mps70.json" 1 "$p")
    [ $first = 1 ] || echo ','
    first=0
    printf '"%s": {"mps_alone": %s, "mps_beside_gups": %s, "mps_slowdown": %s, "green_alone": %s, "green_beside_gups": %s, "green_slowdown": %s, "mps_30_70_alone": %s, "mps_30_70_beside_gups": %s, "mps_30_70_slowdown": %s}' \
      "$v" "$ma" "$mc" "$(jq -n "$mc / $ma * 100 | round / 100")" "$ga" "$gc" "$(jq -n "$gc / $ga * 100 | round / 100")" \
      "$sa" "$sc" "$(jq -n "$sc / $sa * 100 | round / 100")"
  done
  echo '}}'
} | jq . > "$out"
jq -r '.victims | to_entries[] | "\(.key): MPS 50/50 \(.value.mps_slowdown)x, green 64/64 \(.value.green_slowdown)x, MPS 30/70 \(.value.mps_30_70_slowdown)x"' "$out"
