// How long one SM's loads wait when GUPS runs on other SMs of its own GPC, against GUPS in other
// GPCs (issue 45). A one-thread pointer chase (`__ldcg`: an L2-hit ring of 4 lines, or DRAM misses
// over random lines of 1 GiB after a 256 MiB eviction sweep) on one chosen SM; GUPS (the kernel of
// ../punyala/hw/gups_corun.cu, 1024 threads) on a chosen set of SMs. Placement as in gups_place.cu:
// a kernel launches one CTA per SM (shared memory forces it) and the CTAs on SMs outside its set
// leave at once. GPCs from thread-block clusters of 8. Then GUPS variants on 1 and all-but-one SMs
// of the chase's GPC: its table's first 16 MiB, each warp in one page, loads only, stores only.
// nvcc -O3 -arch=sm_90 gpc_chase.cu -o gpc_chase && ./gpc_chase
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <vector>
#include <map>
#include <random>
#include <algorithm>
#include <unistd.h>
#include <cuda_runtime.h>
#define CK(x) do{cudaError_t e=(x); if(e!=cudaSuccess){printf("%s:%d %s\n",__FILE__,__LINE__,cudaGetErrorString(e)); exit(1);}}while(0)

__device__ __forceinline__ int smid() { unsigned s; asm volatile("mov.u32 %0, %%smid;" : "=r"(s)); return (int)s; }

// mode 0: gups_corun.cu's GUPS (4 GiB table); 1: the table's first 16 MiB (L2-resident); 2: each
// warp inside its own 2 MiB page (DRAM misses, few TLB misses); 3: loads only, no store, one in
// flight a thread (h200_gpc_chase.txt's run had them independent); 4: stores only, no load.
__global__ void gups_on(uint64_t* t, uint64_t mask, long iters, volatile int* stop, const int* on, unsigned long long* done, int mode) {
  if (!on[smid()]) return;
  uint64_t x = 0x9E3779B97F4A7C15ull * (blockIdx.x * blockDim.x + threadIdx.x + 1), acc = 0;
  uint64_t w = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  if (mode == 1) mask = (16ull << 20) / 8 - 1;
  long i = 0;
  for (; i < iters; i++) {
    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    uint64_t a = mode == 2 ? ((w << 18) + (x & ((1u << 18) - 1))) & mask : x & mask;
    if (mode == 3) { acc += t[a]; x ^= acc >> 63; }  // the next address waits for the load
    else if (mode == 4) t[a] = x;
    else t[a] ^= x;
    if ((i & 1023) == 0 && *stop) break;
  }
  if (acc == 0x123456789ull) t[0] = acc;
  atomicAdd(done, (unsigned long long)i);
}
__global__ void chase_on(const uint64_t* buf, uint64_t start, int n, int target, long long* res) {
  if (smid() != target || threadIdx.x) return;
  uint64_t p = start;
  long long c0 = clock64();
  for (int i = 0; i < n; i++) p = __ldcg(&buf[p]);
  long long c1 = clock64();
  res[0] = c1 - c0; res[1] = (long long)p; res[2] = 1;
}
__global__ void readall(const uint4* a, size_t n, uint4* out) {
  uint4 s = make_uint4(0, 0, 0, 0);
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    uint4 v = __ldcg(&a[i]); s.x ^= v.x; s.y ^= v.y; s.z ^= v.z; s.w ^= v.w;
  }
  if (s.x == 0x12345678u) out[0] = s;
}
__global__ void __cluster_dims__(8, 1, 1) gpc_probe(int* where) {
  if (threadIdx.x == 0) where[blockIdx.x] = smid();
}
static int find(std::vector<int>& p, int x) { while (p[x] != x) x = p[x] = p[p[x]]; return x; }

int main() {
  alarm(150);
  cudaDeviceProp p; CK(cudaGetDeviceProperties(&p, 0));
  int n = p.multiProcessorCount; size_t smem = p.sharedMemPerBlockOptin / 2 + 1024;
  uint64_t gn = 1ull << 29; uint64_t* tab; CK(cudaMalloc(&tab, gn * 8)); CK(cudaMemset(tab, 0, gn * 8));
  int* stop; CK(cudaMallocManaged(&stop, 4)); *stop = 0;
  int* on_d; CK(cudaMalloc(&on_d, 4 * n));
  unsigned long long* done; CK(cudaMalloc(&done, 8));
  long long* res; CK(cudaMalloc(&res, 24));
  cudaStream_t s1, s2; CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking)); CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  CK(cudaFuncSetAttribute(gups_on, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  CK(cudaFuncSetAttribute(chase_on, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  CK(cudaFuncSetAttribute(gpc_probe, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  // GPCs
  std::vector<int> par(n); for (int i = 0; i < n; i++) par[i] = i;
  for (int it = 0; it < 16; it++) { int nb = 8 * 512; int* w; CK(cudaMalloc(&w, 4 * nb)); gpc_probe<<<nb, 32, smem>>>(w); CK(cudaDeviceSynchronize());
    std::vector<int> h(nb); CK(cudaMemcpy(h.data(), w, 4 * nb, cudaMemcpyDeviceToHost));
    for (int c = 0; c < nb / 8; c++) for (int j = 1; j < 8; j++) par[find(par, h[8 * c + j])] = find(par, h[8 * c]); }
  { std::map<int, std::vector<int>> gpc; for (int i = 0; i < n; i++) gpc[find(par, i)].push_back(i);
    printf("gpcs %zu:", gpc.size());
    for (auto& kv : gpc) { printf(" ["); for (size_t j = 0; j < kv.second.size(); j++) printf(j ? " %d" : "%d", kv.second[j]); printf("]"); }
    printf("\n"); }
  std::vector<int> A, B;
  for (int i = 0; i < n; i++) { if (find(par, i) == find(par, 2)) A.push_back(i); if (find(par, i) == find(par, 8)) B.push_back(i); }
  printf("%s, %d SMs; GPC A (holds SM 2): %zu SMs, GPC B (holds SM 8): %zu SMs\n", p.name, n, A.size(), B.size());
  // chase lists: a 4-line ring; 4096 random lines of 1 GiB
  const uint64_t W = 16;  // 8-byte words a line
  uint64_t* ring; CK(cudaMalloc(&ring, 4 * W * 8));
  { std::vector<uint64_t> h(4 * W, 0); for (int i = 0; i < 4; i++) h[i * W] = ((i + 1) % 4) * W; CK(cudaMemcpy(ring, h.data(), 4 * W * 8, cudaMemcpyHostToDevice)); }
  uint64_t lines = (1ull << 30) / 128; int nd = 4096;
  uint64_t* dbuf; CK(cudaMalloc(&dbuf, 1ull << 30));
  { std::mt19937_64 r(7); std::vector<uint64_t> pick(nd); for (auto& x : pick) x = r() % lines;
    std::sort(pick.begin(), pick.end()); pick.erase(std::unique(pick.begin(), pick.end()), pick.end()); std::shuffle(pick.begin(), pick.end(), r);
    nd = pick.size();
    for (int i = 0; i < nd; i++) { uint64_t v = pick[(i + 1) % nd] * W; CK(cudaMemcpy(dbuf + pick[i] * W, &v, 8, cudaMemcpyHostToDevice)); }
    CK(cudaMemcpy(res, &pick[0], 8, cudaMemcpyHostToDevice)); }
  uint64_t dstart; CK(cudaMemcpy(&dstart, res, 8, cudaMemcpyDeviceToHost)); dstart *= W;
  size_t en = (256ull << 20) / 16; uint4* ev; CK(cudaMalloc(&ev, en * 16)); CK(cudaMemset(ev, 1, en * 16));
  uint4* eo; CK(cudaMalloc(&eo, 64));

  struct Cfg { const char* name; std::vector<int> g; int chase; int mode = 0; };
  std::vector<Cfg> cs;
  int ca = A.back();
  for (int k : {0, 1, 2, 4, 8, (int)A.size() - 1}) {
    if (k > (int)A.size() - 1 || (k == 8 && k == (int)A.size() - 1)) continue;
    std::vector<int> g(A.begin(), A.begin() + k);
    char* nm = (char*)malloc(64); snprintf(nm, 64, "gups on %d SMs of GPC A, chase in A", k); cs.push_back({nm, g, ca});
  }
  cs.push_back({"gups on all but one SM of GPC A, chase in GPC B", std::vector<int>(A.begin(), A.end() - 1), B.back()});
  { std::vector<int> g; for (int i = 0; i < n; i++) if (find(par, i) != find(par, 2)) g.push_back(i);
    cs.push_back({"gups on every SM outside GPC A, chase in A", g, ca}); }
  { std::vector<int> g; std::map<int, int> seen; for (int i = 0; i < n; i++) { int c = find(par, i); if (c != find(par, 2) && !seen.count(c)) { seen[c] = 1; g.push_back(i); } }
    cs.push_back({"gups on one SM of each other GPC, chase in A", g, ca}); }
  const char* mn[5] = {"4 GiB", "16 MiB", "local pages", "loads only", "stores only"};
  for (int mode = 1; mode < 5; mode++)
    for (int k : {1, (int)A.size() - 1}) {
      std::vector<int> g(A.begin(), A.begin() + k);
      char* nm = (char*)malloc(80); snprintf(nm, 80, "gups (%s) on %d SMs of GPC A, chase in A", mn[mode], k); cs.push_back({nm, g, ca, mode});
    }
  for (int mode : {3, 4}) {  // the same GUPS SMs, the chase in another GPC; and GUPS everywhere but A
    char* nm = (char*)malloc(80); snprintf(nm, 80, "gups (%s) on all but one SM of A, chase in B", mn[mode]);
    cs.push_back({nm, std::vector<int>(A.begin(), A.end() - 1), B.back(), mode});
    std::vector<int> g; for (int i = 0; i < n; i++) if (find(par, i) != find(par, 2)) g.push_back(i);
    nm = (char*)malloc(80); snprintf(nm, 80, "gups (%s) on every SM outside A, chase in A", mn[mode]);
    cs.push_back({nm, g, ca, mode});
  }

  for (auto& c : cs) {
    std::vector<int> on(n, 0); for (int s : c.g) on[s] = 1;
    int free_sms = n - (int)c.g.size();
    CK(cudaMemcpy(on_d, on.data(), 4 * n, cudaMemcpyHostToDevice));
    // GUPS alone on the set: its rate
    double rate = 0;
    if (!c.g.empty()) {
      CK(cudaMemset(done, 0, 8)); *stop = 0; CK(cudaDeviceSynchronize());
      cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
      CK(cudaEventRecord(e0, s1)); gups_on<<<n, 1024, smem, s1>>>(tab, gn - 1, 2000, stop, on_d, done, c.mode); CK(cudaEventRecord(e1, s1));
      CK(cudaEventSynchronize(e1)); float ms; CK(cudaEventElapsedTime(&ms, e0, e1));
      unsigned long long d; CK(cudaMemcpy(&d, done, 8, cudaMemcpyDeviceToHost)); rate = d / ms / 1e6;
    }
    *stop = 0; CK(cudaDeviceSynchronize());
    if (!c.g.empty()) gups_on<<<n, 1024, smem, s1>>>(tab, gn - 1, 1L << 40, stop, on_d, done, c.mode);
    usleep(20000);
    double lat[2]; int ran = 1;
    for (int kind = 0; kind < 2; kind++) {
      double best = 1e30;
      for (int rep = 0; rep < 3; rep++) {
        if (kind == 1) { readall<<<264, 1024, 0, s2>>>(ev, en, eo); }
        CK(cudaMemsetAsync(res, 0, 24, s2));
        int loads = kind ? nd : 20000;
        chase_on<<<free_sms, 32, smem, s2>>>(kind ? dbuf : ring, kind ? dstart : 0, loads, c.chase, res);
        CK(cudaStreamSynchronize(s2));
        long long h[3]; CK(cudaMemcpy(h, res, 24, cudaMemcpyDeviceToHost));
        if (!h[2]) ran = 0;
        double v = (double)h[0] / loads; if (v < best) best = v;
      }
      lat[kind] = best;
    }
    *stop = 1; CK(cudaDeviceSynchronize());
    printf("%-56s gups sms %3zu (%.2f G upd/s alone) chase sm %3d%s: L2 hit %6.0f cycles, DRAM miss %6.0f cycles\n",
           c.name, c.g.size(), rate, c.chase, ran ? "" : " (CHASE DID NOT RUN THERE)", lat[0], lat[1]);
  }
  return 0;
}
