// Hardware probe for green contexts: how cuDevSmResourceSplitByCount rounds SM groups
// (minimum and alignment per architecture), and whether a kernel launched in a green
// context's stream stays on that many SMs. Build: nvcc -O2 -arch=sm_90 green.cu -lcuda
#include <cstdio>
#include <vector>
#include <set>
#include <cuda.h>
#include <cuda_runtime.h>
#define CU(x) do{CUresult r=(x); if(r!=CUDA_SUCCESS){const char*s; cuGetErrorString(r,&s); printf("%s:%d %s -> %s\n",__FILE__,__LINE__,#x,s); return 1;}}while(0)

__global__ void where(unsigned* smid, long spin) {
  unsigned s; asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
  long t0 = clock64(); while (clock64() - t0 < spin) {}
  if (threadIdx.x == 0) smid[blockIdx.x] = s;
}

int main() {
  CU(cuInit(0)); CUdevice dev; CU(cuDeviceGet(&dev, 0));
  int maj, min; CU(cuDeviceGetAttribute(&maj, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
  CU(cuDeviceGetAttribute(&min, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
  int drv; cuDriverGetVersion(&drv);
  CUdevResource all; CU(cuDeviceGetDevResource(dev, &all, CU_DEV_RESOURCE_TYPE_SM));
  printf("cc %d.%d driver %d, SM resource %u SMs\n", maj, min, drv, all.sm.smCount);
  unsigned mins[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 15, 16, 17, 24, 33, 39, 66, 92};
  for (unsigned m : mins) {
    CUdevResource groups[160]; unsigned n = 160; CUdevResource rem;
    CUresult r = cuDevSmResourceSplitByCount(groups, &n, &all, &rem, 0, m);
    if (r != CUDA_SUCCESS) { const char* s; cuGetErrorString(r, &s); printf("split minCount=%u: error %s\n", m, s); continue; }
    printf("split minCount=%u: %u groups of", m, n);
    for (unsigned i = 0; i < n && i < 4; i++) printf(" %u", groups[i].sm.smCount);
    printf("%s; remaining %u\n", n > 4 ? " ..." : "", rem.sm.smCount);
  }
  // One group of g SMs: launch a kernel with many blocks in its stream, count SMs used.
  unsigned gs[] = {8, 16, 40, 64};
  for (unsigned g : gs) {
    CUdevResource grp; unsigned n = 1; CUdevResource rem;
    CU(cuDevSmResourceSplitByCount(&grp, &n, &all, &rem, 0, g));
    CUdevResourceDesc desc; CU(cuDevResourceGenerateDesc(&desc, &grp, 1));
    CUgreenCtx gc; CU(cuGreenCtxCreate(&gc, desc, dev, CU_GREEN_CTX_DEFAULT_STREAM));
    CUcontext ctx; CU(cuCtxFromGreenCtx(&ctx, gc)); CU(cuCtxSetCurrent(ctx));
    CUstream st; CU(cuGreenCtxStreamCreate(&st, gc, CU_STREAM_NON_BLOCKING, 0));
    int nb = 132 * 8; unsigned* d; if (cudaMalloc(&d, nb * 4) != cudaSuccess) { printf("malloc failed\n"); return 1; }
    where<<<nb, 128, 0, (cudaStream_t)st>>>(d, 200000);
    cudaError_t e = cudaStreamSynchronize((cudaStream_t)st);
    if (e != cudaSuccess) { printf("launch in green ctx: %s\n", cudaGetErrorString(e)); return 1; }
    std::vector<unsigned> h(nb); cudaMemcpy(h.data(), d, nb * 4, cudaMemcpyDeviceToHost);
    std::set<unsigned> s(h.begin(), h.end());
    printf("green ctx of %u SMs (asked %u): kernel ran on %zu distinct SMs, smid %u..%u\n", grp.sm.smCount, g, s.size(), *s.begin(), *s.rbegin());
    cudaFree(d); cuStreamDestroy(st); CU(cuGreenCtxDestroy(gc));
  }
  return 0;
}
