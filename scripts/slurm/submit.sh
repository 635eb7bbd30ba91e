#!/usr/bin/env bash
# Submits a gpumodel study to Slurm as an array of N shards plus a merge job that runs once
# every shard has succeeded.
#   scripts/slurm/submit.sh STUDY.toml N OUT [sbatch options...]
# Shard files go to OUT/shards, job logs to OUT/slurm-logs, the merged metrics.json and
# figures to OUT. The sbatch options (--partition, --account, --time, --cpus-per-task...)
# apply to both jobs. Binary: $GPUMODEL, else target/release/gpumodel of this checkout;
# it and OUT must be on a file system the compute nodes share.
set -euo pipefail

usage() { echo "usage: $0 STUDY.toml N OUT [sbatch options...]" >&2; exit 2; }
[ $# -ge 3 ] || usage
study=$1 n=$2 out=$3
shift 3
[[ $n =~ ^[1-9][0-9]*$ ]] || { echo "$0: N must be a positive integer, got '$n'" >&2; exit 2; }
[ -f "$study" ] || { echo "$0: no study file $study" >&2; exit 2; }
command -v sbatch >/dev/null || { echo "$0: sbatch not found (not on a Slurm login node?)" >&2; exit 1; }

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
gpumodel=${GPUMODEL:-$repo/target/release/gpumodel}
[ -x "$gpumodel" ] || { echo "$0: no gpumodel binary at $gpumodel (run cargo build --release, or set GPUMODEL)" >&2; exit 1; }

study=$(cd -- "$(dirname -- "$study")" && pwd)/$(basename -- "$study")
gpumodel=$(cd -- "$(dirname -- "$gpumodel")" && pwd)/$(basename -- "$gpumodel")
mkdir -p -- "$out/shards" "$out/slurm-logs"
out=$(cd -- "$out" && pwd)
# sbatch expands %-patterns (%j, %a, ...) in --output: a literal % in OUT is written %%.
logs=${out//%/%%}/slurm-logs
# Shard files of an earlier run with another N would make the merge refuse the folder.
stale=$(find -- "$out/shards" -maxdepth 1 -name 'shard-*-of-*.json' ! -name "shard-*-of-$n.json" | head -1)
[ -z "$stale" ] || { echo "$0: $out/shards holds shards of another run ($stale); remove them first" >&2; exit 1; }
export GPUMODEL=$gpumodel

array=$(sbatch --parsable --array="1-$n" --output="$logs/shard-%a.out" "$@" \
    "$here/study-shards.sbatch" "$study" "$out/shards" "$n")
array=${array%%;*}
merge=$(sbatch --parsable --dependency="afterok:$array" --kill-on-invalid-dep=yes \
    --output="$logs/merge.out" "$@" "$here/merge.sbatch" "$out/shards" "$out")
merge=${merge%%;*}
echo "shards: $array (array 1-$n, writes $out/shards)"
echo "merge: $merge (after every shard succeeds, writes $out/metrics.json)"
