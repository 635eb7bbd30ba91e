// Time slicing on the hardware: how long a context holds the GPU (the slice) and how long
// the switch between two contexts takes, as seen from inside a kernel.
//
// One process = one CUDA context. Its kernel puts one CTA on every SM and spins for
// DUR ms reading %globaltimer; thread 0 of block 0 logs every gap of more than 2 us
// between two consecutive reads (its context was switched out). Run two processes at
// once, without MPS, and each sees runs of its own slice S separated by gaps of the
// other's slice plus two switches: C = (gap - run) / 2 for two equal contexts.
//
// HEAVY=1 makes the context large (512 threads, 64 live floats each, 96 KiB of shared
// memory per CTA: ~300 KiB per SM, ~40 MB for the GPU), HEAVY=0 small (1024 threads,
// a few registers, no shared memory): if saving and restoring the context is what a switch
// costs, the heavy pair's switch is longer.
//
// Build: nvcc -O2 -arch=sm_90 slice.cu -o slice.  Run: ./slice HEAVY DUR_MS
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e)); exit(1); } } while (0)

__device__ __forceinline__ unsigned long long gtime() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

template <int LIVE>
__global__ void spin(unsigned long long dur, unsigned long long* log, int* n, int cap,
                     float* sink, int use_smem) {
  extern __shared__ float sm[];
  float acc[LIVE];
#pragma unroll
  for (int i = 0; i < LIVE; i++) acc[i] = threadIdx.x * 0.5f + i;
  if (use_smem) sm[threadIdx.x] = 0.f;
  __syncthreads();
  unsigned long long t0 = gtime(), last = t0;
  bool rec = threadIdx.x == 0 && blockIdx.x == 0;
  while (true) {
    unsigned long long now = gtime();
    if (rec && now - last > 2000) {
      int k = atomicAdd(n, 1);
      if (k < cap) { log[2 * k] = last - t0; log[2 * k + 1] = now - t0; }
    }
    last = now;
    if (now - t0 > dur) break;
#pragma unroll
    for (int i = 0; i < LIVE; i++) acc[i] = acc[i] * 1.0001f + 1.0f;
    if (use_smem) sm[threadIdx.x] += acc[0];
  }
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < LIVE; i++) s += acc[i];
  if (use_smem) s += sm[threadIdx.x];
  if (s == -1.f) sink[0] = s;
}

static double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int main(int argc, char** argv) {
  int heavy = argc > 1 ? atoi(argv[1]) : 0;
  double ms = argc > 2 ? atof(argv[2]) : 300;
  int sms; CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const int cap = 4096;
  unsigned long long* log; int* n; float* sink;
  CK(cudaMalloc(&log, 2 * cap * sizeof(unsigned long long)));
  CK(cudaMalloc(&n, sizeof(int))); CK(cudaMemset(n, 0, sizeof(int)));
  CK(cudaMalloc(&sink, 4));
  unsigned long long dur = (unsigned long long)(ms * 1e6);
  int threads, smem = 0, regs = 0;
  cudaFuncAttributes fa;
  if (heavy) {
    threads = 512; smem = 96 * 1024;
    CK(cudaFuncSetAttribute(spin<64>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    CK(cudaFuncGetAttributes(&fa, spin<64>)); regs = fa.numRegs;
    spin<64><<<sms, threads, smem>>>(dur, log, n, cap, sink, 1);
  } else {
    threads = 1024;
    CK(cudaFuncGetAttributes(&fa, spin<1>)); regs = fa.numRegs;
    spin<1><<<sms, threads>>>(dur, log, n, cap, sink, 0);
  }
  CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
  int k; CK(cudaMemcpy(&k, n, sizeof(int), cudaMemcpyDeviceToHost));
  k = std::min(k, cap);
  std::vector<unsigned long long> h(2 * k);
  CK(cudaMemcpy(h.data(), log, 2 * k * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
  std::vector<double> runs, gaps;
  for (int i = 0; i < k; i++) {
    gaps.push_back((h[2 * i + 1] - h[2 * i]) / 1e3);
    if (i > 0) runs.push_back((h[2 * i] - h[2 * i - 1]) / 1e3);
  }
  double ctx_kib = (double)threads * regs * 4 / 1024 + smem / 1024.0;
  printf("heavy=%d threads=%d regs=%d smem=%dKiB context/SM=%.0fKiB gaps=%d "
         "median_run_us=%.1f median_gap_us=%.1f min_gap_us=%.1f max_gap_us=%.1f "
         "switch_us=(gap-run)/2=%.2f\n",
         heavy, threads, regs, smem / 1024, ctx_kib, k, median(runs), median(gaps),
         gaps.empty() ? 0 : *std::min_element(gaps.begin(), gaps.end()),
         gaps.empty() ? 0 : *std::max_element(gaps.begin(), gaps.end()),
         (median(gaps) - median(runs)) / 2);
  return 0;
}
