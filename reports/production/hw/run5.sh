#!/bin/bash
# Time slicing seen from inside a kernel (slice.cu): one process alone (no gap expected),
# then two at once, small contexts and large ones, then one of each.
cd "$(dirname "$0")"; OUT=${OUT:-/tmp/out}; mkdir -p $OUT
nvcc -O2 -arch=sm_90 slice.cu -o /tmp/slice 2>&1 | tail -5
F=$OUT/slice.txt; : > $F
echo "alone light: $(timeout 30 /tmp/slice 0 200)" | tee -a $F
echo "alone heavy: $(timeout 30 /tmp/slice 1 200)" | tee -a $F
for pair in "0 0" "1 1" "0 1"; do
  set -- $pair
  timeout 60 /tmp/slice $1 1500 > /tmp/a.txt 2>&1 &
  timeout 60 /tmp/slice $2 1500 > /tmp/b.txt 2>&1 &
  wait
  echo "pair $1+$2 first: $(cat /tmp/a.txt)" | tee -a $F
  echo "pair $1+$2 second: $(cat /tmp/b.txt)" | tee -a $F
done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee -a $F
