#!/bin/bash
# Green contexts 64/64 beside GUPS, and time slicing measured by wall clock per launch.
cd "$(dirname "$0")"; OUT=${OUT:-/tmp/out}; mkdir -p $OUT
nvcc -O2 -arch=sm_90 green2.cu -lcuda -o /tmp/green2 2>&1 | tail -5
nvcc -O2 -arch=sm_90 twoproc.cu -o /tmp/twoproc 2>&1 | tail -5
timeout 90 /tmp/green2 2>&1 | tee $OUT/green2.txt
F=$OUT/timeslice.txt; : > $F
for v in reuse stream compute; do
  echo "alone: $(timeout 60 /tmp/twoproc $v 29)" | tee -a $F
  timeout 60 /tmp/twoproc gups 5 > /tmp/hog.txt 2>&1 & sleep 1.5
  echo "time-sliced: $(timeout 60 /tmp/twoproc $v 29)" | tee -a $F
  wait; echo "time-sliced: $(cat /tmp/hog.txt)" | tee -a $F
done
echo "gups alone: $(timeout 60 /tmp/twoproc gups 3)" | tee -a $F
