// Microbenchmarks for the engine's launch, CTA-dispatch, address-translation and
// co-residency parameters (issue 45), run on a Hopper GPU. Each experiment prints one
// block of "key value" lines; README.md beside this file says what each measures.
//
//   nvcc -O3 -arch=sm_90 -o hopper_micro hopper_micro.cu && ./hopper_micro
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
#include <vector>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1); } } while (0)

__device__ __forceinline__ uint64_t gtime() { uint64_t t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t; }
__device__ __forceinline__ uint32_t smid() { uint32_t s; asm volatile("mov.u32 %0, %%smid;" : "=r"(s)); return s; }
__device__ __forceinline__ void spin(long cycles) { long t0 = clock64(); while (clock64() - t0 < cycles) {} }

// One record per CTA: SM, start/end on the SM's clock, start/end on the global timer.
struct Rec { uint32_t sm, kernel; uint64_t c0, c1, g0, g1; };

__global__ void timed(Rec* r, int kernel, long cycles) {
  uint64_t g0 = gtime(); long c0 = clock64();
  __syncthreads();
  spin(cycles);
  __syncthreads();
  if (threadIdx.x == 0) {
    Rec x; x.sm = smid(); x.kernel = kernel; x.c0 = c0; x.c1 = clock64(); x.g0 = g0; x.g1 = gtime();
    r[blockIdx.x] = x;
  }
}
__global__ void empty() {}

// SM clock against the global timer (MHz).
__global__ void clockrate(double* mhz) {
  uint64_t g0 = gtime(); long c0 = clock64();
  spin(20000000);
  uint64_t g1 = gtime(); long c1 = clock64();
  *mhz = (double)(c1 - c0) / (double)(g1 - g0) * 1000.0;
}

// Pointer chase through `n` nodes (bypassing L1: ld.global.cg); cycles per access.
__global__ void chase(uint64_t* start, int n, int rounds, double* cyc) {
  uint64_t* p = start;
  for (int i = 0; i < n; i++) p = (uint64_t*)__ldcg((const unsigned long long*)p);  // warm
  long t0 = clock64();
  for (int i = 0; i < rounds; i++) p = (uint64_t*)__ldcg((const unsigned long long*)p);
  long t1 = clock64();
  *cyc = (double)(t1 - t0) / rounds;
  if (p == nullptr) *cyc = -1;  // keep the chain live
}
// node i lives at base + off[i]; it points to node i+1 (cyclic)
__global__ void link(char* base, const uint64_t* off, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    *(uint64_t*)(base + off[i]) = (uint64_t)(base + off[(i + 1) % n]);
}

static double median(std::vector<double> v) { std::sort(v.begin(), v.end()); return v.empty() ? 0 : v[v.size() / 2]; }

int main() {
  cudaDeviceProp p; CK(cudaGetDeviceProperties(&p, 0));
  int sms = p.multiProcessorCount;
  printf("device %s\nsms %d\nl2_bytes %d\n", p.name, sms, p.l2CacheSize);
  double* dv; CK(cudaMallocManaged(&dv, 8));
  clockrate<<<1, 1>>>(dv); CK(cudaDeviceSynchronize());
  double mhz = *dv;
  printf("sm_clock_mhz %.0f\n", mhz);

  // E1: kernel launch. (a) back-to-back empty launches: host-side cost per launch;
  // (b) the GPU-side gap between one kernel's last CTA ending and the next kernel's first
  // CTA starting, same stream, host far ahead (each kernel ~20 us).
  {
    cudaEvent_t a, b; CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
    for (int i = 0; i < 100; i++) empty<<<1, 32>>>();
    CK(cudaEventRecord(a));
    for (int i = 0; i < 10000; i++) empty<<<1, 32>>>();
    CK(cudaEventRecord(b)); CK(cudaEventSynchronize(b));
    float ms; CK(cudaEventElapsedTime(&ms, a, b));
    printf("empty_launch_us %.3f\n", ms * 1000 / 10000);
    const int K = 200, C = sms;
    Rec* r; CK(cudaMallocManaged(&r, sizeof(Rec) * K * C));
    for (int k = 0; k < K; k++) timed<<<C, 128>>>(r + k * C, k, 40000);
    CK(cudaDeviceSynchronize());
    std::vector<double> gap;
    for (int k = 20; k + 1 < K; k++) {
      uint64_t end = 0, start = UINT64_MAX;
      for (int c = 0; c < C; c++) { end = std::max(end, r[k * C + c].g1); start = std::min(start, r[(k + 1) * C + c].g0); }
      gap.push_back((double)start - (double)end);
    }
    double g = median(gap);
    printf("kernel_gap_ns_median %.0f\nkernel_gap_cycles_median %.0f\n", g, g * mhz / 1000);
    std::sort(gap.begin(), gap.end());
    printf("kernel_gap_ns_p10_p90 %.0f %.0f\n", gap[gap.size() / 10], gap[gap.size() * 9 / 10]);
    CK(cudaFree(r));
  }

  // E2: CTA dispatch. (a) one CTA per SM at a time (shared memory forces it), 8 waves:
  // on each SM, cycles from a CTA's end to the next CTA's start; (b) the first wave's
  // start spread across SMs; (c) the same with small CTAs (64 threads, 16 per SM).
  {
    const int W = 8, C = sms * W;
    Rec* r; CK(cudaMallocManaged(&r, sizeof(Rec) * C * 16));
    size_t smem = p.sharedMemPerBlockOptin / 2 + 1024;
    CK(cudaFuncSetAttribute(timed, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    for (int rep = 0; rep < 2; rep++) {
      timed<<<C, 1024, smem>>>(r, 0, 20000); CK(cudaDeviceSynchronize());
    }
    std::vector<std::vector<Rec>> by(sms);
    uint64_t gmin = UINT64_MAX, gmax = 0;
    std::vector<Rec> all(r, r + C);
    std::sort(all.begin(), all.end(), [](const Rec& a, const Rec& b) { return a.g0 < b.g0; });
    for (int i = 0; i < sms; i++) { gmin = std::min(gmin, all[i].g0); gmax = std::max(gmax, all[i].g0); }
    for (int c = 0; c < C; c++) by[r[c].sm].push_back(r[c]);
    std::vector<double> gap;
    for (auto& v : by) {
      std::sort(v.begin(), v.end(), [](const Rec& a, const Rec& b) { return a.c0 < b.c0; });
      for (size_t i = 1; i < v.size(); i++) gap.push_back((double)v[i].c0 - (double)v[i - 1].c1);
    }
    printf("cta_gap_1perSM_cycles_median %.0f\n", median(gap));
    printf("first_wave_start_spread_ns %.0f\n", (double)(gmax - gmin));
    // (c) small CTAs: 16 resident per SM (64 threads, no shared memory), 16 waves
    const int C2 = sms * 16 * 16;
    Rec* r2; CK(cudaMallocManaged(&r2, sizeof(Rec) * C2));
    for (int rep = 0; rep < 2; rep++) { timed<<<C2, 64>>>(r2, 0, 20000); CK(cudaDeviceSynchronize()); }
    std::vector<std::vector<Rec>> by2(sms);
    for (int c = 0; c < C2; c++) by2[r2[c].sm].push_back(r2[c]);
    // per SM: sort ends and starts; the i-th start after the first wave follows the i-th end
    std::vector<double> gap2;
    for (auto& v : by2) {
      std::vector<uint64_t> s, e;
      for (auto& x : v) { s.push_back(x.c0); e.push_back(x.c1); }
      std::sort(s.begin(), s.end()); std::sort(e.begin(), e.end());
      size_t resident = 0;
      while (resident < s.size() && s[resident] < e[0]) resident++;
      for (size_t i = resident; i < s.size(); i++) gap2.push_back((double)s[i] - (double)e[i - resident]);
      if (&v == &by2[0]) printf("small_cta_resident_per_sm %zu\n", resident);
    }
    printf("cta_gap_small_cycles_median %.0f\n", median(gap2));
    CK(cudaFree(r)); CK(cudaFree(r2));
  }

  // E3: address translation. A pointer chase, one node per step of `stride` bytes, over
  // n nodes (random order, lines offset so they spread over L2 sets; every node stays in
  // the L2). Latency against footprint shows each TLB level's reach and miss cost.
  {
    size_t big = (size_t)48 << 30;
    size_t freeb, totb; CK(cudaMemGetInfo(&freeb, &totb));
    if (big > freeb - ((size_t)4 << 30)) big = (freeb - ((size_t)4 << 30)) & ~(((size_t)2 << 20) - 1);
    char* base; CK(cudaMalloc(&base, big));
    printf("tlb_buffer_gib %.1f\n", big / double(1 << 30));
    uint64_t* off; CK(cudaMallocManaged(&off, sizeof(uint64_t) * 65536));
    double* cyc; CK(cudaMallocManaged(&cyc, 8));
    srand(45);
    const size_t strides[3] = {(size_t)2 << 20, (size_t)64 << 10, (size_t)32 << 20};
    const char* sname[3] = {"2MiB", "64KiB", "32MiB"};
    const int ns[] = {1, 2, 4, 8, 12, 16, 20, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768};
    for (int s = 0; s < 3; s++) {
      for (int n : ns) {
        if ((size_t)n * strides[s] > big) break;
        std::vector<int> perm(n);
        for (int i = 0; i < n; i++) perm[i] = i;
        for (int i = n - 1; i > 0; i--) std::swap(perm[i], perm[rand() % (i + 1)]);
        for (int i = 0; i < n; i++) off[i] = (uint64_t)perm[i] * strides[s] + (uint64_t)(perm[i] % 512) * 128;
        link<<<64, 256>>>(base, off, n); CK(cudaDeviceSynchronize());
        chase<<<1, 1>>>((uint64_t*)(base + off[0]), n, 8192, cyc); CK(cudaDeviceSynchronize());
        double c1 = *cyc;
        chase<<<1, 1>>>((uint64_t*)(base + off[0]), n, 8192, cyc); CK(cudaDeviceSynchronize());
        printf("tlb stride %s nodes %d footprint_mib %.0f cycles %.1f %.1f\n", sname[s], n, (double)n * strides[s] / (1 << 20), c1, *cyc);
      }
    }
    // L2 hit and DRAM latency for reference: 64 nodes in one page (L2 hit), and 64 nodes
    // 2 MiB apart each touched for the first time after a 256 MiB sweep (not measured: the
    // warm pass makes them hits; see README).
    CK(cudaFree(base)); CK(cudaFree(off)); CK(cudaFree(cyc));
  }

  // E4: co-residency of two kernels in two streams. (a) A: 4 waves of one CTA per SM
  // (shared memory), B launched just after into another stream with the same shape:
  // how many of B's CTAs start before A's last CTA starts (a freed slot going to B).
  // (b) A: one wave, one 256-thread CTA per SM, long; B: small CTAs: do B's CTAs run on
  // an SM while A's CTA is resident there (co-residency), and how many per SM.
  {
    cudaStream_t s1, s2; CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking)); CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    size_t smem = p.sharedMemPerBlockOptin / 2 + 1024;
    const int C = sms * 4;
    Rec *ra, *rb; CK(cudaMallocManaged(&ra, sizeof(Rec) * C * 8)); CK(cudaMallocManaged(&rb, sizeof(Rec) * C * 8));
    for (int rep = 0; rep < 2; rep++) {
      timed<<<C, 1024, smem, s1>>>(ra, 0, 200000);
      timed<<<C, 1024, smem, s2>>>(rb, 1, 200000);
      CK(cudaDeviceSynchronize());
    }
    uint64_t lastA = 0, firstB = UINT64_MAX, lastAend = 0;
    for (int c = 0; c < C; c++) { lastA = std::max(lastA, ra[c].g0); firstB = std::min(firstB, rb[c].g0); lastAend = std::max(lastAend, ra[c].g1); }
    int early = 0;
    for (int c = 0; c < C; c++) early += rb[c].g0 < lastA;
    printf("corun_a_full_b_ctas_before_last_a_start %d of %d\n", early, C);
    printf("corun_a_full_first_b_minus_last_a_start_ns %.0f\n", (double)firstB - (double)lastA);
    // (b)
    const int CB = sms * 32;
    for (int rep = 0; rep < 2; rep++) {
      timed<<<sms, 256, 0, s1>>>(ra, 0, 2000000);
      timed<<<CB, 64, 0, s2>>>(rb, 1, 20000);
      CK(cudaDeviceSynchronize());
    }
    std::vector<int> asm_(sms, 0);
    for (int a = 0; a < sms; a++) asm_[ra[a].sm]++;
    printf("corun_partial_a_distinct_sms %d\n", (int)std::count_if(asm_.begin(), asm_.end(), [](int x) { return x > 0; }));
    int shared = 0; std::vector<int> per(sms, 0);
    for (int c = 0; c < CB; c++)
      for (int a = 0; a < sms; a++)
        if (ra[a].sm == rb[c].sm && rb[c].g0 >= ra[a].g0 && rb[c].g0 < ra[a].g1) { shared++; per[rb[c].sm]++; break; }
    printf("corun_partial_b_ctas_started_beside_a %d of %d\n", shared, CB);
    printf("corun_partial_sms_with_both %d\n", (int)std::count_if(per.begin(), per.end(), [](int x) { return x > 0; }));
  }
  return 0;
}
