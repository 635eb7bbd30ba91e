#!/usr/bin/env python3
"""oc_gen.py - deterministic generator of the operand-collector calibration kernels
(reports/validation/qv100-oc): dependent INT chains at 1-16 warps per scheduler, 3-source
chains whose sources share a register bank or not, FP32 chains and ILP-4 FP32 with and
without bank conflicts, and two co-run pairs.

The trace format, buffer layout, index prologue, loop and pair construction are those of the
reference suite's gen.py (imported, as scripts/calib_gen.py does). Register banks: GPGPU-Sim
puts warp w's register r in bank (r + 1 + w) mod 4 of its scheduler's four (QV100: 16 banks,
sub-cores), and a scheduler's warps are w = s mod 4, so for all of them R8, R12, R16, R20,
R24 and R28 share one bank while R5, R6, R8, R9 lie in different banks.

Usage:
  python3 oc_gen.py --list
  python3 oc_gen.py --kernel ic_w8 --out DIR
  python3 oc_gen.py --pair ic_w4 fi4d_w8 --out DIR
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from calib_gen import cli  # noqa: E402  (the generators' shared command line)


def kernels(g):
    def chain(op, regs, trips=16, per=16):
        """`trips` x `per` dependent `op`s writing R8 from `regs` (ILP 1)."""
        def body(w, k, cta, wp):
            t0 = cta * k.block + wp * 32
            g.prologue(w, 2)
            w.i("LDG.E.SYS", 8, (2,), mem=g.m_stride(4, k.A + t0 * 4, 4))
            top = w.loop_top()
            for trip in range(trips):
                for _ in range(per):
                    w.i(op, 8, regs)
                w.loop_back(top, 7, trip == trips - 1)
            w.i("STG.E.SYS", None, (4, 8), mem=g.m_stride(4, k.C + t0 * 4, 4))
            w.i("EXIT")
        return body

    def ilp(op, accs, srcs, trips=16, per=16):
        """`trips` x `per` `op`s over independent accumulators `accs` (ILP len(accs))."""
        def body(w, k, cta, wp):
            t0 = cta * k.block + wp * 32
            g.prologue(w, 2)
            w.i("LDG.E.SYS", 8, (2,), mem=g.m_stride(4, k.A + t0 * 4, 4))
            for a in accs:
                if a != 8:
                    w.i("IADD3", a, (8,))
            top = w.loop_top()
            for trip in range(trips):
                for j in range(per):
                    a = accs[j % len(accs)]
                    w.i(op, a, (a,) + srcs)
                w.loop_back(top, 7, trip == trips - 1)
            w.i("IADD3", 8, (8,) + tuple(accs[1:3]))
            w.i("STG.E.SYS", None, (4, 8), mem=g.m_stride(4, k.C + t0 * 4, 4))
            w.i("EXIT")
        return body

    k = {}
    # Dependent 2-source IADD3 chain; 256-thread CTAs put 2 warps on each scheduler, so a grid
    # of 80 n CTAs gives 2n warps per scheduler (1: 128-thread CTAs).
    for n, (grid, block) in {"w1": (80, 128), "w2": (80, 256), "w4": (160, 256), "w6": (240, 256),
                             "w8": (320, 256), "w12": (480, 256), "w16": (640, 256)}.items():
        k["ic_" + n] = (chain("IADD3", (8, 5)), grid, block, 16, 0, "_Z5ic_" + n + "PKjPji")
    k["l3d_w8"] = (chain("LOP3.LUT", (8, 5, 6)), 320, 256, 24, 0, "_Z6l3d_w8PKjPji")
    k["l3c_w8"] = (chain("LOP3.LUT", (8, 12, 16)), 320, 256, 24, 0, "_Z6l3c_w8PKjPji")
    k["l3c_w2"] = (chain("LOP3.LUT", (8, 12, 16)), 80, 256, 24, 0, "_Z6l3c_w2PKjPji")
    k["l3d_w2"] = (chain("LOP3.LUT", (8, 5, 6)), 80, 256, 24, 0, "_Z6l3d_w2PKjPji")
    k["fc_w8"] = (chain("FFMA", (8, 5, 6)), 320, 256, 16, 0, "_Z5fc_w8PKfPfi")
    k["fi4d_w8"] = (ilp("FFMA", (8, 9, 10, 11), (5, 6)), 320, 256, 24, 0, "_Z7fi4d_w8PKfPfi")
    k["fi4c_w8"] = (ilp("FFMA", (8, 12, 16, 20), (24, 28)), 320, 256, 32, 0, "_Z7fi4c_w8PKfPfi")
    return k


PAIRS = [("ic_w4", "fi4d_w8"), ("l3c_w2", "fc_w8")]


def main():
    cli(__doc__, kernels, PAIRS)


if __name__ == "__main__":
    main()
