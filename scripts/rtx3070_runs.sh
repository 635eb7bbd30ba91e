#!/usr/bin/env bash
# Accel-Sim SM86_RTX3070 runs of ../shared/reference's kernels and pairs (gups excluded: > 10
# CPU-minutes each), for reports/validation/rtx3070. Needs an Accel-Sim build as
# ../shared/reference/accel-sim.md says (ACCEL_SIM: its root). One run at a time; ~15 min.
#   bash scripts/rtx3070_runs.sh RUNS_DIR
#   python3 scripts/calib_collect.py RUNS_DIR OUT --sms 46 --channels 16
set -u
REF=${REF:-$(cd "$(dirname "$0")/../.." && pwd)/shared/reference}
A=${ACCEL_SIM:-/work/accel-sim}
G=$A/gpu-simulator/gpgpu-sim/configs/tested-cfgs/SM86_RTX3070
T=$A/gpu-simulator/configs/tested-cfgs/SM86_RTX3070
LIB=$(ls -d $A/gpu-simulator/gpgpu-sim/lib/*/*/release | head -1)
AS=$A/gpu-simulator/bin/release/accel-sim.out
R=${1:?usage: rtx3070_runs.sh RUNS_DIR}; mkdir -p $R
one() { # dir extra-opts
  local d=$1; shift
  [ -s $d/out.txt ] && grep -q "gpu_tot_sim_cycle" $d/out.txt && return
  cp $G/gpgpusim.config $G/config_ampere_islip.icnt $T/trace.config $d/
  (cd $d && LD_LIBRARY_PATH=$LIB /usr/bin/time -v -o time.txt nice -n 5 $AS -trace ./kernelslist.g -config ./gpgpusim.config -config ./trace.config -gpgpu_kernel_launch_latency 0 "$@" > out.txt 2>&1
   echo "rc=$?" >> time.txt)
  echo "$(date +%T) $(basename $d) $(grep -m1 'gpu_tot_sim_cycle' $d/out.txt | tail -1)"
}
for k in $(ls $REF/traces/kernels); do
  [ $k = gups ] && continue
  d=$R/k_$k; mkdir -p $d
  cp $REF/traces/kernels/$k/kernelslist.g $d/; gunzip -c $REF/traces/kernels/$k/kernel-1.traceg.gz > $d/kernel-1.traceg
  one $d
done
for p in $(ls $REF/traces/pairs); do
  case $p in gups*) continue;; esac
  d=$R/p_$p; mkdir -p $d
  cp $REF/traces/pairs/$p/kernelslist.g $d/
  for f in 1 2; do gunzip -c $REF/traces/pairs/$p/kernel-$f.traceg.gz > $d/kernel-$f.traceg; done
  one $d -gpgpu_concurrent_kernel_sm 1
  b=${p#*+}
  s=$R/s_$b; mkdir -p $s
  if [ ! -s $s/out.txt ]; then cp $d/kernel-2.traceg $s/kernel-1.traceg; echo kernel-1.traceg > $s/kernelslist.g; one $s; fi
done
echo done
