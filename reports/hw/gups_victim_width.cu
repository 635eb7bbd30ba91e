// Issue 45: does an L2-hit load wait longer beside GUPS when it is a whole 128 B line (four
// 32 B sectors) than when it is one sector, and does bypassing the L1 change it? The reuse
// victim of ../punyala/hw/gups_corun.cu (8 MiB buffer, one 1024-thread CTA per SM on 66 SMs),
// alone and beside GUPS (1024 threads per CTA on the other 66), with each warp's load
// covering 128 B (as there) or 32 B (lanes in groups of 8 read the same 8 floats), through
// the L1 (ld.global) or around it (__ldcg). Best of three timed launches after a warm-up.
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
  // NARROW: each warp reads one 32 B sector (lanes 0-7, 8-15, ... read the same 8 floats)
  uint64_t i = NARROW ? ((g >> 5) * 32 + (threadIdx.x & 7)) : g;
  for (int k = 0; k < iters; k++) {
    const float* p = &a[(i + (uint64_t)k * 7919 * 32) & mask];
    s += CG ? __ldcg(p) : *p;
    s = s * 1.0001f + 0.5f;
  }
  out[g] = s;
}

template <bool N, bool C>
int run(const char* name, int half, size_t smem, float* ra, uint64_t rn, float* out, uint64_t* tab, uint64_t gn,
        int* stop, cudaStream_t s1, cudaStream_t s2, cudaEvent_t e0, cudaEvent_t e1) {
  CK(cudaFuncSetAttribute(reuse<N, C>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  int V = 1024, iters = 20000;
  float ms[2];
  for (int co = 0; co < 2; co++) {
    float best = 1e30f;
    *stop = 0; CK(cudaDeviceSynchronize());
    if (co) gups<<<half, 1024, smem, s1>>>(tab, gn - 1, 1L << 40, stop);
    for (int rep = 0; rep < 4; rep++) {
      CK(cudaEventRecord(e0, s2));
      reuse<N, C><<<half, V, smem, s2>>>(ra, rn - 1, iters, out);
      CK(cudaEventRecord(e1, s2)); CK(cudaEventSynchronize(e1));
      float m; CK(cudaEventElapsedTime(&m, e0, e1));
      if (rep > 0 && m < best) best = m;
    }
    ms[co] = best;
    *stop = 1; CK(cudaDeviceSynchronize());
  }
  double warp_loads = (double)half * (V / 32) * iters;
  printf("%-22s alone %8.3f ms, beside gups %8.3f ms, slowdown %5.2fx; warp loads/ns alone %6.2f beside %6.2f\n",
         name, ms[0], ms[1], ms[1] / ms[0], warp_loads / (ms[0] * 1e6), warp_loads / (ms[1] * 1e6));
  return 0;
}

int main() {
  cudaDeviceProp p; CK(cudaGetDeviceProperties(&p, 0));
  int half = p.multiProcessorCount / 2;
  printf("%s, %d SMs, L2 %d MB; victim and GUPS: %d blocks x 1024 threads each (1 block/SM)\n", p.name, p.multiProcessorCount, p.l2CacheSize >> 20, half);
  uint64_t gn = 1ull << 29;
  uint64_t* tab; CK(cudaMalloc(&tab, gn * 8)); CK(cudaMemset(tab, 0, gn * 8));
  uint64_t rn = (8ull << 20) / 4;
  float *ra, *out; CK(cudaMalloc(&ra, rn * 4)); CK(cudaMalloc(&out, 1 << 24)); CK(cudaMemset(ra, 0, rn * 4));
  int* stop; CK(cudaMallocManaged(&stop, 4)); *stop = 0;
  cudaStream_t s1, s2; CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking)); CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
  size_t smem = p.sharedMemPerBlockOptin / 2 + 1024;
  CK(cudaFuncSetAttribute(gups, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  if (run<false, false>("128 B line, L1", half, smem, ra, rn, out, tab, gn, stop, s1, s2, e0, e1)) return 1;
  if (run<false, true>("128 B line, __ldcg", half, smem, ra, rn, out, tab, gn, stop, s1, s2, e0, e1)) return 1;
  if (run<true, false>("32 B sector, L1", half, smem, ra, rn, out, tab, gn, stop, s1, s2, e0, e1)) return 1;
  if (run<true, true>("32 B sector, __ldcg", half, smem, ra, rn, out, tab, gn, stop, s1, s2, e0, e1)) return 1;
  return 0;
}
