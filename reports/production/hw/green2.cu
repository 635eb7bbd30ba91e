// Green contexts on real hardware: two SM groups of 64 SMs in one process, a GUPS hog
// queued in one, a victim timed in the other (alone first, then beside the hog).
// Kernels as in twoproc.cu. Build: nvcc -O2 -arch=sm_90 green2.cu -lcuda
#include <cstdio>
#include <cstdint>
#include <vector>
#include <algorithm>
#include <cuda.h>
#include <cuda_runtime.h>
#define CU(x) do{CUresult r=(x); if(r!=CUDA_SUCCESS){const char*s; cuGetErrorString(r,&s); printf("%s:%d %s\n",__FILE__,__LINE__,s); return 1;}}while(0)
#define CK(x) do{cudaError_t e=(x); if(e!=cudaSuccess){printf("%s:%d %s\n",__FILE__,__LINE__,cudaGetErrorString(e)); return 1;}}while(0)
__global__ void gups(uint64_t* t, uint64_t mask, long iters) {
  uint64_t x = 0x9E3779B97F4A7C15ull * (blockIdx.x * blockDim.x + threadIdx.x + 1);
  for (long i = 0; i < iters; i++) { x ^= x << 13; x ^= x >> 7; x ^= x << 17; t[x & mask] ^= x; }
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
  CU(cuInit(0)); CUdevice dev; CU(cuDeviceGet(&dev, 0));
  CUdevResource all; CU(cuDeviceGetDevResource(dev, &all, CU_DEV_RESOURCE_TYPE_SM));
  CUdevResource g[2]; unsigned n = 2; CUdevResource rem;
  CU(cuDevSmResourceSplitByCount(g, &n, &all, &rem, 0, 64));
  if (n < 2) { printf("only %u groups\n", n); return 1; }
  CUcontext c[2]; CUstream s[2];
  for (int i = 0; i < 2; i++) {
    CUdevResourceDesc d; CU(cuDevResourceGenerateDesc(&d, &g[i], 1));
    CUgreenCtx gc; CU(cuGreenCtxCreate(&gc, d, dev, CU_GREEN_CTX_DEFAULT_STREAM));
    CU(cuCtxFromGreenCtx(&c[i], gc)); CU(cuGreenCtxStreamCreate(&s[i], gc, CU_STREAM_NON_BLOCKING, 0));
  }
  printf("green contexts of %u and %u SMs (%u left)\n", g[0].sm.smCount, g[1].sm.smCount, rem.sm.smCount);
  int T = 1024, hb = g[0].sm.smCount * 2, vb = g[1].sm.smCount * 2;
  CU(cuCtxSetCurrent(c[0]));
  uint64_t gn = 1ull << 29; uint64_t* tab; CK(cudaMalloc(&tab, gn * 8)); CK(cudaMemset(tab, 0, gn * 8)); CK(cudaDeviceSynchronize());
  CU(cuCtxSetCurrent(c[1]));
  uint64_t rn = (8ull << 20) / 4, sn = (1ull << 30) / 4;
  float *ra, *sa, *out; CK(cudaMalloc(&ra, rn * 4)); CK(cudaMalloc(&sa, sn * 4)); CK(cudaMalloc(&out, (size_t)vb * T * 4));
  CK(cudaMemset(ra, 0, rn * 4)); CK(cudaMemset(sa, 0, sn * 4)); CK(cudaDeviceSynchronize());
  cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
  const char* names[3] = {"reuse", "stream", "compute"};
  for (int v = 0; v < 3; v++) {
    float med[2];
    for (int co = 0; co < 2; co++) {
      if (co) { CU(cuCtxSetCurrent(c[0])); for (int k = 0; k < 20; k++) gups<<<hb, T, 0, (cudaStream_t)s[0]>>>(tab, gn - 1, 2000); CU(cuCtxSetCurrent(c[1])); }
      std::vector<float> ms;
      for (int r = 0; r <= 9; r++) {
        CK(cudaEventRecord(e0, (cudaStream_t)s[1]));
        if (v == 0) reuse<<<vb, T, 0, (cudaStream_t)s[1]>>>(ra, rn - 1, 10000, out);
        if (v == 1) stream<<<vb, T, 0, (cudaStream_t)s[1]>>>(sa, sn, 4, out);
        if (v == 2) compute<<<vb, T, 0, (cudaStream_t)s[1]>>>(100000, out);
        CK(cudaEventRecord(e1, (cudaStream_t)s[1])); CK(cudaEventSynchronize(e1));
        float m; CK(cudaEventElapsedTime(&m, e0, e1)); if (r) ms.push_back(m);
      }
      std::sort(ms.begin(), ms.end()); med[co] = ms[4];
      if (co) { CU(cuStreamSynchronize(s[0])); }
    }
    printf("green 64/64: victim %-7s alone %.3f ms, beside gups %.3f ms: slowdown %.2fx\n", names[v], med[0], med[1], med[1] / med[0]);
  }
  return 0;
}
