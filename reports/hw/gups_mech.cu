// Which mechanism makes GUPS slow an L2-resident victim (issue 45, item 5)? The victims and
// GUPS of ../punyala/hw/gups_corun.cu, varied one factor at a time:
//   GUPS: base (4 GiB table, plain loads/stores, as gups_corun.cu); cs (the same with
//         ld.global.cs / st.global.cs: lines evict-first in L2, so GUPS barely displaces the
//         victim's lines); l2fit (16 MiB table: no DRAM traffic, same request stream).
//   reuse victim with an 8 MiB buffer (as gups_corun.cu), 2 MiB and 16 MiB.
//   stream victim (1 GiB, as gups_corun.cu).
// If the slowdown of the 8 MiB reuse victim falls under `cs` and grows with its buffer, GUPS
// displaces its lines (L2 pollution); if it stays, the victim queues behind GUPS's requests.
// nvcc -O3 -arch=sm_90 gups_mech.cu -o gups_mech && ./gups_mech
#include <cstdio>
#include <cstdint>
#include <cuda_runtime.h>
#define CK(x) do{cudaError_t e=(x); if(e!=cudaSuccess){printf("%s:%d %s\n",__FILE__,__LINE__,cudaGetErrorString(e)); exit(1);}}while(0)

__global__ void gups(uint64_t* t, uint64_t mask, long iters, volatile int* stop, int cs) {
  uint64_t x = 0x9E3779B97F4A7C15ull * (blockIdx.x * blockDim.x + threadIdx.x + 1);
  for (long i = 0; i < iters; i++) {
    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    uint64_t* p = &t[x & mask];
    if (cs) { uint64_t v = __ldcs((const unsigned long long*)p); __stcs((unsigned long long*)p, v ^ x); }
    else { *p ^= x; }
    if ((i & 1023) == 0 && *stop) break;
  }
}
__global__ void reuse(const float* a, uint64_t mask, int iters, float* out) {
  float s = 0; uint64_t i = blockIdx.x * blockDim.x + threadIdx.x;
  for (int k = 0; k < iters; k++) { s += a[(i + (uint64_t)k * 7919 * 32) & mask]; s = s * 1.0001f + 0.5f; }
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
__global__ void stream(const float* a, uint64_t n, int passes, float* out) {
  float s = 0; uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
  for (int p = 0; p < passes; p++)
    for (uint64_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) s += a[i];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

int main() {
  cudaDeviceProp p; CK(cudaGetDeviceProperties(&p, 0));
  int half = p.multiProcessorCount / 2, T = 1024;
  printf("%s, %d SMs, L2 %d MB; each kernel: %d blocks x %d threads (1 block/SM)\n", p.name, p.multiProcessorCount, p.l2CacheSize >> 20, half, T);
  uint64_t gn = 1ull << 29;
  uint64_t* tab; CK(cudaMalloc(&tab, gn * 8)); CK(cudaMemset(tab, 0, gn * 8));
  uint64_t rn = (16ull << 20) / 4;
  uint64_t sn = (1ull << 30) / 4;
  float *ra, *sa, *out; CK(cudaMalloc(&ra, rn * 4)); CK(cudaMalloc(&sa, sn * 4)); CK(cudaMalloc(&out, 1 << 24));
  CK(cudaMemset(ra, 0, rn * 4)); CK(cudaMemset(sa, 0, sn * 4));
  int* stop; CK(cudaMallocManaged(&stop, 4)); *stop = 0;
  cudaStream_t s1, s2; CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking)); CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  cudaEvent_t e0, e1, g0, g1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1)); CK(cudaEventCreate(&g0)); CK(cudaEventCreate(&g1));
  size_t smem = p.sharedMemPerBlockOptin / 2 + 1024;
  CK(cudaFuncSetAttribute(gups, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  CK(cudaFuncSetAttribute(reuse, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  CK(cudaFuncSetAttribute(stream, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  // GUPS rates alone
  const char* gname[3] = {"base", "cs", "l2fit"};
  uint64_t gmask[3] = {gn - 1, gn - 1, (16ull << 20) / 8 - 1};
  int gcs[3] = {0, 1, 0};
  for (int g = 0; g < 3; g++) {
    for (int rep = 0; rep < 2; rep++) {
      CK(cudaEventRecord(g0, s1)); gups<<<half, T, smem, s1>>>(tab, gmask[g], 4000, stop, gcs[g]); CK(cudaEventRecord(g1, s1)); CK(cudaEventSynchronize(g1));
    }
    float ms; CK(cudaEventElapsedTime(&ms, g0, g1));
    printf("gups %-5s alone: %.1f M updates/s\n", gname[g], (double)half * T * 4000 / ms / 1e3);
  }
  // victims: 0..2 reuse with 2, 8, 16 MiB; 3 stream
  const char* vname[4] = {"reuse-2MiB", "reuse-8MiB", "reuse-16MiB", "stream"};
  uint64_t vmask[3] = {(2ull << 20) / 4 - 1, (8ull << 20) / 4 - 1, (16ull << 20) / 4 - 1};
  for (int v = 0; v < 4; v++) {
    float alone = 0;
    for (int g = -1; g < 3; g++) {
      float ms = 0;
      *stop = 0; CK(cudaDeviceSynchronize());
      if (g >= 0) gups<<<half, T, smem, s1>>>(tab, gmask[g], 1L << 40, stop, gcs[g]);
      for (int rep = 0; rep < 2; rep++) {
        CK(cudaEventRecord(e0, s2));
        if (v < 3) reuse<<<half, T, smem, s2>>>(ra, vmask[v], 20000, out);
        else stream<<<half, T, smem, s2>>>(sa, sn, 4, out);
        CK(cudaEventRecord(e1, s2)); CK(cudaEventSynchronize(e1));
        CK(cudaEventElapsedTime(&ms, e0, e1));
      }
      *stop = 1; CK(cudaDeviceSynchronize());
      if (g < 0) { alone = ms; printf("victim %-11s alone %8.3f ms\n", vname[v], ms); }
      else printf("victim %-11s beside gups %-5s %8.3f ms: slowdown %.2fx\n", vname[v], gname[g], ms, ms / alone);
    }
  }
  return 0;
}
