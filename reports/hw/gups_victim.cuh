// Shared by gups_victim_warps.cu and gups_victim_width.cu (issue 45): the GUPS hog and the
// L2-reuse victim of ../punyala/hw/gups_corun.cu, the buffers and streams they use, and the
// victim timed alone and beside GUPS. The victim is templated on its load: NARROW, each
// warp reads one 32 B sector (lanes 0-7, 8-15, ... read the same 8 floats) instead of a
// 128 B line; CG, __ldcg (around the L1) instead of ld.global. reuse<false, false> is
// gups_corun.cu's `reuse`.
#pragma once
#include <cstdio>
#include <cstdint>
#include <cuda_runtime.h>
#define CK(x) do{cudaError_t e=(x); if(e!=cudaSuccess){printf("%s:%d %s\n",__FILE__,__LINE__,cudaGetErrorString(e)); return 1;}}while(0)

__global__ void gups(uint64_t* t, uint64_t mask, long iters, volatile int* stop) {
  uint64_t x = 0x9E3779B97F4A7C15ull * (blockIdx.x * blockDim.x + threadIdx.x + 1);
  for (long i = 0; i < iters; i++) {
    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    t[x & mask] ^= x;
    if ((i & 1023) == 0 && *stop) break;
  }
}

template <bool NARROW, bool CG>
__global__ void reuse(const float* a, uint64_t mask, int iters, float* out) {
  float s = 0;
  uint64_t g = blockIdx.x * blockDim.x + threadIdx.x;
  uint64_t i = NARROW ? ((g >> 5) * 32 + (threadIdx.x & 7)) : g;
  for (int k = 0; k < iters; k++) {
    const float* p = &a[(i + (uint64_t)k * 7919 * 32) & mask];
    s += CG ? __ldcg(p) : *p;
    s = s * 1.0001f + 0.5f;
  }
  out[g] = s;
}

// A 4 GiB GUPS table, an 8 MiB victim buffer, two streams; each kernel gets one CTA per SM
// on half the SMs (a shared-memory request forces it).
struct Rig {
  cudaDeviceProp p;
  int half;
  size_t smem;
  uint64_t gn = 1ull << 29, rn = (8ull << 20) / 4;
  uint64_t* tab;
  float *ra, *out;
  int* stop;
  cudaStream_t s1, s2;
  cudaEvent_t e0, e1;
};

inline int rig_up(Rig& r) {
  CK(cudaGetDeviceProperties(&r.p, 0));
  r.half = r.p.multiProcessorCount / 2;
  r.smem = r.p.sharedMemPerBlockOptin / 2 + 1024;
  CK(cudaMalloc(&r.tab, r.gn * 8)); CK(cudaMemset(r.tab, 0, r.gn * 8));
  CK(cudaMalloc(&r.ra, r.rn * 4)); CK(cudaMalloc(&r.out, 1 << 24)); CK(cudaMemset(r.ra, 0, r.rn * 4));
  CK(cudaMallocManaged(&r.stop, 4)); *r.stop = 0;
  CK(cudaStreamCreateWithFlags(&r.s1, cudaStreamNonBlocking)); CK(cudaStreamCreateWithFlags(&r.s2, cudaStreamNonBlocking));
  CK(cudaEventCreate(&r.e0)); CK(cudaEventCreate(&r.e1));
  CK(cudaFuncSetAttribute(gups, cudaFuncAttributeMaxDynamicSharedMemorySize, r.smem));
  return 0;
}

// reuse<NARROW, CG> with `threads` per CTA, `iters` loads a thread: ms[0] alone, ms[1]
// beside GUPS (`gups_threads` per CTA on the other half), each the best of three timed
// launches after a warm-up.
template <bool NARROW, bool CG>
int alone_beside(Rig& r, int threads, int gups_threads, int iters, float ms[2]) {
  CK(cudaFuncSetAttribute(reuse<NARROW, CG>, cudaFuncAttributeMaxDynamicSharedMemorySize, r.smem));
  for (int co = 0; co < 2; co++) {
    float best = 1e30f;
    *r.stop = 0; CK(cudaDeviceSynchronize());
    if (co) gups<<<r.half, gups_threads, r.smem, r.s1>>>(r.tab, r.gn - 1, 1L << 40, r.stop);
    for (int rep = 0; rep < 4; rep++) {
      CK(cudaEventRecord(r.e0, r.s2));
      reuse<NARROW, CG><<<r.half, threads, r.smem, r.s2>>>(r.ra, r.rn - 1, iters, r.out);
      CK(cudaEventRecord(r.e1, r.s2)); CK(cudaEventSynchronize(r.e1));
      float m; CK(cudaEventElapsedTime(&m, r.e0, r.e1));
      if (rep > 0 && m < best) best = m;
    }
    ms[co] = best;
    *r.stop = 1; CK(cudaDeviceSynchronize());
  }
  return 0;
}
