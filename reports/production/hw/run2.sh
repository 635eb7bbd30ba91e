#!/bin/bash
# Second MPS probe: do two clients with limits run at once, and on disjoint SMs? Each client
# prints its wall-clock window; at full occupancy (16 blocks of 128 threads per SM) a client
# whose SMs another client holds waits, so its time grows beyond the alone time.
cd "$(dirname "$0")"; OUT=${OUT:-/tmp/out}; mkdir -p $OUT
nvcc -O2 -arch=sm_90 mps_client.cu -o /tmp/mps_client 2>&1 | tail -5
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps_pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps_log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d || { echo "no MPS" | tee $OUT/mps2.txt; exit 0; }
for pair in "30 70" "50 50" "70 70" "100 100" "50 100"; do
  set -- $pair
  echo "== clients at $1% and $2% together" | tee -a $OUT/mps2.txt
  CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=$1 timeout 40 /tmp/mps_client 400000000 > /tmp/ca.txt 2>&1 &
  CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=$2 timeout 40 /tmp/mps_client 400000000 > /tmp/cb.txt 2>&1 &
  wait; cat /tmp/ca.txt /tmp/cb.txt | tee -a $OUT/mps2.txt
done
for p in 30 70 100; do CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=$p timeout 40 /tmp/mps_client 400000000 2>&1 | sed 's/^/alone: /' | tee -a $OUT/mps2.txt; done
echo quit | nvidia-cuda-mps-control
