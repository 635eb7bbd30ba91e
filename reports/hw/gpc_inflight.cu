// How many DRAM misses one GPC keeps in flight (issue 45): every thread of one 1024-thread CTA per
// chosen SM follows K dependent chains of loads (`__ldcg`), each load's line picked from the value
// the chain's previous load returned, inside its warp's own 2 MiB page of a 4 GiB table (DRAM
// misses; few TLB misses). Lines a cycle over the chosen SMs, for SMs all in one GPC against the
// same number spread one per GPC. Placement and GPCs as in gups_place.cu.
// nvcc -O3 -arch=sm_90 gpc_inflight.cu -o gpc_inflight && ./gpc_inflight
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <vector>
#include <map>
#include <unistd.h>
#include <cuda_runtime.h>
#define CK(x) do{cudaError_t e=(x); if(e!=cudaSuccess){printf("%s:%d %s\n",__FILE__,__LINE__,cudaGetErrorString(e)); exit(1);}}while(0)

__device__ __forceinline__ int smid() { unsigned s; asm volatile("mov.u32 %0, %%smid;" : "=r"(s)); return (int)s; }
__device__ __forceinline__ uint64_t mix(uint64_t x) { x ^= x >> 33; x *= 0xff51afd7ed558ccdull; x ^= x >> 33; x *= 0xc4ceb9fe1a85ec53ull; return x ^ (x >> 33); }

__global__ void fill(uint64_t* t, uint64_t n) {
  for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n; i += (uint64_t)gridDim.x * blockDim.x) t[i] = mix(i);
}
template <int K>
__global__ void chains(const uint64_t* t, uint64_t mask, int iters, const int* on, uint64_t* out) {
  if (!on[smid()]) return;
  uint64_t g = blockIdx.x * blockDim.x + threadIdx.x, base = (g >> 5) << 18, v[K];
#pragma unroll
  for (int k = 0; k < K; k++) v[k] = mix(g * K + k);
  for (int i = 0; i < iters; i++) {
#pragma unroll
    for (int k = 0; k < K; k++) v[k] = __ldcg(&t[(base + (v[k] & ((1u << 18) - 16))) & mask]);
  }
  uint64_t s = 0;
#pragma unroll
  for (int k = 0; k < K; k++) s ^= v[k];
  if (s == 0x1234567ull) out[0] = s;
}
__global__ void __cluster_dims__(8, 1, 1) gpc_probe(int* where) {
  if (threadIdx.x == 0) where[blockIdx.x] = smid();
}
static int find(std::vector<int>& p, int x) { while (p[x] != x) x = p[x] = p[p[x]]; return x; }

int main() {
  alarm(150);
  cudaDeviceProp p; CK(cudaGetDeviceProperties(&p, 0));
  int n = p.multiProcessorCount; size_t smem = p.sharedMemPerBlockOptin / 2 + 1024;
  uint64_t gn = 1ull << 29; uint64_t* tab; CK(cudaMalloc(&tab, gn * 8)); fill<<<1024, 1024>>>(tab, gn); CK(cudaDeviceSynchronize());
  int* on_d; CK(cudaMalloc(&on_d, 4 * n)); uint64_t* out; CK(cudaMalloc(&out, 64));
  CK(cudaFuncSetAttribute(chains<1>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  CK(cudaFuncSetAttribute(chains<4>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  CK(cudaFuncSetAttribute(gpc_probe, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  std::vector<int> par(n); for (int i = 0; i < n; i++) par[i] = i;
  for (int it = 0; it < 16; it++) { int nb = 8 * 512; int* w; CK(cudaMalloc(&w, 4 * nb)); gpc_probe<<<nb, 32, smem>>>(w); CK(cudaDeviceSynchronize());
    std::vector<int> h(nb); CK(cudaMemcpy(h.data(), w, 4 * nb, cudaMemcpyDeviceToHost));
    for (int c = 0; c < nb / 8; c++) for (int j = 1; j < 8; j++) par[find(par, h[8 * c + j])] = find(par, h[8 * c]); }
  std::map<int, std::vector<int>> gpc; for (int i = 0; i < n; i++) gpc[find(par, i)].push_back(i);
  std::vector<int> A = gpc[find(par, 2)], spread;
  for (auto& kv : gpc) if (kv.second.size() >= 8) spread.push_back(kv.second[0]);
  printf("%s, %d SMs; GPC A: %zu SMs; %zu GPCs of 8 or more SMs\n", p.name, n, A.size(), spread.size());
  cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
  auto run = [&](const std::vector<int>& sms, int K, int threads, const char* what) {
    std::vector<int> on(n, 0); for (int s : sms) on[s] = 1;
    CK(cudaMemcpy(on_d, on.data(), 4 * n, cudaMemcpyHostToDevice));
    int iters = K == 1 ? 400 : 100;
    float best = 1e30f;
    for (int rep = 0; rep < 3; rep++) {
      CK(cudaEventRecord(e0));
      if (K == 1) chains<1><<<n, threads, smem>>>(tab, gn - 1, iters, on_d, out);
      else chains<4><<<n, threads, smem>>>(tab, gn - 1, iters, on_d, out);
      CK(cudaEventRecord(e1)); CK(cudaEventSynchronize(e1));
      float ms; CK(cudaEventElapsedTime(&ms, e0, e1)); if (ms < best) best = ms;
    }
    double loads = (double)sms.size() * threads * K * iters, cyc = best * 1e-3 * 1.98e9;
    double per_load = cyc / iters;  // cycles a chain's load takes
    printf("%-22s sms %3zu threads %4d chains %d: %7.3f ms, %6.3f lines/cycle (%.3f per SM), %6.0f cycles a load, in flight %6.0f\n",
           what, sms.size(), threads, K, best, loads / cyc, loads / cyc / sms.size(), per_load, loads / cyc * per_load);
  };
  run({A[0]}, 1, 32, "unloaded");
  for (int k : {1, 2, 4, 8, 16}) if (k <= (int)A.size()) run(std::vector<int>(A.begin(), A.begin() + k), 1, 1024, "one GPC");
  for (int k : {2, 4, 8}) if (k <= (int)spread.size()) run(std::vector<int>(spread.begin(), spread.begin() + k), 1, 1024, "one SM per GPC");
  for (int k : {1, 4, 16}) if (k <= (int)A.size()) run(std::vector<int>(A.begin(), A.begin() + k), 4, 1024, "one GPC");
  if (spread.size() >= 4) run(std::vector<int>(spread.begin(), spread.begin() + 4), 4, 1024, "one SM per GPC");
  { std::vector<int> all; for (int i = 0; i < n; i++) all.push_back(i); run(all, 1, 1024, "every SM"); run(all, 4, 1024, "every SM"); }
  return 0;
}
