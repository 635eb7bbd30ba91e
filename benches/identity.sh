#!/usr/bin/env bash
# Output-identity check for engine changes that must not change results: runs a fixed set of
# cases that cover every bundled model family, both schedulers, the sharing modes, the three
# run modes and the Accel-Sim reference traces, and writes each case's `run --json` (plus
# `validate --json`) into OUT. Compare two binaries with
#
#   bash benches/identity.sh OLD_BIN /tmp/old && bash benches/identity.sh NEW_BIN /tmp/new
#   diff -r /tmp/old /tmp/new && echo identical
#
# Grids of the large kernels are divided by 4 so that the whole set takes about a minute.
# `analyze` cases add budget mode and the policies' controllers.
set -euo pipefail
BIN=${1:?usage: identity.sh BIN OUT}
OUT=${2:?usage: identity.sh BIN OUT}
cd "$(dirname "$0")/.."
BIN=$(realpath "$BIN")
REF=../shared/reference/traces
mkdir -p "$OUT"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# A copy of a synthetic spec with its grid divided by $2.
small() {
  local f=$1 div=$2 out
  out=$TMP/$(basename "$(dirname "$f")")-$(basename "$f")
  # (A 2-D grid `[x, y]` has its y divided.)
  awk -v d="$div" '
    /^grid *= *\[/ { match($0, /, *[0-9]+/); y = substr($0, RSTART + 1, RLENGTH - 1) + 0
                     sub(/, *[0-9]+/, ", " (int(y / d) > 0 ? int(y / d) : 1)); print; next }
    /^grid *=/ { g = $3; n = int(g / d); if (n < 1) n = 1; print "grid = " n; next }
    { print }' "$f" >"$out"
  echo "$out"
}

# case NAME ARGS... : one `gpumodel run` whose JSON lands in OUT/NAME.json.
case_() {
  local name=$1
  shift
  "$BIN" run -q --threads 1 "$@" --json "$OUT/$name.json" >/dev/null 2>&1
}

WS=traces/warped-slicer
case_ ws-hot-lbm --gpu fermi-ws $WS/hot.toml $WS/lbm.toml
case_ ws-hot-lbm-even --gpu fermi-ws --share even $WS/hot.toml $WS/lbm.toml
case_ ws-mm-blk-spatial --gpu fermi-ws --share spatial $WS/mm.toml $WS/blk.toml
case_ ws-mvp-bfs-timeslice --gpu fermi-ws --share time-slice --window 60000 $WS/mvp.toml $WS/bfs.toml
case_ ws-knn-nn-rr --gpu fermi-ws --share round-robin $WS/knn.toml $WS/nn.toml
case_ ws-lbm-lrr --gpu fermi-ws --set sm.scheduler=lrr $WS/lbm.toml
case_ pun-gups-lud --gpu gpgpusim-60sm --window 30000 traces/punyala/gups.toml traces/punyala/lud.toml
case_ pun-spmv --gpu gpgpusim-60sm "$(small traces/punyala/spmv.toml 4)"
case_ ugpu-lavamd --gpu ugpu-80sm-hbm "$(small traces/ugpu/lavamd.toml 4)"
case_ ugpu-pvc-cp --gpu ugpu-80sm-hbm "$(small traces/ugpu/pvc.toml 8)" "$(small traces/ugpu/cp.toml 8)"
case_ slate-gs --gpu titanxp "$(small traces/slate/gs.toml 4)"
case_ sim-nb-fd --gpu k40c traces/sim/nb.toml traces/sim/fd.toml
case_ ex-stream --gpu qv100 traces/examples/stream_copy.toml
case_ ex-gather --gpu qv100 traces/examples/random_gather.toml
case_ ex-smem-l1 --gpu qv100 traces/examples/smem_tiled.toml traces/examples/l1_resident.toml
# Budget mode with every policy (Warped-Slicer sampling, the oracle's plans) and Punyala's
# SM reallocation controller: metrics.json of each. (SM handovers by draining and by context
# switch are covered by `cargo test --release --test engine`; run it too.)
an() {
  local name=$1
  shift
  "$BIN" analyze -q --threads 1 "$@" -o "$TMP/$name" >/dev/null 2>&1
  cp "$TMP/$name/metrics.json" "$OUT/$name.json"
}
an analyze-all --apps hot,lbm --policies all --window 40000 --policy-param warped-slicer.warmup=5000 --policy-param warped-slicer.sample=3000 --policy-param ws-ilp.warmup=5000 --policy-param ws-ilp.sample=3000
an analyze-smra --apps mm,lbm --policies left-over,smra --window 40000
if [ -d "$REF" ]; then
  case_ ref-atomics --gpu qv100 "$REF/kernels/atomics"
  case_ ref-l2-gather --gpu qv100 --split-streams "$REF/pairs/l2_resident+random_gather"
  "$BIN" validate -q --threads 2 ../shared/reference --json >"$OUT/validate.json"
fi
echo "wrote $(ls "$OUT" | wc -l) results to $OUT"
