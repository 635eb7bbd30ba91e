// Two-process sharing on real hardware: a GUPS hog in one process, a victim kernel in
// another, under plain time slicing (no MPS) or MPS with active-thread percentages.
//   twoproc gups SECONDS        hog: relaunches GUPS (2 CTAs of 1024 per visible SM) for SECONDS
//   twoproc reuse|stream|compute REPS   victim: prints the median time of REPS launches
// Kernels as in ../../punyala/hw/gups_corun.cu. Build: nvcc -O2 -arch=sm_90 twoproc.cu
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cstdint>
#include <vector>
#include <algorithm>
#include <chrono>
#include <cuda_runtime.h>
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
int main(int argc, char** argv) {
  if (argc < 3) { printf("usage: twoproc gups SECONDS | reuse|stream|compute REPS\n"); return 2; }
  cudaDeviceProp p; CK(cudaGetDeviceProperties(&p, 0));
  int nb = p.multiProcessorCount * 2, T = 1024;
  const char* pct = getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");
  if (!strcmp(argv[1], "gups")) {
    double secs = atof(argv[2]); uint64_t gn = 1ull << 29; uint64_t* tab;
    CK(cudaMalloc(&tab, gn * 8)); CK(cudaMemset(tab, 0, gn * 8));
    auto t0 = std::chrono::steady_clock::now(); long launches = 0;
    while (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < secs) {
      gups<<<nb, T>>>(tab, gn - 1, 2000); CK(cudaDeviceSynchronize()); launches++;
    }
    double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    printf("gups (pct %s, %d SMs): %.1f M updates/s over %.1f s\n", pct ? pct : "-", p.multiProcessorCount, (double)nb * T * 2000 * launches / el / 1e6, el);
    return 0;
  }
  int reps = atoi(argv[2]);
  uint64_t rn = (8ull << 20) / 4, sn = (1ull << 30) / 4;
  float *ra, *sa, *out; CK(cudaMalloc(&ra, rn * 4)); CK(cudaMalloc(&sa, sn * 4)); CK(cudaMalloc(&out, (size_t)nb * T * 4));
  CK(cudaMemset(ra, 0, rn * 4)); CK(cudaMemset(sa, 0, sn * 4));
  cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
  std::vector<float> ms;
  auto w0 = std::chrono::steady_clock::now();
  for (int r = 0; r <= reps; r++) {  // launch 0 warms up
    CK(cudaEventRecord(e0));
    if (!strcmp(argv[1], "reuse")) reuse<<<nb, T>>>(ra, rn - 1, 10000, out);
    else if (!strcmp(argv[1], "stream")) stream<<<nb, T>>>(sa, sn, 4, out);
    else compute<<<nb, T>>>(100000, out);
    CK(cudaEventRecord(e1)); CK(cudaEventSynchronize(e1));
    float m; CK(cudaEventElapsedTime(&m, e0, e1)); if (r) ms.push_back(m);
  }
  double wall = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - w0).count() / (reps + 1);
  std::sort(ms.begin(), ms.end());
  printf("victim %-7s (pct %s, %d SMs): median %.3f ms of %d, wall %.3f ms per launch\n", argv[1], pct ? pct : "-", p.multiProcessorCount, ms[ms.size() / 2], reps, wall);
  return 0;
}
