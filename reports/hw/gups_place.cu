// Does it matter where GUPS and its victim sit? (issue 45, the L2-reuse victim's gap)
// The kernels of ../punyala/hw/gups_corun.cu, with GUPS pinned to a chosen set of SMs: GUPS
// launches one CTA per SM on every SM (shared memory forces one per SM) and the CTAs on SMs
// outside the set leave at once, so the victim's CTAs, launched next, take exactly the SMs
// left. Alone, the GUPS CTAs on the set only wait (a blocker), so the victim runs on the same
// SMs either way. Placements: the hardware's own (GUPS 66 CTAs first, as gups_corun.cu),
// even SMs (every victim SM shares its TPC, SMs 2k and 2k+1, with a GUPS SM), the lower
// half of the SM ids, whole TPCs interleaved (SM id mod 4 < 2), and whole GPCs (found from
// thread-block clusters of 8, which the hardware keeps inside one GPC). Then GUPS variants on the
// hardware's placement and on whole GPCs: each warp inside one 2 MiB page, loads only, stores only.
// nvcc -O3 -arch=sm_90 gups_place.cu -o gups_place && ./gups_place   (./gups_place rate: GUPS alone only;
// ONLY=hw: the hardware's placement and its variants only; GRAN=32: ask for a 32 B L2 fetch granularity)
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <vector>
#include <map>
#include <string>
#include <algorithm>
#include <unistd.h>
#include <cuda_runtime.h>
#define CK(x) do{cudaError_t e=(x); if(e!=cudaSuccess){printf("%s:%d %s\n",__FILE__,__LINE__,cudaGetErrorString(e)); exit(1);}}while(0)

__device__ __forceinline__ int smid() { unsigned s; asm volatile("mov.u32 %0, %%smid;" : "=r"(s)); return (int)s; }

// GUPS on the SMs with on[smid] set; `idle`: those CTAs only wait for `stop` (a blocker).
__global__ void gups_on(uint64_t* t, uint64_t mask, long iters, volatile int* stop, const int* on,
                        int idle, int* where, unsigned long long* done, int local) {
  int s = smid();
  if (threadIdx.x == 0) where[blockIdx.x] = s;
  if (!on[s]) return;
  if (idle) { while (!*stop) __nanosleep(20000); return; }
  uint64_t x = 0x9E3779B97F4A7C15ull * (blockIdx.x * blockDim.x + threadIdx.x + 1), acc = 0;
  long i = 0;
  for (; i < iters; i++) {
    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    uint64_t w = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;  // local: each warp in its own 2 MiB page
    uint64_t a = local & 1 ? ((w << 18) + (x & ((1u << 18) - 1))) & mask : x & mask;
    if (local < 2) t[a] ^= x;             // 0, 1: read-modify-write (GUPS)
    else if (local < 4) { acc += t[a]; x ^= acc >> 63; }  // 2, 3: loads only, one in flight a thread
    else t[a] = x;                        // 4, 5: stores only
    if ((i & 1023) == 0 && *stop) break;
  }
  if (acc == 0x123456789ull) t[0] = acc;
  atomicAdd(done, (unsigned long long)i);
}
__global__ void reuse(const float* a, uint64_t mask, int iters, float* out, int* where) {
  if (threadIdx.x == 0) where[blockIdx.x] = smid();
  float s = 0; uint64_t i = blockIdx.x * blockDim.x + threadIdx.x;
  for (int k = 0; k < iters; k++) { s += a[(i + (uint64_t)k * 7919 * 32) & mask]; s = s * 1.0001f + 0.5f; }
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
__global__ void stream(const float* a, uint64_t n, int passes, float* out, int* where) {
  if (threadIdx.x == 0) where[blockIdx.x] = smid();
  float s = 0; uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
  for (int p = 0; p < passes; p++)
    for (uint64_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) s += a[i];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
// Clusters of 8 CTAs, one CTA per SM: the 8 SMs of a cluster are in one GPC.
__global__ void __cluster_dims__(8, 1, 1) gpc_probe(int* where) {
  if (threadIdx.x == 0) where[blockIdx.x] = smid();
}

struct G {
  int n, half, local = 0; size_t smem;
  uint64_t gn = 1ull << 29, rn = (8ull << 20) / 4, sn = (1ull << 30) / 4;
  uint64_t* tab; float *ra, *sa, *out; int* stop; int *on_d, *wg, *wv; unsigned long long* done;
  cudaStream_t s1, s2; cudaEvent_t e0, e1;
};

static float victim_ms(G& g, int v, int grid) {  // best of 3 launches after a warm-up
  float best = 1e30f;
  for (int rep = 0; rep < 4; rep++) {
    CK(cudaEventRecord(g.e0, g.s2));
    if (v == 0) reuse<<<grid, 1024, g.smem, g.s2>>>(g.ra, g.rn - 1, 20000, g.out, g.wv);
    else stream<<<grid, 1024, g.smem, g.s2>>>(g.sa, g.sn, 4, g.out, g.wv);
    CK(cudaEventRecord(g.e1, g.s2)); CK(cudaEventSynchronize(g.e1));
    float m; CK(cudaEventElapsedTime(&m, g.e0, g.e1));
    if (rep && m < best) best = m;
  }
  return best;
}

// GUPS (or a blocker) placed, then the victim on the SMs left; returns the victim's ms.
// on.empty(): the hardware's placement (GUPS <<<half>>> first; nothing at all if idle).
static float corun(G& g, const std::vector<int>& on, bool idle, int v, std::vector<int>& gs, std::vector<int>& vs) {
  std::vector<int> all(g.n, 1);
  const std::vector<int>& m = on.empty() ? all : on;
  int k = 0; for (int x : m) k += x;
  int ggrid = on.empty() ? g.half : g.n, vgrid = on.empty() ? g.half : g.n - k;
  *g.stop = 0;
  CK(cudaMemcpy(g.on_d, m.data(), 4 * g.n, cudaMemcpyHostToDevice));
  CK(cudaMemset(g.wg, 0xff, 4 * g.n)); CK(cudaMemset(g.wv, 0xff, 4 * g.n));
  CK(cudaDeviceSynchronize());
  if (!(on.empty() && idle))
    gups_on<<<ggrid, 1024, g.smem, g.s1>>>(g.tab, g.gn - 1, 1L << 40, g.stop, g.on_d, idle, g.wg, g.done, g.local);
  usleep(20000);
  float ms = victim_ms(g, v, vgrid);
  *g.stop = 1; CK(cudaDeviceSynchronize());
  gs.assign(g.n, -1); vs.assign(g.n, -1);
  CK(cudaMemcpy(gs.data(), g.wg, 4 * g.n, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(vs.data(), g.wv, 4 * g.n, cudaMemcpyDeviceToHost));
  return ms;
}

static double gups_rate(G& g, const std::vector<int>& on) {  // G updates/s, 2000 per thread
  std::vector<int> all(g.n, 1);
  const std::vector<int>& m = on.empty() ? all : on;
  *g.stop = 0;
  CK(cudaMemcpy(g.on_d, m.data(), 4 * g.n, cudaMemcpyHostToDevice));
  CK(cudaMemset(g.done, 0, 8)); CK(cudaDeviceSynchronize());
  CK(cudaEventRecord(g.e0, g.s1));
  gups_on<<<on.empty() ? g.half : g.n, 1024, g.smem, g.s1>>>(g.tab, g.gn - 1, 2000, g.stop, g.on_d, 0, g.wg, g.done, g.local);
  CK(cudaEventRecord(g.e1, g.s1)); CK(cudaEventSynchronize(g.e1));
  float ms; CK(cudaEventElapsedTime(&ms, g.e0, g.e1));
  unsigned long long d; CK(cudaMemcpy(&d, g.done, 8, cudaMemcpyDeviceToHost));
  return (double)d / ms / 1e6;
}

static int find(std::vector<int>& p, int x) { while (p[x] != x) x = p[x] = p[p[x]]; return x; }

int main(int argc, char** argv) {
  alarm(150);
  G g;
  cudaDeviceProp p; CK(cudaGetDeviceProperties(&p, 0));
  g.n = p.multiProcessorCount; g.half = g.n / 2; g.smem = p.sharedMemPerBlockOptin / 2 + 1024;
  printf("%s, %d SMs, L2 %d MB\n", p.name, g.n, p.l2CacheSize >> 20);
  {  // L2 fetch granularity: the default, and GRAN=bytes to ask for another (a hint)
    size_t gran = 0; CK(cudaDeviceGetLimit(&gran, cudaLimitMaxL2FetchGranularity));
    if (getenv("GRAN")) { CK(cudaDeviceSetLimit(cudaLimitMaxL2FetchGranularity, atoi(getenv("GRAN")))); }
    size_t now = 0; CK(cudaDeviceGetLimit(&now, cudaLimitMaxL2FetchGranularity));
    printf("L2 fetch granularity: default %zu B, now %zu B\n", gran, now);
  }
  CK(cudaMalloc(&g.tab, g.gn * 8)); CK(cudaMemset(g.tab, 0, g.gn * 8));
  CK(cudaMalloc(&g.ra, g.rn * 4)); CK(cudaMalloc(&g.sa, g.sn * 4)); CK(cudaMalloc(&g.out, 1 << 24));
  CK(cudaMemset(g.ra, 0, g.rn * 4)); CK(cudaMemset(g.sa, 0, g.sn * 4));
  CK(cudaMallocManaged(&g.stop, 4)); *g.stop = 0;
  CK(cudaMalloc(&g.on_d, 4 * g.n)); CK(cudaMalloc(&g.wg, 4 * g.n)); CK(cudaMalloc(&g.wv, 4 * g.n));
  CK(cudaMalloc(&g.done, 8));
  CK(cudaStreamCreateWithFlags(&g.s1, cudaStreamNonBlocking)); CK(cudaStreamCreateWithFlags(&g.s2, cudaStreamNonBlocking));
  CK(cudaEventCreate(&g.e0)); CK(cudaEventCreate(&g.e1));
  CK(cudaFuncSetAttribute(gups_on, cudaFuncAttributeMaxDynamicSharedMemorySize, g.smem));
  CK(cudaFuncSetAttribute(reuse, cudaFuncAttributeMaxDynamicSharedMemorySize, g.smem));
  CK(cudaFuncSetAttribute(stream, cudaFuncAttributeMaxDynamicSharedMemorySize, g.smem));

  if (argc > 1) {  // `rate`: GUPS alone on the hardware's placement only (for ncu's counters)
    if (getenv("MODE")) g.local = atoi(getenv("MODE"));  // MODE=2: loads only, 4: stores only
    printf("gups (mode %d) alone %.2f G updates/s\n", g.local, gups_rate(g, {}));
    return 0;
  }
  // GPCs: SMs seen together in a cluster of 8 are in one GPC (union over many clusters).
  std::vector<int> par(g.n); for (int i = 0; i < g.n; i++) par[i] = i;
  {
    cudaError_t e = cudaFuncSetAttribute(gpc_probe, cudaFuncAttributeMaxDynamicSharedMemorySize, g.smem);
    int nb = 8 * 512; int* w; CK(cudaMalloc(&w, 4 * nb));
    if (e == cudaSuccess) { gpc_probe<<<nb, 32, g.smem>>>(w); e = cudaDeviceSynchronize(); }
    if (e != cudaSuccess) { printf("gpc probe failed: %s\n", cudaGetErrorString(e)); cudaGetLastError(); }
    else {
      std::vector<int> h(nb); CK(cudaMemcpy(h.data(), w, 4 * nb, cudaMemcpyDeviceToHost));
      for (int c = 0; c < nb / 8; c++) for (int j = 1; j < 8; j++) par[find(par, h[8 * c + j])] = find(par, h[8 * c]);
    }
  }
  std::map<int, std::vector<int>> gpc;
  for (int i = 0; i < g.n; i++) gpc[find(par, i)].push_back(i);
  printf("gpcs %zu:", gpc.size());
  for (auto& kv : gpc) { printf(" ["); for (size_t j = 0; j < kv.second.size(); j++) printf(j ? " %d" : "%d", kv.second[j]); printf("]"); }
  printf("\n");
  std::vector<int> gpc_of(g.n); int gi = 0; for (auto& kv : gpc) { for (int s : kv.second) gpc_of[s] = gi; gi++; }

  struct P { const char* name; std::vector<int> on; };
  std::vector<P> ps;
  ps.push_back({"hardware", {}});
  std::vector<int> a(g.n), b(g.n), c(g.n), d(g.n, 0);
  for (int s = 0; s < g.n; s++) { a[s] = s % 2 == 0; b[s] = s < g.half; c[s] = s % 4 < 2; }
  ps.push_back({"even-sms", a}); ps.push_back({"low-ids", b}); ps.push_back({"tpc-pairs", c});
  if (gpc.size() > 1) {  // whole GPCs, as close to half as they add up to without passing it
    int k = 0; for (auto& kv : gpc) if (k + (int)kv.second.size() <= g.half) { for (int s : kv.second) d[s] = 1; k += kv.second.size(); }
    ps.push_back({"whole-gpcs", d});
  }
  const char* vn[2] = {"reuse", "stream"};
  // later rounds: GUPS variants (`local`: bit 0 each warp inside its own 2 MiB page, i.e. DRAM
  // misses with few TLB misses; 2-3 loads only; 4-5 stores only) on the hardware's placement and on
  // whole GPCs
  const char* vname[6] = {"", "local", "loads", "loads+local", "stores", "stores+local"};
  std::vector<int> modes(ps.size(), 0);
  std::vector<P> base;
  for (auto& q : ps) if (std::string(q.name) == "hardware" || std::string(q.name) == "whole-gpcs") base.push_back(q);
  for (int md = 1; md < 6; md++)
    for (auto& q : base) {
      char* nm = (char*)malloc(48); snprintf(nm, 48, "%s+%s", q.name[0] == 'h' ? "hw" : "gpcs", vname[md]);
      ps.push_back({nm, q.on}); modes.push_back(md);
    }
  const char* only = getenv("ONLY");  // ONLY=hw: the hardware's placement (and its variants) only
  for (size_t pi = 0; pi < ps.size(); pi++) {
    auto& pl = ps[pi];
    g.local = modes[pi];
    if (only && std::string(pl.name).rfind(only, 0) != 0) continue;
    double rate = gups_rate(g, pl.on);
    for (int v = 0; v < 2; v++) {
      std::vector<int> gs, vs, gs2, vs2;
      float alone = corun(g, pl.on, true, v, gs2, vs2);
      float beside = corun(g, pl.on, false, v, gs, vs);
      std::vector<int> isg(g.n, 0), isv(g.n, 0);
      int ng = 0, nv = 0, tpc = 0, gshared = 0, moved = 0;
      for (int x : gs) if (x >= 0 && (pl.on.empty() || pl.on[x])) isg[x] = 1;
      for (int x : vs) if (x >= 0) isv[x] = 1;
      for (int s = 0; s < g.n; s++) { ng += isg[s]; nv += isv[s]; if (isv[s] && isg[s ^ 1]) tpc++; if (isv[s] && isg[s]) moved++; }
      std::vector<int> gg(g.n, 0), gv(g.n, 0);
      for (int s = 0; s < g.n; s++) { if (isg[s]) gg[gpc_of[s]] = 1; if (isv[s]) gv[gpc_of[s]] = 1; }
      for (int i = 0; i < g.n; i++) gshared += gg[i] && gv[i];
      int same = 0; for (int s = 0; s < g.n; s++) if (isv[s]) { for (int x : vs2) if (x == s) { same++; break; } }
      printf("%-18s %-6s alone %7.3f ms beside %7.3f ms slowdown %5.2fx | gups %.2f G/s alone | gups sms %d victim sms %d "
             "(same sms alone %d, on a gups sm %d) victim sms sharing a tpc with gups %d, gpcs holding both %d\n",
             pl.name, vn[v], alone, beside, beside / alone, rate, ng, nv, same, moved, tpc, gshared);
      if (v == 0) {
        printf("  gups sms:"); for (int s = 0; s < g.n; s++) if (isg[s]) printf(" %d", s);
        printf("\n  victim sms:"); for (int s = 0; s < g.n; s++) if (isv[s]) printf(" %d", s);
        printf("\n");
      }
    }
  }
  return 0;
}
