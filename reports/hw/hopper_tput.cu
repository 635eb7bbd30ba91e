// Translation under load (issue 45): throughput of independent random L2-resident loads
// from every SM when the same number of lines is packed into a few pages or spread one
// line per page over tens of GiB. Equal L2 behaviour, different translation work.
//
//   nvcc -O3 -arch=sm_90 -o hopper_tput hopper_tput.cu && ./hopper_tput
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1); } } while (0)

__global__ void rgather(const char* base, uint64_t n, uint64_t stride, int iters, float* out) {
  uint64_t h = 0x9E3779B97F4A7C15ull * (blockIdx.x * blockDim.x + threadIdx.x + 1);
  float s = 0;
  for (int i = 0; i < iters; i++) {
    h ^= h << 13; h ^= h >> 7; h ^= h << 17;
    uint64_t node = h % n;
    s += __ldcg((const float*)(base + node * stride + (node % 512) * 128));
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

int main() {
  cudaDeviceProp p; CK(cudaGetDeviceProperties(&p, 0));
  size_t big = (size_t)48 << 30;
  char* base; CK(cudaMalloc(&base, big)); CK(cudaMemset(base, 0, big));
  float* out; CK(cudaMalloc(&out, 64 << 20));
  cudaEvent_t a, b; CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
  const uint64_t n = 24576;
  // one line per `stride` bytes (the (node % 512) * 128 term spreads lines over L2 sets);
  // stride 128 packs them (footprint 3 MiB + 64 KiB)
  const uint64_t strides[] = {128, 1 << 10, 4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 2 << 20};
  int grid = p.multiProcessorCount * 8, block = 256, iters = 512;
  for (uint64_t st : strides) {
    for (int rep = 0; rep < 3; rep++) {
      CK(cudaEventRecord(a));
      rgather<<<grid, block>>>(base, n, st, iters, out);
      CK(cudaEventRecord(b)); CK(cudaEventSynchronize(b));
      float ms; CK(cudaEventElapsedTime(&ms, a, b));
      if (rep == 2) printf("tput stride_b %lu lines %lu footprint_mib %.0f g_loads_per_s %.1f\n", st, n, (double)n * st / (1 << 20), (double)grid * block * iters / ms / 1e6);
    }
  }
  // Whose limit: the same spread gather (stride 2 MiB) and packed (128 B) from 1024-thread
  // CTAs, one per SM (shared memory forces it), on 132, 66, 33 and 16 SMs. A per-SM limit
  // keeps the rate per SM constant; one shared by the GPU keeps the total constant.
  size_t smem = p.sharedMemPerBlockOptin / 2 + 1024;
  CK(cudaFuncSetAttribute(rgather, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  for (uint64_t st : {(uint64_t)128, (uint64_t)2 << 20}) {
    for (int g : {p.multiProcessorCount, p.multiProcessorCount / 2, p.multiProcessorCount / 4, 16}) {
      for (int rep = 0; rep < 3; rep++) {
        CK(cudaEventRecord(a));
        rgather<<<g, 1024, smem>>>(base, n, st, iters, out);
        CK(cudaEventRecord(b)); CK(cudaEventSynchronize(b));
        float ms; CK(cudaEventElapsedTime(&ms, a, b));
        double r = (double)g * 1024 * iters / ms / 1e6;
        if (rep == 2) printf("tput_sms stride_b %lu sms %d g_loads_per_s %.1f per_sm_per_cycle %.3f\n", st, g, r, r * 1e9 / g / 1.98e9);
      }
    }
  }
  return 0;
}
