// DRAM latency on a GH100, and what a co-runner's traffic does to another SM's loads
// (issue 45). Three parts, all printed as "key value" lines:
//  1. Unloaded latency: one thread chases n nodes (one per 128 B line, `ld.global.cg`, so the
//     L1 never holds them), each load's address the previous load's value. "cold" runs
//     after the nodes were evicted by a 1 GiB read of another buffer (clean L2 lines),
//     "dirty" after a 1 GiB write (the L2 full of dirty lines), "warm" right after a cold
//     run (the same nodes, now L2 hits: same pages, same TLB state). Layouts: random lines
//     over a footprint, consecutive lines, lines 2 KiB / 4 KiB / 64 KiB apart.
//  2. The same chase on an SM of its own beside a hog on 66 other SMs (gups of
//     ../punyala/hw/gups_corun.cu, or its stream kernel): an 8192-line L2-resident set
//     (warm), a DRAM chase (cold), and rings of 64, 512 and 4 L2-resident lines; then again
//     with the chase's 8 MiB marked persisting in a set-aside L2 (access policy window).
//     2b. The 4-line ring and the DRAM chase beside GUPS on 8 to 66 SMs.
//  3. The stream victim of gups_corun.cu alone on 66 SMs at 256 / 512 / 1024 threads, as
//     written and with its loop kept rolled (`#pragma unroll 1`: one load in flight per
//     warp), to read its loads in flight from the rate (Little's law).
// nvcc -O3 -arch=sm_90 dram_latency.cu -o dram_latency && ./dram_latency   (./dram_latency beside: parts 2, 2b only)
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <random>
#include <unistd.h>
#include <cuda_runtime.h>
#define CK(x) do{cudaError_t e=(x); if(e!=cudaSuccess){printf("%s:%d %s\n",__FILE__,__LINE__,cudaGetErrorString(e)); exit(1);}}while(0)

__device__ __forceinline__ uint64_t gtimer() { uint64_t t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t; }

// buf[off[i]] = off[i+1] (offsets in 8-byte words; one node per line)
__global__ void build(uint64_t* buf, const uint64_t* off, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) buf[off[i]] = off[(i + 1) % n];
}
__global__ void chase(const uint64_t* buf, uint64_t start, int n, long long* res) {
  uint64_t p = start;
  long long c0 = clock64(); uint64_t g0 = gtimer();
  for (int i = 0; i < n; i++) p = __ldcg(&buf[p]);
  long long c1 = clock64(); uint64_t g1 = gtimer();
  res[0] = c1 - c0; res[1] = (long long)(g1 - g0); res[2] = (long long)p;
}
__global__ void readall(const uint4* a, size_t n, uint4* out) {  // evicts with clean lines
  uint4 s = make_uint4(0, 0, 0, 0);
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    uint4 v = __ldcg(&a[i]); s.x ^= v.x; s.y ^= v.y; s.z ^= v.z; s.w ^= v.w;
  }
  if (s.x == 0x12345678u) out[0] = s;
}
// the kernels of ../punyala/hw/gups_corun.cu
__global__ void gups(uint64_t* t, uint64_t mask, long iters, volatile int* stop) {
  uint64_t x = 0x9E3779B97F4A7C15ull * (blockIdx.x * blockDim.x + threadIdx.x + 1);
  for (long i = 0; i < iters; i++) {
    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    t[x & mask] ^= x;
    if ((i & 1023) == 0 && *stop) break;
  }
}
__global__ void stream(const float* a, uint64_t n, int passes, float* out) {
  float s = 0; uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
  for (int p = 0; p < passes; p++)
    for (uint64_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) s += a[i];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
__global__ void stream_rolled(const float* a, uint64_t n, int passes, float* out) {
  float s = 0; uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
  for (int p = 0; p < passes; p++) {
#pragma unroll 1
    for (uint64_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) s += a[i];
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

static uint64_t *buf, *offd; static long long* res; static uint8_t* flushb; static uint4* sink;
static const size_t BUF = 16ull << 30, FLUSH = 1ull << 30;
static size_t smem_half;

static void flush(bool dirty) {
  if (dirty) CK(cudaMemset(flushb, 3, FLUSH));
  else readall<<<1056, 256>>>((const uint4*)flushb, FLUSH / 16, sink);
  CK(cudaDeviceSynchronize());
}
// lay out n nodes: line index of node i
static std::vector<uint64_t> layout(const char* kind, uint64_t span_lines, int n, uint64_t stride_lines) {
  std::vector<uint64_t> v(n);
  if (kind[0] == 'r') {  // random distinct lines over span_lines (a power of two)
    std::mt19937_64 g(42);
    uint64_t mul = (g() | 1), add = g();
    for (int i = 0; i < n; i++) v[i] = (i * mul + add) & (span_lines - 1);
    std::shuffle(v.begin(), v.end(), g);
  } else {
    for (int i = 0; i < n; i++) v[i] = (uint64_t)i * stride_lines;
  }
  for (auto& x : v) x *= 16;  // 16 words per 128 B line
  return v;
}
static void place(const std::vector<uint64_t>& v) {
  CK(cudaMemcpy(offd, v.data(), v.size() * 8, cudaMemcpyHostToDevice));
  build<<<((int)v.size() + 255) / 256, 256>>>(buf, offd, (int)v.size());
  CK(cudaDeviceSynchronize());
}
static void chase_once(uint64_t start, int n, cudaStream_t s, double* cyc, double* ns) {
  chase<<<1, 1, smem_half, s>>>(buf, start, n, res);
  CK(cudaStreamSynchronize(s));
  long long r[3]; CK(cudaMemcpy(r, res, 24, cudaMemcpyDeviceToHost));
  *cyc = (double)r[0] / n; *ns = (double)r[1] / n;
}

int main(int argc, char** argv) {
  bool only_beside = argc > 1;
  cudaDeviceProp p; CK(cudaGetDeviceProperties(&p, 0));
  printf("device %s\nsms %d\nl2_mib %d\n", p.name, p.multiProcessorCount, p.l2CacheSize >> 20);
  smem_half = p.sharedMemPerBlockOptin / 2 + 1024;
  CK(cudaFuncSetAttribute(chase, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_half));
  CK(cudaFuncSetAttribute(gups, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_half));
  CK(cudaFuncSetAttribute(stream, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_half));
  CK(cudaFuncSetAttribute(stream_rolled, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_half));
  CK(cudaMalloc(&buf, BUF)); CK(cudaMalloc(&offd, 1 << 20)); CK(cudaMalloc(&res, 64));
  CK(cudaMalloc(&flushb, FLUSH)); CK(cudaMalloc(&sink, 64));
  CK(cudaMemset(flushb, 1, FLUSH));
  cudaStream_t s1, s2;
  CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking)); CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  const int n = 8192;  // 1 MiB of lines: L2-resident once touched
  double c, t;

  // 1. unloaded latency
  struct L { const char* name; const char* kind; uint64_t span_mib; uint64_t stride_lines; };
  L ls[] = {{"rand_256MiB", "r", 256, 0}, {"rand_1GiB", "r", 1024, 0}, {"rand_16GiB", "r", 16384, 0},
            {"seq_128B", "s", 0, 1}, {"stride_2KiB", "s", 0, 16}, {"stride_4KiB", "s", 0, 32},
            {"stride_64KiB", "s", 0, 512}};
  for (auto& l : ls) {
    if (only_beside) break;
    auto v = layout(l.kind, (l.span_mib << 20) / 128, n, l.stride_lines);
    place(v);
    for (int rep = 0; rep < 2; rep++) {
      flush(false); chase_once(v[0], n, s2, &c, &t);
      printf("lat %s cold cycles %.1f ns %.1f mhz %.0f\n", l.name, c, t, c / t * 1000);
      chase_once(v[0], n, s2, &c, &t);
      printf("lat %s warm cycles %.1f ns %.1f\n", l.name, c, t);
      flush(true); chase_once(v[0], n, s2, &c, &t);
      printf("lat %s dirty cycles %.1f ns %.1f\n", l.name, c, t);
    }
  }

  // 2. beside a hog on 66 SMs
  int half = p.multiProcessorCount / 2;
  uint64_t gn = 1ull << 29; uint64_t* tab; CK(cudaMalloc(&tab, gn * 8)); CK(cudaMemset(tab, 0, gn * 8));
  uint64_t sn = (1ull << 30) / 4; float *sa, *out; CK(cudaMalloc(&sa, sn * 4)); CK(cudaMalloc(&out, 1 << 24));
  CK(cudaMemset(sa, 0, sn * 4));
  int* stop; CK(cudaMalloc(&stop, 4));
  // rings of 4, 64 and 512 lines re-read in turn: beside GUPS only the 4-line ring is re-read
  // before GUPS's own allocations (~5.7 lines a cycle) could evict it under LRU
  auto l2v = layout("r", (8ull << 20) / 128, n, 0);           // L2-resident set
  auto drv = layout("r", (8192ull << 20) / 128, n, 0);         // DRAM set (8 GiB span)
  auto r64 = layout("r", (8ull << 20) / 128, 64, 0), r512 = layout("r", (8ull << 20) / 128, 512, 0);
  auto r4 = layout("r", (8ull << 20) / 128, 4, 0);
  const char* wn2[5] = {"l2_chase", "dram_chase", "l2_ring64", "l2_ring512", "l2_ring4"};
  // second pass: the chase's stream marks its first 8 MiB persisting in a set-aside L2
  // (CUDA access policy window): the hog cannot evict those lines, so the "l2" cases are
  // hits for certain and their latency is the path to the slice and back
  for (int persist = 0; persist < 2; persist++) {
  if (persist) {
    CK(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 16u << 20));
    cudaStreamAttrValue a = {};
    a.accessPolicyWindow.base_ptr = buf; a.accessPolicyWindow.num_bytes = 8u << 20;
    a.accessPolicyWindow.hitRatio = 1.0f;
    a.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
    a.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
    CK(cudaStreamSetAttribute(s2, cudaStreamAttributeAccessPolicyWindow, &a));
  }
  for (int hog = 0; hog < 3; hog++) {
    const char* hn = hog == 0 ? "alone" : hog == 1 ? "gups" : "stream";
    for (int which = 0; which < 5; which++) {
      if (persist && which == 1) continue;
      auto& v = which == 0 ? l2v : which == 1 ? drv : which == 2 ? r64 : which == 3 ? r512 : r4;
      place(v);
      if (which != 1) chase_once(v[0], n, s2, &c, &t); else flush(false);
      CK(cudaMemset(stop, 0, 4)); CK(cudaDeviceSynchronize());
      if (hog == 1) gups<<<half, 1024, smem_half, s1>>>(tab, gn - 1, 1L << 40, stop);
      if (hog == 2) stream<<<half, 1024, smem_half, s1>>>(sa, sn, 40, out);
      if (hog) usleep(20000);
      chase_once(v[0], n, s2, &c, &t);
      bool overlapped = hog == 0 || cudaStreamQuery(s1) == cudaErrorNotReady;
      int one = 1; CK(cudaMemcpyAsync(stop, &one, 4, cudaMemcpyHostToDevice, s2));
      CK(cudaStreamSynchronize(s2));
      if (hog == 2) { CK(cudaDeviceSynchronize()); }
      CK(cudaDeviceSynchronize());
      printf("beside %s %s%s cycles %.1f ns %.1f overlapped %d\n", hn, wn2[which], persist ? "_persisting" : "", c, t, (int)overlapped);
    }
  }
  }

  // 2b. GUPS intensity: ring4 (L2 hits) and dram_chase beside GUPS on G SMs x T threads
  for (int G : {8, 16, 33, 66}) for (int T : {256, 1024}) {
    if (T == 256 && G != 66) continue;
    for (int which = 0; which < 2; which++) {
      auto& v = which == 0 ? r4 : drv;
      place(v);
      if (which == 0) chase_once(v[0], n, s2, &c, &t); else flush(false);
      CK(cudaMemset(stop, 0, 4)); CK(cudaDeviceSynchronize());
      gups<<<G, T, smem_half, s1>>>(tab, gn - 1, 1L << 40, stop);
      usleep(20000);
      chase_once(v[0], n, s2, &c, &t);
      bool overlapped = cudaStreamQuery(s1) == cudaErrorNotReady;
      int one = 1; CK(cudaMemcpyAsync(stop, &one, 4, cudaMemcpyHostToDevice, s2));
      CK(cudaDeviceSynchronize());
      printf("gups_sms %d threads %d %s cycles %.1f ns %.1f overlapped %d\n", G, T, which == 0 ? "l2_ring4" : "dram_chase", c, t, (int)overlapped);
    }
    // GUPS's own rate at this size (fixed work, alone)
    cudaEvent_t a0, a1; CK(cudaEventCreate(&a0)); CK(cudaEventCreate(&a1));
    CK(cudaMemset(stop, 0, 4)); CK(cudaDeviceSynchronize());
    CK(cudaEventRecord(a0, s1)); gups<<<G, T, smem_half, s1>>>(tab, gn - 1, 2000, stop); CK(cudaEventRecord(a1, s1));
    CK(cudaEventSynchronize(a1)); float gms; CK(cudaEventElapsedTime(&gms, a0, a1));
    printf("gups_sms %d threads %d alone_gups_per_s %.3e\n", G, T, (double)G * T * 2000 / (gms * 1e-3));
  }

  // 3. stream victim alone: rate vs threads, as written and rolled
  cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
  for (int rolled = 0; rolled < (only_beside ? 0 : 2); rolled++)
    for (int T : {256, 512, 1024}) for (int G : {half, (int)p.multiProcessorCount}) {
      float ms = 0;
      for (int rep = 0; rep < 2; rep++) {
        CK(cudaEventRecord(e0, s2));
        if (rolled) stream_rolled<<<G, T, smem_half, s2>>>(sa, sn, 4, out);
        else stream<<<G, T, smem_half, s2>>>(sa, sn, 4, out);
        CK(cudaEventRecord(e1, s2)); CK(cudaEventSynchronize(e1));
        CK(cudaEventElapsedTime(&ms, e0, e1));
      }
      double gbs = 4.0 * sn * 4 / (ms * 1e-3) / 1e9;
      double trips = 4.0 * sn / ((double)G * T);
      printf("stream %s blocks %d threads %d ms %.3f gbs %.1f ns_per_trip %.1f\n", rolled ? "rolled" : "as_written", G, T, ms, gbs, ms * 1e6 / trips);
    }
  return 0;
}
