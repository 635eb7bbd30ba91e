// How many independent global loads one SM keeps in flight (issue 45: the bound that decides
// how large a backlog a memory hog such as GUPS builds per channel). One CTA on one SM; each
// thread keeps K independent chains of loads of random lines (each address waits for the
// chain's previous load, so exactly K per thread are in flight; every lane its own line,
// as GUPS), over 128 MiB (the first-level TLB's reach, so translation throughput hardly
// bounds it; about half the lines hit the H200's 60 MB L2). Loads per cycle for T threads x K loads in
// flight: it grows linearly while the SM is latency-bound and flattens at its bound on
// outstanding misses. The same sweep over a footprint that fits the L2 gives the L2-hit case.
// nvcc -O3 -arch=sm_90 sm_outstanding.cu -o sm_outstanding && ./sm_outstanding
#include <cstdio>
#include <cstdint>
#include <cuda_runtime.h>
#define CK(x) do{cudaError_t e=(x); if(e!=cudaSuccess){printf("%s:%d %s\n",__FILE__,__LINE__,cudaGetErrorString(e)); exit(1);}}while(0)

template <int K>
__global__ void probe(const uint32_t* __restrict__ a, uint32_t mask, int iters, uint32_t* out, long long* cyc) {
  uint32_t s = 0, x[K];
#pragma unroll
  for (int k = 0; k < K; k++) x[k] = 0x9E3779B9u * (threadIdx.x * K + k + 1);
  long long t0 = clock64();
  for (int it = 0; it < iters; it++) {
    uint32_t v[K];
#pragma unroll
    for (int k = 0; k < K; k++) {  // xorshift32: a few integer ops per address
      x[k] ^= x[k] << 13; x[k] ^= x[k] >> 17; x[k] ^= x[k] << 5;
      v[k] = __ldca(&a[(size_t)(x[k] & mask) * 32]);
    }
#pragma unroll
    for (int k = 0; k < K; k++) { s += v[k]; x[k] ^= v[k] & 1; }  // the next address waits for this load
  }
  __syncthreads();
  if (threadIdx.x == 0) cyc[0] = clock64() - t0;
  out[threadIdx.x] = s;
}

static uint8_t* flush_buf;  // written before a cold run: evicts the probe's lines from the L2
template <int K>
void run(const uint32_t* a, uint32_t mask, uint32_t* out, long long* cyc, int T, const char* what, bool cold) {
  int iters = cold ? 16 : 256;
  if (cold) { CK(cudaMemset(flush_buf, 2, 512u << 20)); CK(cudaDeviceSynchronize()); }
  else { probe<K><<<1, T>>>(a, mask, iters, out, cyc); CK(cudaDeviceSynchronize()); }
  probe<K><<<1, T>>>(a, mask, iters, out, cyc); CK(cudaDeviceSynchronize());
  long long c; CK(cudaMemcpy(&c, cyc, 8, cudaMemcpyDeviceToHost));
  double loads = (double)T * iters * K;
  printf("%-5s threads %5d K %d in-flight %5d: %.3f loads/cycle, %.0f cycles per round\n", what, T, K, T * K, loads / c, (double)c / iters);
}

int main() {
  cudaDeviceProp p; CK(cudaGetDeviceProperties(&p, 0));
  printf("%s, %d SMs, L2 %d MB\n", p.name, p.multiProcessorCount, p.l2CacheSize >> 20);
  uint64_t bytes = 128ull << 20;
  uint32_t* a; CK(cudaMalloc(&a, bytes)); CK(cudaMemset(a, 1, bytes));
  uint32_t* out; CK(cudaMalloc(&out, 4096 * 4)); long long* cyc; CK(cudaMalloc(&cyc, 8));
  CK(cudaMalloc(&flush_buf, 512u << 20));
  // "cold": the 128 MiB set after 512 MiB of other writes, 16 rounds (nearly every load a
  // DRAM miss); "warm": the 128 MiB set, 256 rounds after a warm-up run (mostly L2 hits);
  // "l2": an 8 MiB set, warm.
  struct { const char* what; uint64_t mib; bool cold; } fp[3] = {{"cold", 128, true}, {"warm", 128, false}, {"l2", 8, false}};
  for (int f = 0; f < 3; f++) {
    uint32_t mask = (uint32_t)((fp[f].mib << 20) / 128 - 1);
    for (int T = 32; T <= 1024; T *= 2) {
      run<1>(a, mask, out, cyc, T, fp[f].what, fp[f].cold);
      run<4>(a, mask, out, cyc, T, fp[f].what, fp[f].cold);
    }
    run<8>(a, mask, out, cyc, 512, fp[f].what, fp[f].cold);
    run<8>(a, mask, out, cyc, 1024, fp[f].what, fp[f].cold);
  }
  return 0;
}
