// Issue 45: does the L2-reuse victim's slowdown beside GUPS grow with its own loads in
// flight? The victim of ../punyala/hw/gups_corun.cu (8 MiB L2-resident buffer, one CTA per SM
// on half the SMs) with 128..1024 threads per CTA, alone and beside GUPS (1024 threads per
// CTA on the other half; also 256). Prints per case alone ms, beside ms, slowdown, and the
// victim's loads per ns. Kernels and timing: gups_victim.cuh.
#include "gups_victim.cuh"

int main() {
  Rig r; if (rig_up(r)) return 1;
  int khz = 0; CK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0));
  printf("%s, %d SMs, L2 %d MB, SM clock %d MHz; victim and GUPS: %d blocks each (1 block/SM)\n", r.p.name, r.p.multiProcessorCount, r.p.l2CacheSize >> 20, khz / 1000, r.half);
  const int iters = 20000;
  for (int G : {1024, 256}) {
    for (int V : {128, 256, 512, 1024}) {
      float ms[2];
      if (alone_beside<false, false>(r, V, G, iters, ms)) return 1;
      double loads = (double)r.half * V * iters;
      printf("gups %4d thr  victim %4d thr: alone %8.3f ms, beside %8.3f ms, slowdown %5.2fx; victim loads/ns alone %6.2f beside %6.2f\n",
             G, V, ms[0], ms[1], ms[1] / ms[0], loads / (ms[0] * 1e6), loads / (ms[1] * 1e6));
    }
  }
  return 0;
}
