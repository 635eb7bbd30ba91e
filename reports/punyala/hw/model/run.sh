#!/usr/bin/env bash
# The H100 GUPS co-run experiment of ../gups_corun.cu on the model: each victim alone, beside
# GUPS with left-over dispatch (GUPS launched first takes 66 SMs, the victim the other 66),
# and beside GUPS with spatial SM halves. Like the hardware (which times a second launch after
# a warm-up one), the L2-reuse victim is timed on its second launch: `run --window` relaunches a
# finished application, and the JSON lists every launch (`pass`). GUPS never finishes.
#
# usage: run.sh [GPU] [OUT] [--set KEY=VALUE ...]   (defaults: models/h100.toml, results.json)
# VICTIMS="reuse" runs only the victims named; GUPS=FILE replaces the hog. Needs jq. About 5 minutes on two cores.
set -euo pipefail
main() {
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../../.." && pwd)
bin=${GPUMODEL:-$root/target/release/gpumodel}
gpu=${1:-$root/models/h100.toml}
out=${2:-$here/results.json}
shift $(( $# < 2 ? $# : 2 ))
sets=("$@")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
[ -z "${KEEP:-}" ] || trap 'mkdir -p "$KEEP"; cp "$tmp"/*.json "$KEEP"/; rm -rf "$tmp"' EXIT
# victim, the launch timed (0: first, 1: second), window alone, window beside GUPS (cycles;
# enough for that launch to end). The streaming victim is timed on its second launch too: a
# 64 MiB sweep misses the L2 every time, and the first launch walks its 32 pages cold.
all=(
  "reuse 1 100000 1000000"
  "stream 1 500000 2000000"
  "compute 1 80000 250000"
)
# VICTIMS="reuse stream" runs only those
jobs=()
for j in "${all[@]}"; do
  [[ " ${VICTIMS:-reuse stream compute} " == *" ${j%% *} "* ]] && jobs+=("$j")
done
run() { # name share window apps...
  local name=$1 share=$2 window=$3; shift 3
  "$bin" -q run "$@" --gpu "$gpu" "${sets[@]}" --share "$share" --window "$window" \
    --threads 1 --sample 0 --json "$tmp/$name.json" > /dev/null
}
pids=()
for j in "${jobs[@]}"; do
  read -r v _ wa wc <<< "$j"
  run "$v.alone" left-over "$wa" "$here/$v.toml" &
  run "$v.leftover" left-over "$wc" "${GUPS:-$here/gups.toml}" "$here/$v.toml" &
  run "$v.spatial" spatial "$wc" "${GUPS:-$here/gups.toml}" "$here/$v.toml" &
  wait
done
launch() { # file app-index pass -> cycles of that launch of the victim
  jq -e --argjson a "$2" --argjson p "$3" \
    '. as $r | [.apps[$a].kernels[] | select(.pass == $p and .end < $r.cycles)][0].cycles' \
    "$1" \
    || { echo "run.sh: $1: the victim's launch $3 did not end in the window; raise it" >&2; exit 1; }
}
{
  echo '{"gpu": "'"${gpu#"$root"/}"'", "sets": "'"${sets[*]:-}"'", "hardware": {"reuse": 6.06, "stream": 3.83, "compute": 1.01}, "victims": {'
  first=1
  for j in "${jobs[@]}"; do
    read -r v p _ _ <<< "$j"
    a=$(launch "$tmp/$v.alone.json" 0 "$p")
    l=$(launch "$tmp/$v.leftover.json" 1 "$p")
    s=$(launch "$tmp/$v.spatial.json" 1 "$p")
    g=$(jq '.apps[0].rates.dram_bytes_per_cycle' "$tmp/$v.leftover.json")
    ha=$(jq '.apps[0].rates.l2_hit_rate * 1000 | round / 1000' "$tmp/$v.alone.json")
    hl=$(jq '.apps[1].rates.l2_hit_rate * 1000 | round / 1000' "$tmp/$v.leftover.json")
    [ $first = 1 ] || echo ','
    first=0
    printf '"%s": {"alone_cycles": %s, "leftover_cycles": %s, "spatial_cycles": %s, "leftover_slowdown": %s, "spatial_slowdown": %s, "gups_dram_bytes_per_cycle": %s, "l2_hit_rate_alone": %s, "l2_hit_rate_leftover": %s}' \
      "$v" "$a" "$l" "$s" "$(jq -n "$l / $a * 100 | round / 100")" "$(jq -n "$s / $a * 100 | round / 100")" "$g" "$ha" "$hl"
  done
  echo '}}'
} | jq . > "$out"
jq -r '.victims | to_entries[] | "\(.key): left-over \(.value.leftover_slowdown)x, spatial \(.value.spatial_slowdown)x"' "$out"
}
main "$@"
exit
