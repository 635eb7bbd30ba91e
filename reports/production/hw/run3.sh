#!/bin/bash
# Victim beside a GUPS hog in another process: alone, time slicing (no MPS), MPS 100/100,
# MPS 50/50, MPS 30/70 (victim at 70). Writes $OUT/twoproc.txt.
cd "$(dirname "$0")"; OUT=${OUT:-/tmp/out}; mkdir -p $OUT; F=$OUT/twoproc.txt
nvcc -O2 -arch=sm_90 twoproc.cu -o /tmp/twoproc 2>&1 | tail -5
V="reuse stream compute"
pair() { # $1 hog pct, $2 victim pct, $3 label
  for v in $V; do
    if [ -n "$1" ]; then export CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=$1; fi
    timeout 60 /tmp/twoproc gups 6 > /tmp/hog.txt 2>&1 & sleep 1.5
    if [ -n "$2" ]; then export CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=$2; fi
    echo "$3: $(timeout 60 /tmp/twoproc $v 9)" | tee -a $F
    wait; echo "$3: $(cat /tmp/hog.txt)" | tee -a $F; unset CUDA_MPS_ACTIVE_THREAD_PERCENTAGE
  done
}
echo "== no MPS" | tee $F
for v in $V; do echo "alone: $(timeout 60 /tmp/twoproc $v 9)" | tee -a $F; done
pair "" "" "time-sliced"
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps_pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps_log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d || { echo "no MPS" | tee -a $F; exit 0; }
echo "== MPS" | tee -a $F
for pc in 50 70; do for v in $V; do echo "alone at $pc: $(CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=$pc timeout 60 /tmp/twoproc $v 9)" | tee -a $F; done; done
pair "" "" "mps 100/100"
pair 50 50 "mps 50/50"
pair 30 70 "mps hog30/victim70"
echo quit | nvidia-cuda-mps-control
