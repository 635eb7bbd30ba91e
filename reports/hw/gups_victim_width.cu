// Issue 45: does an L2-hit load wait longer beside GUPS when it is a whole 128 B line (four
// 32 B sectors) than when it is one sector, and does bypassing the L1 change it? The reuse
// victim of ../punyala/hw/gups_corun.cu (8 MiB buffer, one 1024-thread CTA per SM on 66 SMs),
// alone and beside GUPS (1024 threads per CTA on the other 66), with each warp's load
// covering 128 B (as there) or 32 B, through the L1 (ld.global) or around it (__ldcg). Best
// of three timed launches after a warm-up. Kernels and timing: gups_victim.cuh.
#include "gups_victim.cuh"

template <bool N, bool C>
int report(Rig& r, const char* name) {
  const int V = 1024, iters = 20000;
  float ms[2];
  if (alone_beside<N, C>(r, V, 1024, iters, ms)) return 1;
  double warp_loads = (double)r.half * (V / 32) * iters;
  printf("%-22s alone %8.3f ms, beside gups %8.3f ms, slowdown %5.2fx; warp loads/ns alone %6.2f beside %6.2f\n",
         name, ms[0], ms[1], ms[1] / ms[0], warp_loads / (ms[0] * 1e6), warp_loads / (ms[1] * 1e6));
  return 0;
}

int main() {
  Rig r; if (rig_up(r)) return 1;
  printf("%s, %d SMs, L2 %d MB; victim and GUPS: %d blocks x 1024 threads each (1 block/SM)\n", r.p.name, r.p.multiProcessorCount, r.p.l2CacheSize >> 20, r.half);
  if (report<false, false>(r, "128 B line, L1")) return 1;
  if (report<false, true>(r, "128 B line, __ldcg")) return 1;
  if (report<true, false>(r, "32 B sector, L1")) return 1;
  if (report<true, true>(r, "32 B sector, __ldcg")) return 1;
  return 0;
}
