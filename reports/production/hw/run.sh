#!/bin/bash
# Device probe for issue 49: green-context granularity and MPS active-thread percentages on
# the lent GPU, plus issue 45's GUPS co-run on it. Writes $OUT/*.txt.
cd "$(dirname "$0")"; OUT=${OUT:-/tmp/out}; mkdir -p $OUT
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee $OUT/gpu.txt
nvcc --version | tail -2 | tee -a $OUT/gpu.txt
nvcc -O2 -arch=sm_90 green.cu -lcuda -o /tmp/green 2>&1 | tail -5
nvcc -O2 -arch=sm_90 mps_client.cu -o /tmp/mps_client 2>&1 | tail -5
nvcc -O2 -arch=sm_90 ../../punyala/hw/gups_corun.cu -o /tmp/gups 2>&1 | tail -5
timeout 60 /tmp/green 2>&1 | tee $OUT/green.txt
echo "== without MPS" | tee $OUT/mps.txt
timeout 30 /tmp/mps_client 2>&1 | tee -a $OUT/mps.txt
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps_pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps_log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
if nvidia-cuda-mps-control -d; then
  echo "== MPS daemon up" | tee -a $OUT/mps.txt
  for p in 100 75 70 50 30 25 10 5 1; do
    CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=$p timeout 30 /tmp/mps_client 2>&1 | tee -a $OUT/mps.txt
  done
  echo "== two clients at once, 30 and 70 (long kernels)" | tee -a $OUT/mps.txt
  CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=30 timeout 30 /tmp/mps_client 1000000000 > /tmp/c30.txt 2>&1 &
  CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=70 timeout 30 /tmp/mps_client 1000000000 > /tmp/c70.txt 2>&1 &
  wait; cat /tmp/c30.txt /tmp/c70.txt | tee -a $OUT/mps.txt
  echo quit | nvidia-cuda-mps-control
  cp /tmp/mps_log/control.log $OUT/mps_control.log 2>/dev/null
else
  echo "MPS daemon did not start" | tee -a $OUT/mps.txt
fi
timeout 120 /tmp/gups 2>&1 | tee $OUT/gups_corun.txt
