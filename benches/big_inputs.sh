#!/usr/bin/env bash
# Peak RSS and wall time of `report` on a ~1 GB metrics.json and `merge` on a ~1 GB shard
# set, for each gpumodel binary given (issue 44; recorded in BENCHMARKS.md, "Reading large
# results"). The inputs are made by scripts/big_json.py from real records: the committed
# UGPU metrics.json, and the two shards of a 4-workload, 3-policy study run here.
#
#   bash benches/big_inputs.sh WORK_DIR BINARY [BINARY ...]
set -euo pipefail
work=$1; shift
repo=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$work" && cd "$work"
first=$1
if [ ! -f r1g.json ]; then
  python3 "$repo/scripts/big_json.py" metrics "$repo/reports/ugpu/metrics.json" r1g.json 1000
fi
if [ ! -d s1g ]; then
  cat > study.toml <<TOML
name = "tiny"
gpu = "fermi-ws"
window = 2000
policies = ["left-over", "even", "spatial"]
baseline = "left-over"
[[benches]]
name = "blk"
path = "$repo/traces/warped-slicer/blk.toml"
class = "memory"
[[benches]]
name = "hot"
path = "$repo/traces/warped-slicer/hot.toml"
class = "compute"
[[groups]]
name = "pair"
kind = "cross"
a = ["blk", "hot"]
b = ["hot", "blk"]
TOML
  for i in 1 2; do "$first" -q study study.toml --shard $i/2 --out shards; done
  python3 "$repo/scripts/big_json.py" shards shards s1g 1000
fi
measure() { # label command...
  local l=$1; shift
  rm -rf out; mkdir -p out
  /usr/bin/time -v "$@" 2>&1 >/dev/null | grep -E "Maximum resident|Elapsed|Exit status" | sed "s/^/$l: /"
}
for b in "$@"; do
  measure "report $b" "$b" report r1g.json -o out
  measure "merge $b" "$b" -q merge s1g -o out
done
