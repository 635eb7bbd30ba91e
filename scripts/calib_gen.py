#!/usr/bin/env python3
"""calib_gen.py - deterministic generator of the mechanism-isolating calibration kernels.

These kernels extend the Accel-Sim reference suite (/work/shared/reference/gen.py) with one
kernel per mechanism that the model is known to miss on held-out kernels: FP64 issue and
latency, register-limited occupancy, INT issue with ILP, 3-source INT chains, contended
atomics.  The trace format, buffer layout (A/B/C/D at 0x7f2000000000 + n x 256 MiB), index
prologue, loop unrolling and pair construction (stream 1 / stream 2, app B shifted by 1 GiB)
are gen.py's: this script imports gen.py's helpers and registers its own kernels in gen.py's
kernel table, so gen.py's kernels can be pair partners too.

Everything is a pure function of the arguments; re-running reproduces the files byte for byte.

Usage:
  python3 calib_gen.py [--gen-py PATH] --list
  python3 calib_gen.py --kernel dfma_ilp --out DIR [--stream 1] [--app-offset 0]
  python3 calib_gen.py --pair atom_contended dfma_ilp --out DIR
"""
import argparse
import os
import sys

DEFAULT_GEN = "/work/shared/reference/gen.py"


def load_gen(path):
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    import gen  # noqa: E402  (gen.py of the reference suite)
    return gen


def kernels(g):
    """The calibration kernels, written with gen.py's Warp / address helpers."""

    def k_dfma_chain(w, k, cta, wp):
        """512 dependent DFMAs per thread (ILP 1) on 64-bit register pairs, 2 warps/scheduler:
        exposes the FP64 pipeline latency."""
        t0 = cta * k.block + wp * 32
        g.prologue(w, 2)
        w.i("LDG.E.64.SYS", 8, (2,), mem=g.m_stride(8, k.A + t0 * 8, 8))
        top = w.loop_top()
        trips = 32
        for trip in range(trips):
            for _ in range(16):
                w.i("DFMA", 8, (8, 10, 12))               # d = d * R10:11 + R12:13
            w.loop_back(top, 7, trip == trips - 1)
        w.i("STG.E.64.SYS", None, (4, 8), mem=g.m_stride(8, k.C + t0 * 8, 8))
        w.i("EXIT")

    def k_dfma_ilp(w, k, cta, wp):
        """256 DFMAs per thread in 4 independent chains (register pairs R8, R12, R16, R20),
        8 warps/scheduler: bound by the FP64 units' initiation interval."""
        t0 = cta * k.block + wp * 32
        g.prologue(w, 2)
        w.i("LDG.E.64.SYS", 8, (2,), mem=g.m_stride(8, k.A + t0 * 8, 8))
        accs = (8, 12, 16, 20)
        for a in accs[1:]:
            w.i("DADD", a, (8, 24))
        top = w.loop_top()
        trips = 16
        for trip in range(trips):
            for j in range(16):
                a = accs[j & 3]
                w.i("DFMA", a, (a, 24, 26))
            w.loop_back(top, 7, trip == trips - 1)
        w.i("DADD", 8, (8, 12))
        w.i("DADD", 16, (16, 20))
        w.i("DADD", 8, (8, 16))
        w.i("STG.E.64.SYS", None, (4, 8), mem=g.m_stride(8, k.C + t0 * 8, 8))
        w.i("EXIT")

    def k_dadd_mixed(w, k, cta, wp):
        """FP64 and FP32 interleaved: per step DADD, FFMA, DMUL, FFMA on four independent chains
        (64 steps, 256 arithmetic instructions per thread, half of them FP64)."""
        t0 = cta * k.block + wp * 32
        g.prologue(w, 2)
        w.i("LDG.E.SYS", 8, (2,), mem=g.m_stride(4, k.A + t0 * 4, 4))
        w.i("F2F.F64.F32", 12, (8,))
        w.i("F2F.F64.F32", 14, (8,))
        w.i("MOV", 20)
        w.i("MOV", 21)
        top = w.loop_top()
        trips = 16
        for trip in range(trips):
            for _ in range(4):
                w.i("DADD", 12, (12, 16))
                w.i("FFMA", 20, (20, 8, 9))
                w.i("DMUL", 14, (14, 16))
                w.i("FFMA", 21, (21, 8, 9))
            w.loop_back(top, 7, trip == trips - 1)
        w.i("DADD", 12, (12, 14))
        w.i("F2F.F32.F64", 10, (12,))
        w.i("FADD", 20, (20, 21))
        w.i("FADD", 20, (20, 10))
        w.i("STG.E.SYS", None, (4, 20), mem=g.m_stride(4, k.C + t0 * 4, 4))
        w.i("EXIT")

    def k_regs_2cta(w, k, cta, wp):
        """128 registers per thread x 256 threads: the register file admits 2 CTAs/SM (16 warps,
        4 per scheduler).  16 trips of one coalesced 4 B load whose value feeds 16 FFMAs in
        2 chains (ILP 2): little independent work per warp to hide the load latency."""
        t0 = cta * k.block + wp * 32
        g.prologue(w, 2)
        w.i("MOV", 20)
        w.i("MOV", 21)
        top = w.loop_top()
        trips = 16
        for trip in range(trips):
            e = trip * k.nthr + t0
            w.i("LDG.E.SYS", 8, (2,), mem=g.m_stride(4, k.A + e * 4, 4))
            for j in range(16):
                a = 20 + (j & 1)
                w.i("FFMA", a, (8 if j < 2 else a, 5, a))
            w.i("IADD3", 2, (2,))
            w.loop_back(top, 0, trip == trips - 1)
        w.i("FADD", 20, (20, 21))
        w.i("STG.E.SYS", None, (4, 20), mem=g.m_stride(4, k.C + t0 * 4, 4))
        w.i("EXIT")

    def k_imad_ilp(w, k, cta, wp):
        """256 IMADs per thread in 4 independent chains (ILP 4), 8 warps/scheduler: bound by
        the INT units' issue rate."""
        t0 = cta * k.block + wp * 32
        g.prologue(w, 2)
        w.i("LDG.E.SYS", 8, (2,), mem=g.m_stride(4, k.A + t0 * 4, 4))
        accs = (8, 9, 10, 11)
        for a in accs[1:]:
            w.i("IADD3", a, (8,))
        top = w.loop_top()
        trips = 16
        for trip in range(trips):
            for j in range(16):
                a = accs[j & 3]
                w.i("IMAD", a, (a, 5, 6))                # x = x * R5 + R6
            w.loop_back(top, 7, trip == trips - 1)
        w.i("IADD3", 8, (8, 9, 10))
        w.i("IADD3", 8, (8, 11))
        w.i("STG.E.SYS", None, (4, 8), mem=g.m_stride(4, k.C + t0 * 4, 4))
        w.i("EXIT")

    def k_lop3_chain(w, k, cta, wp):
        """256 dependent 3-source INT operations per thread (LOP3.LUT and IADD3 alternating,
        ILP 1, each reading three registers): exposes INT latency and the register-bank /
        operand-collector cost of three source operands."""
        t0 = cta * k.block + wp * 32
        g.prologue(w, 2)
        w.i("LDG.E.SYS", 8, (2,), mem=g.m_stride(4, k.A + t0 * 4, 4))
        top = w.loop_top()
        trips = 16
        for trip in range(trips):
            for _ in range(8):
                w.i("LOP3.LUT", 8, (8, 5, 6))
                w.i("IADD3", 8, (8, 6, 9))
            w.loop_back(top, 7, trip == trips - 1)
        w.i("STG.E.SYS", None, (4, 8), mem=g.m_stride(4, k.C + t0 * 4, 4))
        w.i("EXIT")

    hot_lines = 16

    def k_atom_contended(w, k, cta, wp):
        """Atomics on few lines: 8 items per thread, each a coalesced load then a
        RED.E.ADD.F32 whose 32 lanes hit 32 words of one of only 16 hot 128 B lines (every warp
        of the grid updates the same 2 KB); then a returning ATOMG.E.ADD of all 32 lanes on the
        same word (one of 8 counters), whose result is used and stored."""
        t0 = cta * k.block + wp * 32
        g.prologue(w, 3)
        for i in range(8):
            e = i * k.nthr + t0
            w.i("LDG.E.SYS", 8, (2,), mem=g.m_stride(4, k.A + e * 4, 4))
            w.i("FMUL", 9, (8,))
            line = (cta * 4 + wp + i) % hot_lines
            w.i("RED.E.ADD.F32.FTZ.RN.STRONG.GPU", None, (4, 9),
                mem=g.m_stride(4, k.B + line * 128, 4))
            w.i("IADD3", 2, (2,))
        w.i("ATOMG.E.ADD.STRONG.GPU", 16, (6, 0), mem=g.m_stride(4, k.D + (cta % 8) * 4, 0))
        w.i("IMAD", 18, (16, 0))
        w.i("STG.E.SYS", None, (6, 18), mem=g.m_stride(4, k.C + t0 * 4, 4))
        w.i("EXIT")

    return {
        # name: (body, grid, block, nregs, shmem, mangled)
        "dfma_chain":     (k_dfma_chain, 160, 128, 24, 0, "_Z10dfma_chainPKdPdi"),
        "dfma_ilp":       (k_dfma_ilp, 320, 256, 32, 0, "_Z8dfma_ilpPKdPdi"),
        "dadd_mixed":     (k_dadd_mixed, 320, 256, 32, 0, "_Z10dadd_mixedPKfPfi"),
        "regs_2cta":      (k_regs_2cta, 160, 256, 128, 0, "_Z9regs_2ctaPKfPfi"),
        "imad_ilp":       (k_imad_ilp, 320, 256, 24, 0, "_Z8imad_ilpPKjPji"),
        "lop3_chain":     (k_lop3_chain, 320, 256, 16, 0, "_Z10lop3_chainPKjPji"),
        "atom_contended": (k_atom_contended, 320, 256, 24, 0, "_Z14atom_contendedPKfPfPji"),
    }


PAIRS = [
    ("atom_contended", "dfma_ilp"),
    ("imad_ilp", "fma_ilp4"),
    ("regs_2cta", "stream_copy"),
    ("lop3_chain", "sfu_heavy"),
]


def cli(doc, make_kernels, pairs):
    """The command line shared by the calibration generators: `--list`, `--kernel NAME` or
    `--pair A B` into `--out DIR`, with the kernels `make_kernels(gen)` registered in gen.py's
    table (so gen.py's own kernels can be pair partners)."""
    p = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--gen-py", default=DEFAULT_GEN, help="path of the reference suite's gen.py")
    p.add_argument("--list", action="store_true", help="list the kernels and pairs")
    p.add_argument("--kernel")
    p.add_argument("--pair", nargs=2)
    p.add_argument("--out")
    p.add_argument("--stream", type=int, default=1)
    p.add_argument("--app-offset", type=lambda s: int(s, 0), default=0)
    a = p.parse_args()
    g = load_gen(a.gen_py)
    mine = make_kernels(g)
    clash = set(mine) & set(g.KERNELS)
    if clash:
        p.error("kernel names already in gen.py: %s" % sorted(clash))
    g.KERNELS.update(mine)           # gen.write_kernel looks kernels up in this table
    if a.list:
        for n, v in mine.items():
            print(n, "grid=%d block=%d nregs=%d shmem=%d" % v[1:5])
        for x, y in pairs:
            print("pair", x, y)
        return
    if not a.out:
        p.error("--out is required")
    for n in [a.kernel] if a.kernel else (a.pair or []):
        if n not in g.KERNELS:
            p.error("unknown kernel %s" % n)
    os.makedirs(a.out, exist_ok=True)
    if a.kernel:
        info = g.write_kernel(os.path.join(a.out, "kernel-1.traceg"), a.kernel, a.stream, a.app_offset)
        with open(os.path.join(a.out, "kernelslist.g"), "w") as f:
            f.write("kernel-1.traceg\n")
        print(info)
    elif a.pair:
        ia = g.write_kernel(os.path.join(a.out, "kernel-1.traceg"), a.pair[0], 1, 0, 1)
        ib = g.write_kernel(os.path.join(a.out, "kernel-2.traceg"), a.pair[1], 2, g.APP_B_OFFSET, 2)
        with open(os.path.join(a.out, "kernelslist.g"), "w") as f:
            f.write("kernel-1.traceg\nkernel-2.traceg\n")
        print(ia)
        print(ib)
    else:
        p.error("need --kernel, --pair or --list")


def main():
    cli(__doc__, kernels, PAIRS)


if __name__ == "__main__":
    main()
