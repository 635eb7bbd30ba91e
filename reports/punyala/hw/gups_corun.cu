// Hardware sanity check: slowdown of a victim kernel (L2-reuse or streaming or compute)
// on about half the SMs, alone vs beside a GUPS kernel on the other half.
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
__global__ void stream(const float* a, uint64_t n, int passes, float* out) {
  float s = 0; uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
  for (int p = 0; p < passes; p++)
    for (uint64_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) s += a[i];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
__global__ void compute(int iters, float* out) {
  float a = threadIdx.x, b = 1.0001f;
  for (int k = 0; k < iters; k++) { a = a * b + 0.3f; b = b * a + 0.1f; }
  out[blockIdx.x * blockDim.x + threadIdx.x] = a + b;
}

int main() {
  cudaDeviceProp p; CK(cudaGetDeviceProperties(&p, 0));
  int half = p.multiProcessorCount / 2, T = 1024;
  printf("%s, %d SMs, L2 %d MB; each kernel: %d blocks x %d threads (1 block/SM)\n", p.name, p.multiProcessorCount, p.l2CacheSize >> 20, half, T);
  uint64_t gn = 1ull << 29; // 4 GiB table
  uint64_t* tab; CK(cudaMalloc(&tab, gn * 8)); CK(cudaMemset(tab, 0, gn * 8));
  uint64_t rn = (8ull << 20) / 4; // 8 MiB reuse buffer
  uint64_t sn = (1ull << 30) / 4; // 1 GiB stream buffer
  float *ra, *sa, *out; CK(cudaMalloc(&ra, rn * 4)); CK(cudaMalloc(&sa, sn * 4)); CK(cudaMalloc(&out, 1 << 24));
  CK(cudaMemset(ra, 0, rn * 4)); CK(cudaMemset(sa, 0, sn * 4));
  int* stop; CK(cudaMallocManaged(&stop, 4)); *stop = 0;
  cudaStream_t s1, s2; CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking)); CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
  // large smem request forces 1 block per SM so each kernel holds about half the SMs
  size_t smem = p.sharedMemPerBlockOptin / 2 + 1024;
  CK(cudaFuncSetAttribute(gups, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  CK(cudaFuncSetAttribute(reuse, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  CK(cudaFuncSetAttribute(stream, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  CK(cudaFuncSetAttribute(compute, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  const char* names[3] = {"l2-reuse", "stream", "compute"};
  for (int v = 0; v < 3; v++) {
    float ms[2];
    for (int co = 0; co < 2; co++) {
      *stop = 0; CK(cudaDeviceSynchronize());
      if (co) { gups<<<half, T, smem, s1>>>(tab, gn - 1, 1L << 40, stop); }
      for (int rep = 0; rep < 2; rep++) { // rep 0 warms up
        CK(cudaEventRecord(e0, s2));
        if (v == 0) reuse<<<half, T, smem, s2>>>(ra, rn - 1, 20000, out);
        if (v == 1) stream<<<half, T, smem, s2>>>(sa, sn, 4, out);
        if (v == 2) compute<<<half, T, smem, s2>>>(200000, out);
        CK(cudaEventRecord(e1, s2)); CK(cudaEventSynchronize(e1));
        CK(cudaEventElapsedTime(&ms[co], e0, e1));
      }
      *stop = 1; CK(cudaDeviceSynchronize());
    }
    printf("victim %-9s alone %8.3f ms, beside gups %8.3f ms: slowdown %.2fx\n", names[v], ms[0], ms[1], ms[1] / ms[0]);
  }
  // gups rate alone, for reference
  *stop = 0; CK(cudaEventRecord(e0, s1)); gups<<<half, T, smem, s1>>>(tab, gn - 1, 4000, stop); CK(cudaEventRecord(e1, s1)); CK(cudaEventSynchronize(e1));
  float g; CK(cudaEventElapsedTime(&g, e0, e1));
  printf("gups alone: %.1f M updates/s\n", (double)half * T * 4000 / g / 1e3);
  return 0;
}
