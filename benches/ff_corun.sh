#!/usr/bin/env bash
# Co-run fast-forward against detailed: fixed windows (default 5 M cycles) of 2 and 4
# co-running applications under the sharing policies the studies use, each on its paper's
# GPU model, one thread, occupancy samples on (as `run` takes them). Prints per case: GPU,
# policy, applications, window, detailed s, fast-forward s, speed-up, skipped %, jumps (what
# ended them), and per application its warp instructions in the window detailed and
# fast-forwarded with the difference. Seconds are CPU seconds (user + system; the runs are
# single-threaded, so on an idle host they are the wall time, and on a shared one they
# still compare). Recorded in BENCHMARKS.md ("Co-run fast-forward").
#
#   bash benches/ff_corun.sh target/release/gpumodel [WINDOW]
#
# CASES=path/to/file replaces the built-in case list (lines: GPU POLICY PARAMS APP...;
# PARAMS is "-" or comma-separated POLICY.KEY=VALUE). FF_ARGS adds fast-forward options.
# DETAILED_DIR=dir keeps each case's detailed run (JSON and CPU seconds) there and reuses
# it on the next call: for comparing binaries that differ only in fast-forward, whose
# detailed runs are the same (a detailed run at 25 M cycles takes minutes a case).
set -euo pipefail
cd "$(dirname "$0")/.."
B=$(realpath "${1:?usage: ff_corun.sh BIN [WINDOW]}"); W=${2:-5000000}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cases() {
  if [ -n "${CASES:-}" ]; then grep -v '^#' "$CASES"; return; fi
  cat <<'EOF'
fermi-ws even - warped-slicer/hot warped-slicer/lbm
fermi-ws spatial - warped-slicer/hot warped-slicer/lbm
fermi-ws left-over - warped-slicer/mm warped-slicer/knn
fermi-ws warped-slicer - warped-slicer/hot warped-slicer/lbm
fermi-ws warped-slicer - warped-slicer/dxt warped-slicer/mvp
fermi-ws left-over - warped-slicer/hot warped-slicer/lbm warped-slicer/mm warped-slicer/knn
gpgpusim-60sm even - punyala/bp punyala/gups
gpgpusim-60sm smra - punyala/hs punyala/spmv
gpgpusim-60sm spatial - punyala/fft punyala/lud punyala/ray punyala/sad
ugpu-80sm-hbm ugpu ugpu.epoch=1000000,ugpu.profile_cycles=200000 ugpu/pvc ugpu/dxtc
ugpu-80sm-hbm bp - ugpu/lbm ugpu/cp ugpu/srad ugpu/mri-q
fermi-ws even - warped-slicer/mm warped-slicer/knn warped-slicer/dxt warped-slicer/mvp
fermi-ws warped-slicer - warped-slicer/hot warped-slicer/lbm warped-slicer/mm warped-slicer/knn
gpgpusim-60sm smra - punyala/bp punyala/gups punyala/hs punyala/spmv
ugpu-80sm-hbm ugpu ugpu.epoch=1000000,ugpu.profile_cycles=200000 ugpu/lbm ugpu/cp ugpu/srad ugpu/mri-q
EOF
}
printf '%-14s %-14s %-40s %9s %8s %8s %7s %6s %-22s %s\n' gpu policy apps window det_s ff_s speedup skip% jumps "per app: insts detailed / ff (diff)"
cases | while read -r gpu pol params apps; do
  [ -z "$gpu" ] && continue
  files=(); for a in $apps; do files+=("traces/$a.toml"); done
  pp=(); if [ "$params" != - ]; then IFS=, read -ra kv <<< "$params"; for x in "${kv[@]}"; do pp+=(--policy-param "$x"); done; fi
  run() { /usr/bin/time -f "%U %S" -o "$tmp/t" "$B" run --threads 1 --gpu "$gpu" --share "$pol" "${pp[@]}" --window "$W" "${files[@]}" --json "$tmp/$1.json" "${@:2}" </dev/null >/dev/null 2>"$tmp/$1.err" || { echo "FAILED $gpu $pol $apps: $(tail -2 "$tmp/$1.err")" >&2; return 1; }; awk '{print $1 + $2}' "$tmp/t"; }
  key=$(printf '%s_' "$gpu" "$pol" "$params" $apps "$W" | tr -c 'A-Za-z0-9._=-' '_')
  if [ -n "${DETAILED_DIR:-}" ] && [ -f "$DETAILED_DIR/$key.json" ] && [ -f "$DETAILED_DIR/$key.s" ]; then
    cp "$DETAILED_DIR/$key.json" "$tmp/d.json"; td=$(cat "$DETAILED_DIR/$key.s")
  else
    td=$(run d) || continue
    if [ -n "${DETAILED_DIR:-}" ]; then
      mkdir -p "$DETAILED_DIR"; cp "$tmp/d.json" "$DETAILED_DIR/$key.json"; echo "$td" > "$DETAILED_DIR/$key.s"
    fi
  fi
  tf=$(run f --fast-forward ${FF_ARGS:-}) || continue
  python3 - "$tmp/d.json" "$tmp/f.json" "$gpu" "$pol" "$apps" "$W" "$td" "$tf" <<'PY'
import json, sys
d, f = (json.load(open(p)) for p in sys.argv[1:3])
gpu, pol, apps, w, td, tf = sys.argv[3:9]
ff = f.get('fast_forward') or {}
jumps = ff.get('jumps', [])
why = {}
for j in jumps:
    k = j['ended_by'] + ('/co' if j.get('corun') else '')
    why[k] = why.get(k, 0) + 1
per = []
for x, y in zip(d['apps'], f['apps']):
    a, b = x['counters']['warp_insts'], y['counters']['warp_insts']
    diff = f"{(b - a) / a * 100:+.2f}%" if a else "n/a"
    per.append(f"{x['name']} {a} / {b} ({diff})")
skip = ff.get('cycles', 0) / int(w) * 100
whys = ','.join(f'{k}:{v}' for k, v in sorted(why.items())) or '-'
print(f"{gpu:<14} {pol:<14} {apps.replace('/', ':'):<40} {w:>9} {float(td):8.2f} {float(tf):8.2f} {float(td) / max(float(tf), 0.01):6.1f}x {skip:5.1f}% {len(jumps)} {whys:<20} {'; '.join(per)}")
PY
done
