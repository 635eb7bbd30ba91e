// What a cold translation costs on a GH100 (issue 45: `translation.walk_levels`, walks through
// the L2): a kernel's first touch of freshly allocated memory against the same kernel once the
// shared TLB holds the pages. Two kernels, each timed on a fresh buffer ("cold": nothing of it in
// any TLB) and again on the same buffer after a 512 MiB sweep of another, already translated
// buffer has evicted it from the L2 and the first-level TLBs ("warm": the second-level TLB
// still holds it, its reach is >= 48 GiB, reports/hw/README.md E3):
//  - `stream`: gups_corun.cu's streaming victim, one sweep, 66 CTAs x 1024 threads on 66 SMs
//    (shared memory forces one CTA per SM), over 64 MiB (32 pages of 2 MiB) and 256 MiB.
//  - `touch`: one thread per 2 MiB page loads one word of it (`ld.global.cg`), all pages in
//    parallel, 1, 32, 256 and 2048 pages: the time of a launch is then about one translation.
//  - `chase`: one thread, one dependent load per 2 MiB page over 64 and 512 fresh pages, timed
//    with clock64 inside the kernel: SM cycles per hop, cold (a walk each) vs warm (an L2 TLB
//    hit each); both miss the L2 (flushed), so cold - warm per hop is what a walk adds.
// Each row: the best of 5 trials, each on its own fresh buffer.
// nvcc -O3 -arch=sm_90 tlb_cold.cu -o tlb_cold && ./tlb_cold
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
#define CK(x) do{cudaError_t e=(x); if(e!=cudaSuccess){printf("%s:%d %s\n",__FILE__,__LINE__,cudaGetErrorString(e)); exit(1);}}while(0)

__global__ void stream(const float* a, uint64_t n, float* out) {
  float s = 0; uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
  for (uint64_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) s += a[i];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

__global__ void touch(const float* a, int pages, float* out) {
  int p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p < pages) out[p] = __ldcg(&a[(uint64_t)p * (2u << 20) / 4 + (p * 37) % 512]);
}

__global__ void chase(const unsigned* a, int pages, unsigned mask, unsigned long long* cyc) {
  unsigned idx = 0;
  long long t0 = clock64();
  for (int p = 0; p < pages; p++) {
    unsigned v = __ldcg(&a[(uint64_t)p * (512u << 10) + (unsigned)((p * 37) % 512) * 32 + idx]);
    idx = v & mask;  // mask = 0 at run time: each load's address depends on the previous load
  }
  long long t1 = clock64();
  cyc[0] = (unsigned long long)(t1 - t0); cyc[1] = idx;
}

static cudaEvent_t e0, e1;
static int half; static size_t smem;
static float *flushbuf, *out;
static const uint64_t flush_n = (512ull << 20) / 4;

template <class F> float timed(F f) {
  CK(cudaEventRecord(e0)); f(); CK(cudaEventRecord(e1)); CK(cudaEventSynchronize(e1));
  float ms; CK(cudaEventElapsedTime(&ms, e0, e1)); return ms;
}
static void flush() { stream<<<half, 1024, smem>>>(flushbuf, flush_n, out); CK(cudaDeviceSynchronize()); }

// Best of 5 cold and warm times (us) of `launch(buf)` on fresh `bytes`-byte buffers.
template <class L> void row(const char* name, size_t bytes, L launch) {
  std::vector<float> cold, warm;
  std::vector<float*> bufs;  // (not freed until the row ends: a freed range could come back)
  for (int t = 0; t < 5; t++) {
    float* b; CK(cudaMalloc(&b, bytes)); bufs.push_back(b);
    flush();
    cold.push_back(timed([&] { launch(b); }) * 1000);
    flush();
    warm.push_back(timed([&] { launch(b); }) * 1000);
  }
  for (float* b : bufs) CK(cudaFree(b));
  float c = *std::min_element(cold.begin(), cold.end()), w = *std::min_element(warm.begin(), warm.end());
  printf("%-22s cold %9.2f us  warm %9.2f us  cold-warm %8.2f us  (cold trials:", name, c, w, c - w);
  for (float x : cold) printf(" %.1f", x);
  printf(")\n");
}

// Best of 5 cold and warm cycles per hop of `chase` over `pages` fresh pages.
static void chase_row(int pages) {
  std::vector<double> cold, warm;
  std::vector<unsigned*> bufs;
  unsigned long long* cyc; CK(cudaMalloc(&cyc, 16));
  for (int t = 0; t < 5; t++) {
    unsigned* b; CK(cudaMalloc(&b, (size_t)pages << 21)); bufs.push_back(b);
    for (int w = 0; w < 2; w++) {
      flush();
      chase<<<1, 1>>>(b, pages, 0u, cyc); CK(cudaDeviceSynchronize());
      unsigned long long c; CK(cudaMemcpy(&c, cyc, 8, cudaMemcpyDeviceToHost));
      (w == 0 ? cold : warm).push_back((double)c / pages);
    }
  }
  for (unsigned* b : bufs) CK(cudaFree(b));
  CK(cudaFree(cyc));
  double c = *std::min_element(cold.begin(), cold.end()), w = *std::min_element(warm.begin(), warm.end());
  printf("chase %4d pages        cold %7.1f cyc/hop  warm %7.1f cyc/hop  cold-warm %7.1f cyc/hop  (cold trials:", pages, c, w, c - w);
  for (double x : cold) printf(" %.0f", x);
  printf("; warm:");
  for (double x : warm) printf(" %.0f", x);
  printf(")\n");
}

int main() {
  cudaDeviceProp p; CK(cudaGetDeviceProperties(&p, 0));
  half = p.multiProcessorCount / 2; smem = p.sharedMemPerBlockOptin / 2 + 1024;
  int clk = 0; CK(cudaDeviceGetAttribute(&clk, cudaDevAttrClockRate, 0));
  printf("%s, %d SMs, L2 %d MB, clock %d MHz\n", p.name, p.multiProcessorCount, p.l2CacheSize >> 20, clk / 1000);
  CK(cudaFuncSetAttribute(stream, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
  CK(cudaMalloc(&flushbuf, flush_n * 4)); CK(cudaMemset(flushbuf, 0, flush_n * 4));
  CK(cudaMalloc(&out, 1 << 24));
  for (int i = 0; i < 3; i++) flush();  // warm-up: module load, clocks
  for (size_t mib : {64, 256}) {
    char name[64]; snprintf(name, sizeof name, "stream %zu MiB", mib);
    uint64_t n = (mib << 20) / 4;
    row(name, mib << 20, [&](float* b) { stream<<<half, 1024, smem>>>(b, n, out); });
  }
  for (int pages : {64, 512}) chase_row(pages);
  for (int pages : {1, 32, 256, 2048}) {
    char name[64]; snprintf(name, sizeof name, "touch %d pages", pages);
    row(name, (size_t)pages << 21, [&](float* b) { touch<<<(pages + 255) / 256, 256>>>(b, pages, out); });
  }
  return 0;
}
