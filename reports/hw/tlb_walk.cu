// What a page walk costs on a GH100, and what bounds many of them (issue 45, after
// `tlb_cold.cu`, which found a cold walk adds ~50-60 cycles to a dependent load on
// consecutive pages and ~10 us to 2048 pages touched at once). Every row: a kernel on fresh
// memory ("cold": no page of it in any TLB) and again on the same memory after a 512 MiB sweep
// of another buffer ("warm": the second-level TLB holds its pages, its lines are out of the L2).
//  - `chase stride s`: one thread, 128 dependent loads, one per page, pages s apart (s = 1, 4,
//    16, 64): cycles per hop (clock64). If the last page-table level is fetched a line (several
//    pages' entries) at a time, the walk cost per hop grows with s until no two hops share a line.
//  - `touch N x T`: N pages, N / T CTAs of T threads, thread i loads one word of page i, all at
//    once; span from the first thread's start to the last thread's end (%globaltimer, ns) and,
//    for one CTA, in SM cycles (clock64). One CTA against many CTAs says whether the bound on
//    concurrent walks is per SM or shared.
// Best of 3 trials, each on its own fresh buffer. nvcc -O3 -arch=sm_90 tlb_walk.cu -o tlb_walk
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
#define CK(x) do{cudaError_t e=(x); if(e!=cudaSuccess){printf("%s:%d %s\n",__FILE__,__LINE__,cudaGetErrorString(e)); exit(1);}}while(0)

typedef unsigned long long u64;
__device__ __forceinline__ u64 gtime() { u64 t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t) :: "memory"); return t; }
__device__ __forceinline__ u64 clk() { u64 t; asm volatile("mov.u64 %0, %%clock64;" : "=l"(t) :: "memory"); return t; }

__global__ void sweep(const float* a, uint64_t n, float* out) {
  float s = 0; uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
  for (uint64_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) s += a[i];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

__global__ void chase(const unsigned* a, int hops, int stride, unsigned mask, u64* cyc) {
  unsigned idx = 0;
  u64 t0 = clk();
  for (int h = 0; h < hops; h++) {
    unsigned v = __ldcg(&a[(uint64_t)h * stride * (512u << 10) + (unsigned)((h * 37) % 512) * 32 + idx]);
    idx = v & mask;  // mask = 0 at run time: each load's address depends on the previous load
  }
  u64 t1 = clk();
  cyc[0] = t1 - t0; cyc[1] = idx;
}

// res: min start ns, max end ns, min start cycle, max end cycle
__global__ void touch(const unsigned* a, int pages, u64* res, unsigned* sink) {
  int p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p >= pages) return;
  u64 s = gtime(), c0 = clk();
  unsigned v = __ldcg(&a[(uint64_t)p * (512u << 10) + (unsigned)((p * 37) % 512) * 32]);
  sink[p] = v;  // waits for the load before the end timers
  u64 c1 = clk(), e = gtime();
  atomicMin(&res[0], s); atomicMax(&res[1], e); atomicMin(&res[2], c0); atomicMax(&res[3], c1);
}

static int half; static size_t smem;
static float* flushbuf; static float* out; static unsigned* sink; static u64* res;
static const uint64_t flush_n = (512ull << 20) / 4;
static void flush() { sweep<<<half, 1024, smem>>>(flushbuf, flush_n, out); CK(cudaDeviceSynchronize()); }

static void chase_row(int stride) {
  const int hops = 128;
  std::vector<double> cold, warm; std::vector<unsigned*> bufs;
  for (int t = 0; t < 3; t++) {
    unsigned* b; CK(cudaMalloc(&b, (size_t)hops * stride << 21)); bufs.push_back(b);
    for (int w = 0; w < 2; w++) {
      flush();
      chase<<<1, 1>>>(b, hops, stride, 0u, res); CK(cudaDeviceSynchronize());
      u64 c; CK(cudaMemcpy(&c, res, 8, cudaMemcpyDeviceToHost));
      (w == 0 ? cold : warm).push_back((double)c / hops);
    }
  }
  for (unsigned* b : bufs) CK(cudaFree(b));
  double c = *std::min_element(cold.begin(), cold.end()), w = *std::min_element(warm.begin(), warm.end());
  printf("chase stride %3d pages   cold %7.1f  warm %7.1f  cold-warm %7.1f cyc/hop  (cold:", stride, c, w, c - w);
  for (double x : cold) printf(" %.0f", x);
  printf("; warm:"); for (double x : warm) printf(" %.0f", x); printf(")\n");
}

static void touch_row(int pages, int threads) {
  std::vector<double> cns, wns, ccy, wcy; std::vector<unsigned*> bufs;
  const u64 init[4] = {~0ull, 0, ~0ull, 0};
  for (int t = 0; t < 3; t++) {
    unsigned* b; CK(cudaMalloc(&b, (size_t)pages << 21)); bufs.push_back(b);
    for (int w = 0; w < 2; w++) {
      flush();
      CK(cudaMemcpy(res, init, sizeof init, cudaMemcpyHostToDevice));
      touch<<<(pages + threads - 1) / threads, threads>>>(b, pages, res, sink); CK(cudaDeviceSynchronize());
      u64 r[4]; CK(cudaMemcpy(r, res, sizeof r, cudaMemcpyDeviceToHost));
      (w == 0 ? cns : wns).push_back((double)(r[1] - r[0]));
      (w == 0 ? ccy : wcy).push_back((double)(r[3] - r[2]));
    }
  }
  for (unsigned* b : bufs) CK(cudaFree(b));
  auto mn = [](std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); };
  printf("touch %5d pages x %4d  cold %8.0f ns  warm %8.0f ns  cold-warm %8.0f ns", pages, threads, mn(cns), mn(wns), mn(cns) - mn(wns));
  if (pages <= threads) printf("  | cycles cold %7.0f warm %7.0f cold-warm %7.0f", mn(ccy), mn(wcy), mn(ccy) - mn(wcy));
  printf("  (cold ns:"); for (double x : cns) printf(" %.0f", x); printf(")\n");
}

int main() {
  cudaDeviceProp p; CK(cudaGetDeviceProperties(&p, 0));
  half = p.multiProcessorCount / 2; smem = p.sharedMemPerBlockOptin / 2 + 1024;
  printf("%s, %d SMs, L2 %d MB\n", p.name, p.multiProcessorCount, p.l2CacheSize >> 20);
  CK(cudaFuncSetAttribute(sweep, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  CK(cudaMalloc(&flushbuf, flush_n * 4)); CK(cudaMemset(flushbuf, 0, flush_n * 4));
  CK(cudaMalloc(&out, 1 << 24)); CK(cudaMalloc(&sink, 1 << 24)); CK(cudaMalloc(&res, 64));
  for (int i = 0; i < 3; i++) flush();
  for (int s : {1, 4, 16, 64}) chase_row(s);
  for (int n : {64, 256, 1024}) touch_row(n, n);
  touch_row(2048, 256);
  touch_row(2048, 32);
  touch_row(8192, 128);
  touch_row(8192, 1024);
  return 0;
}
