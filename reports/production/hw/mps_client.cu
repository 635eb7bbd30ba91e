// MPS client probe: runs `where` with many blocks and prints how many distinct SMs its
// blocks ran on, and the wall time of a fixed compute kernel. The active thread percentage
// comes from the environment (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE). Build: nvcc -O2 -arch=sm_90
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>
#include <set>
#include <chrono>
#include <cuda_runtime.h>
__global__ void where(unsigned* smid, long spin) {
  unsigned s; asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
  long t0 = clock64(); while (clock64() - t0 < spin) {}
  if (threadIdx.x == 0) smid[blockIdx.x] = s;
}
int main(int argc, char** argv) {
  long spin = argc > 1 ? atol(argv[1]) : 200000;
  const char* pct = getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");
  cudaDeviceProp p; if (cudaGetDeviceProperties(&p, 0) != cudaSuccess) { printf("no device\n"); return 1; }
  int nb = 132 * 16; unsigned* d; cudaMalloc(&d, nb * 4);
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  where<<<nb, 128>>>(d, 1000);  // warm up
  cudaDeviceSynchronize();
  auto now = [] { return std::chrono::duration<double, std::milli>(std::chrono::system_clock::now().time_since_epoch()).count(); };
  double w0 = now();
  cudaEventRecord(a); where<<<nb, 128>>>(d, spin); cudaEventRecord(b);
  cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) { printf("pct %s: %s\n", pct ? pct : "-", cudaGetErrorString(e)); return 1; }
  double w1 = now();
  float ms; cudaEventElapsedTime(&ms, a, b);
  std::vector<unsigned> h(nb); cudaMemcpy(h.data(), d, nb * 4, cudaMemcpyDeviceToHost);
  std::set<unsigned> s(h.begin(), h.end());
  printf("pct %s: multiProcessorCount %d, blocks ran on %zu distinct SMs (smid %u..%u), %.3f ms, wall %.0f..%.0f ms\n", pct ? pct : "-", p.multiProcessorCount, s.size(), *s.begin(), *s.rbegin(), ms, fmod(w0, 1e6), fmod(w1, 1e6));
  return 0;
}
