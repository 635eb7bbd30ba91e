#!/usr/bin/env python3
"""twostream_gen.py - deterministic generator of the two-stream co-residency kernels
(reports/validation/qv100-2stream): pairs that isolate how Accel-Sim places and runs the CTAs
of two concurrent kernels (`-gpgpu_concurrent_kernel_sm 1`).

  slot_a + slot_b   which kernel gets a freed CTA slot: 50000 B of (declared) shared memory per
                    CTA lets one CTA of either kernel on an SM at a time; slot_a has 3 waves
                    (240 CTAs), slot_b 2 waves (160 CTAs), same CTA body.
  fc_o25 + fi4_o25  two FP32 kernels co-resident on every SM at 25% + 25% of the warps
                    (80 CTAs x 512 threads each: 4 + 4 warps per scheduler); A a dependent
                    FFMA chain (ILP 1), B FFMA in 4 independent chains (ILP 4).
  fc_o50 + fi4_o50  the same at 50% + 50% (80 CTAs x 1024 threads: 8 + 8 warps per scheduler).
  fi4_o25 + ii4_o25 issue arbitration between kernels on one scheduler: FFMA ILP 4 (FP32 unit)
  fi4_o50 + ii4_o50 beside IMAD ILP 4 (INT unit), at 4 + 4 and 8 + 8 warps per scheduler.

Every kernel: index prologue, one coalesced 4 B load, loop trips of 16 arithmetic
instructions with the loop's IADD3/ISETP/BRA, one coalesced 4 B store: 32 trips (512
instructions per thread) in slot_a/slot_b, 16 trips (256, as in qv100-oc) in the others.
The trace format, buffer layout, prologue, loop and pair construction (A stream 1, B stream 2
with every address moved up 1 GiB) are those of the reference suite's gen.py, through
scripts/calib_gen.py's shared command line.

Usage:
  python3 twostream_gen.py --list
  python3 twostream_gen.py --kernel fc_o25 --out DIR [--stream 2 --app-offset 0x40000000]
  python3 twostream_gen.py --pair fc_o25 fi4_o25 --out DIR
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from calib_gen import cli  # noqa: E402  (the generators' shared command line)

PER = 16


def kernels(g):
    def chain(op, regs, trips=16):
        """trips x PER dependent `op`s writing R8 from `regs` (ILP 1)."""
        def body(w, k, cta, wp):
            t0 = cta * k.block + wp * 32
            g.prologue(w, 2)
            w.i("LDG.E.SYS", 8, (2,), mem=g.m_stride(4, k.A + t0 * 4, 4))
            top = w.loop_top()
            for trip in range(trips):
                for _ in range(PER):
                    w.i(op, 8, regs)
                w.loop_back(top, 7, trip == trips - 1)
            w.i("STG.E.SYS", None, (4, 8), mem=g.m_stride(4, k.C + t0 * 4, 4))
            w.i("EXIT")
        return body

    def ilp(op, accs, srcs, trips=16):
        """trips x PER `op`s over the independent accumulators `accs` (ILP len(accs))."""
        def body(w, k, cta, wp):
            t0 = cta * k.block + wp * 32
            g.prologue(w, 2)
            w.i("LDG.E.SYS", 8, (2,), mem=g.m_stride(4, k.A + t0 * 4, 4))
            for a in accs:
                if a != 8:
                    w.i("IADD3", a, (8,))
            top = w.loop_top()
            for trip in range(trips):
                for j in range(PER):
                    a = accs[j % len(accs)]
                    w.i(op, a, (a,) + srcs)
                w.loop_back(top, 7, trip == trips - 1)
            w.i("IADD3", 8, (8,) + tuple(accs[1:3]))
            w.i("STG.E.SYS", None, (4, 8), mem=g.m_stride(4, k.C + t0 * 4, 4))
            w.i("EXIT")
        return body

    def mangled(name, sig="PKfPfi"):
        return "_Z%d%s%s" % (len(name), name, sig)

    fc = chain("FFMA", (8, 5, 6))
    fi4 = ilp("FFMA", (8, 9, 10, 11), (5, 6))
    fi4_long = ilp("FFMA", (8, 9, 10, 11), (5, 6), trips=32)
    ii4 = ilp("IMAD", (8, 9, 10, 11), (5, 6))
    k = {
        # name: (body, grid, block, nregs, shmem, mangled)
        "slot_a": (fi4_long, 240, 256, 24, 50000, mangled("slot_a")),
        "slot_b": (fi4_long, 160, 256, 24, 50000, mangled("slot_b")),
    }
    for occ, block in (("o25", 512), ("o50", 1024)):
        k["fc_" + occ] = (fc, 80, block, 16, 0, mangled("fc_" + occ))
        k["fi4_" + occ] = (fi4, 80, block, 24, 0, mangled("fi4_" + occ))
        k["ii4_" + occ] = (ii4, 80, block, 24, 0, mangled("ii4_" + occ, "PKjPji"))
    return k


PAIRS = [("slot_a", "slot_b"), ("fc_o25", "fi4_o25"), ("fc_o50", "fi4_o50"),
         ("fi4_o25", "ii4_o25"), ("fi4_o50", "ii4_o50")]


def main():
    cli(__doc__, kernels, PAIRS)


if __name__ == "__main__":
    main()
