// Issue 45: does the L2-reuse victim's slowdown beside GUPS grow with its own loads in
// flight? The victim of ../punyala/hw/gups_corun.cu (8 MiB L2-resident buffer, one CTA per SM
// on half the SMs) with 128..1024 threads per CTA, alone and beside GUPS (1024 threads per
// CTA on the other half; also 256). Prints per case alone ms, beside ms, slowdown, and the
// victim's loads per ns.
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
__global__ void reuse(const float* a, uint64_t mask, int iters, float* out) {
  float s = 0; uint64_t i = blockIdx.x * blockDim.x + threadIdx.x;
  for (int k = 0; k < iters; k++) { s += a[(i + (uint64_t)k * 7919 * 32) & mask]; s = s * 1.0001f + 0.5f; }
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

int main() {
  cudaDeviceProp p; CK(cudaGetDeviceProperties(&p, 0));
  int half = p.multiProcessorCount / 2, khz = 0;
  CK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0));
  printf("%s, %d SMs, L2 %d MB, SM clock %d MHz; victim and GUPS: %d blocks each (1 block/SM)\n", p.name, p.multiProcessorCount, p.l2CacheSize >> 20, khz / 1000, half);
  uint64_t gn = 1ull << 29; // 4 GiB table
  uint64_t* tab; CK(cudaMalloc(&tab, gn * 8)); CK(cudaMemset(tab, 0, gn * 8));
  uint64_t rn = (8ull << 20) / 4; // 8 MiB reuse buffer
  float *ra, *out; CK(cudaMalloc(&ra, rn * 4)); CK(cudaMalloc(&out, 1 << 24)); CK(cudaMemset(ra, 0, rn * 4));
  int* stop; CK(cudaMallocManaged(&stop, 4)); *stop = 0;
  cudaStream_t s1, s2; CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking)); CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
  size_t smem = p.sharedMemPerBlockOptin / 2 + 1024;
  CK(cudaFuncSetAttribute(gups, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  CK(cudaFuncSetAttribute(reuse, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  int gts[2] = {1024, 256};
  int vts[4] = {128, 256, 512, 1024};
  for (int gi = 0; gi < 2; gi++) {
    for (int vi = 0; vi < 4; vi++) {
      int G = gts[gi], V = vts[vi];
      int iters = 20000;
      float ms[2];
      for (int co = 0; co < 2; co++) {
        float best = 1e30f;
        *stop = 0; CK(cudaDeviceSynchronize());
        if (co) { gups<<<half, G, smem, s1>>>(tab, gn - 1, 1L << 40, stop); }
        for (int rep = 0; rep < 4; rep++) { // rep 0 warms up; best of the other 3
          CK(cudaEventRecord(e0, s2));
          reuse<<<half, V, smem, s2>>>(ra, rn - 1, iters, out);
          CK(cudaEventRecord(e1, s2)); CK(cudaEventSynchronize(e1));
          float m; CK(cudaEventElapsedTime(&m, e0, e1));
          if (rep > 0 && m < best) best = m;
        }
        ms[co] = best;
        *stop = 1; CK(cudaDeviceSynchronize());
      }
      double loads = (double)half * V * iters;
      printf("gups %4d thr  victim %4d thr: alone %8.3f ms, beside %8.3f ms, slowdown %5.2fx; victim loads/ns alone %6.2f beside %6.2f\n",
             G, V, ms[0], ms[1], ms[1] / ms[0], loads / (ms[0] * 1e6), loads / (ms[1] * 1e6));
    }
  }
  return 0;
}
