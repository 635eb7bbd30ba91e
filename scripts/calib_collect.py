#!/usr/bin/env python3
"""calib_collect.py - turns Accel-Sim run folders into a reference folder that
`gpumodel validate` reads (results_kernels.csv, results_pairs.csv, traces/).

Input: RUNS, a folder with one sub-folder per Accel-Sim run, each holding the plain traces,
kernelslist.g, Accel-Sim's stdout (out.txt) and GNU time's `-v` report (time.txt):
  k_NAME     a calibration kernel alone
  p_A+B      a pair (A stream 1, B stream 2 shifted by 1 GiB; -gpgpu_concurrent_kernel_sm 1)
  s_B        B alone, address-shifted (for B's slowdown)
Output: OUT/results_kernels.csv, OUT/results_pairs.csv, OUT/traces/{kernels,pairs}/... with the
traces gzip-compressed (kernelslist.g keeps the uncompressed names, as in the reference suite).
B's unshifted alone cycles come from the calibration runs when B is a calibration kernel and from
the reference suite's results_kernels.csv (same simulator build and options) otherwise.

Every value is read from the simulator's output; a missing statistic is an error, never a guess.
"""
import argparse
import csv
import gzip
import math
import os
import re
import shutil
import sys

CORE_MHZ = 1132.0  # SM7_QV100 (and SM86_RTX3070); --core-mhz
SMS = 80  # --sms
CHANNELS = 32  # DRAM channel lines in the output; --channels


def die(msg):
    sys.exit("calib_collect: " + msg)


def header(trace):
    h = {}
    warps = insts = 0
    with open(trace) as f:
        for line in f:
            if line.startswith("-"):
                k, _, v = line[1:].partition("=")
                h[k.strip()] = v.strip()
            elif line.startswith("insts = "):
                warps += 1
                insts += int(line.split("=")[1])
    grid = int(h["grid dim"].strip("()").split(",")[0])
    block = int(h["block dim"].strip("()").split(",")[0])
    return dict(grid=grid, block=block, nregs=int(h["nregs"]), shmem=int(h["shmem"]),
                stream=int(h["cuda stream id"]), warps=warps, insts=insts)


def stats(run):
    """Accel-Sim's per-kernel stats blocks (in print order) and the DRAM channel lines."""
    path = os.path.join(run, "out.txt")
    blocks, cur = [], None
    dram = []
    cta = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("kernel_name ="):
                cur = {}
                blocks.append(cur)
            m = re.match(r"GPGPU-Sim uArch: CTA/core = (\d+), limited by: (.*)", line)
            if m:
                cta.append((int(m.group(1)), m.group(2).strip()))
            m = re.match(r"(\w+) = +([-0-9.eE+]+)", line)
            if m and cur is not None and m.group(1) not in cur:
                cur[m.group(1)] = m.group(2)
            m = re.match(r"total dram (reads|writes) = (\d+)", line)
            if m and cur is not None:
                cur["_total_dram_" + m.group(1)] = int(m.group(2))
            m = re.match(r"L2_BW += +([0-9.]+) GB/Sec", line)
            if m and cur is not None:
                cur["L2_BW"] = m.group(1)
            m = re.search(r"n_rd=(\d+) n_rd_L2_A=(\d+) n_write=(\d+) n_wr_bk=(\d+) bw_util=([0-9.e+-]+)", line)
            if m:
                if cur is None:
                    die("%s: DRAM line before any stats block" % path)
                cur.setdefault("_dram", []).append(tuple(float(x) for x in m.groups()))
    if not blocks:
        die("%s: no kernel stats block (did the run finish?)" % path)
    return blocks, cta


def need(b, key, run):
    if key not in b:
        die("%s: statistic %s not found" % (run, key))
    return b[key]


def timing(run):
    t = {}
    with open(os.path.join(run, "time.txt")) as f:
        for line in f:
            line = line.strip()
            if line.startswith("User time (seconds):"):
                t["user"] = float(line.split(":")[1])
            elif line.startswith("Elapsed (wall clock) time"):
                v = line.split("):")[1].strip().split(":")
                s = 0.0
                for x in v:
                    s = s * 60 + float(x)
                t["wall"] = s
            elif line.startswith("Maximum resident set size (kbytes):"):
                t["rss_mb"] = int(line.split(":")[1]) / 1024.0
            elif line.startswith("rc="):
                t["rc"] = int(line[3:])
    if t.get("rc") != 0:
        die("%s: simulator exit status %s" % (run, t.get("rc")))
    return t


def l1d_kb(cta_resident, shmem):
    used = cta_resident * shmem
    for carve in (0, 8, 16, 32, 64, 96):
        if used <= carve * 1024:
            return 128 - carve
    die("shared memory %d B per SM exceeds 96 KB" % used)


def gz(src, dst):
    with open(src, "rb") as f, gzip.GzipFile(dst, "wb", 9, mtime=0) as g:
        shutil.copyfileobj(f, g)


def alone_row(run, name):
    h = header(os.path.join(run, "kernel-1.traceg"))
    blocks, cta = stats(run)
    if len(blocks) != 1 or len(cta) != 1:
        die("%s: expected one kernel, found %d stats blocks" % (run, len(blocks)))
    b = blocks[0]
    t = timing(run)
    cyc = int(need(b, "gpu_sim_cycle", run))
    insn = int(need(b, "gpu_sim_insn", run))
    wins = int(need(b, "gpgpu_n_tot_w_icount", run))
    if wins != h["insts"]:
        die("%s: simulator executed %d warp instructions, trace has %d" % (run, wins, h["insts"]))
    dram = b.get("_dram")
    if not dram or len(dram) != CHANNELS:
        die("%s: expected %d DRAM channel lines, found %d" % (run, CHANNELS, len(dram or [])))
    # DRAM accesses as the reference suite reports them: the memory-latency statistics'
    # totals, counted when a request enters a DRAM channel (writes include L2 write-backs).
    # Reads must equal the channels' serviced n_rd; writes may exceed the channels' serviced
    # n_write + n_wr_bk by the few still queued at kernel end (stream_copy: 41128 vs 41061).
    rd = need(b, "_total_dram_reads", run)
    wr = need(b, "_total_dram_writes", run)
    served_wr = int(sum(d[2] + d[3] for d in dram))
    if rd != int(sum(d[0] for d in dram)) or not served_wr <= wr <= served_wr + 1024:
        die("%s: DRAM totals %d/%d disagree with the channel lines" % (run, rd, wr))
    limit, by = cta[0]
    resident = min(limit, math.ceil(h["grid"] / SMS))
    return dict(
        kernel=name, trace_dir="traces/kernels/%s" % name,
        grid_x=h["grid"], block_x=h["block"], nregs=h["nregs"], shmem_bytes=h["shmem"],
        warps_total=h["warps"], trace_warp_insts=h["insts"],
        cta_per_sm_resource_limit=limit, cta_limited_by=by, cta_per_sm_resident=resident,
        l1d_size_kb=l1d_kb(resident, h["shmem"]),
        gpu_sim_cycle=cyc, gpu_sim_insn=insn, sim_warp_insts=wins,
        gpu_ipc="%.4f" % (insn / cyc), warp_ipc="%.3f" % (wins / cyc),
        l1d_accesses=int(need(b, "L1D_total_cache_accesses", run)),
        l1d_misses=int(need(b, "L1D_total_cache_misses", run)),
        l1d_miss_rate="%.4f" % float(need(b, "L1D_total_cache_miss_rate", run)),
        l2_accesses=int(need(b, "L2_total_cache_accesses", run)),
        l2_misses=int(need(b, "L2_total_cache_misses", run)),
        l2_miss_rate="%.4f" % float(need(b, "L2_total_cache_miss_rate", run)),
        l2_bw_gbs="%.4f" % float(need(b, "L2_BW", run)),
        dram_read_txn_32B=rd, dram_write_txn_32B=wr,
        dram_gbs="%.1f" % ((rd + wr) * 32 / (cyc / (CORE_MHZ * 1e6)) / 1e9),
        dram_bw_util_avg="%.4f" % (sum(d[4] for d in dram) / len(dram)),
        sim_wall_s="%.1f" % t["wall"], sim_user_cpu_s="%.2f" % t["user"],
        sim_warp_insts_per_wall_s=int(wins / t["wall"]),
        sim_cycles_per_wall_s=int(cyc / t["wall"]),
        sim_max_rss_mb=int(t["rss_mb"]),
        first_run_wall_s="%.1f" % t["wall"],
    )


def pair_ends(run):
    """(stream id -> gpu_tot_sim_cycle at that kernel's end, stream finishing first, total insns)."""
    blocks, _ = stats(run)
    ends, order = {}, []
    for b in blocks:
        s = int(need(b, "kernel_stream_id", run))
        ends[s] = int(need(b, "gpu_tot_sim_cycle", run))
        order.append(s)
    if sorted(ends) != [1, 2]:
        die("%s: expected kernels on streams 1 and 2, found %s" % (run, sorted(ends)))
    tot_insn = int(need(blocks[-1], "gpu_tot_sim_insn", run))
    return ends, order[0], tot_insn


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("runs")
    p.add_argument("out")
    p.add_argument("--reference", default="/work/shared/reference",
                   help="reference suite folder (unshifted alone cycles of its kernels)")
    p.add_argument("--sms", type=int, default=SMS, help="SMs of the simulated GPU (default 80, SM7_QV100)")
    p.add_argument("--core-mhz", type=float, default=CORE_MHZ, help="core clock (default 1132)")
    p.add_argument("--channels", type=int, default=CHANNELS, help="DRAM channels (default 32)")
    a = p.parse_args()
    globals().update(SMS=a.sms, CORE_MHZ=a.core_mhz, CHANNELS=a.channels)
    runs = sorted(os.listdir(a.runs))
    ref = {}
    with open(os.path.join(a.reference, "results_kernels.csv")) as f:
        for r in csv.DictReader(f):
            ref[r["kernel"]] = int(r["gpu_sim_cycle"])

    krows = []
    for d in runs:
        if d.startswith("k_"):
            name = d[2:]
            krows.append(alone_row(os.path.join(a.runs, d), name))
            tdir = os.path.join(a.out, "traces", "kernels", name)
            os.makedirs(tdir, exist_ok=True)
            gz(os.path.join(a.runs, d, "kernel-1.traceg"), os.path.join(tdir, "kernel-1.traceg.gz"))
            shutil.copy(os.path.join(a.runs, d, "kernelslist.g"), tdir)
    mine = {r["kernel"]: r["gpu_sim_cycle"] for r in krows}

    prows = []
    for d in runs:
        if not d.startswith("p_"):
            continue
        pair = d[2:]
        ka, kb = pair.split("+")
        run = os.path.join(a.runs, d)
        ends, first, tot_insn = pair_ends(run)
        t = timing(run)
        if ka not in mine:
            die("%s: no alone run k_%s" % (pair, ka))
        shifted = os.path.join(a.runs, "s_" + kb)
        if not os.path.isdir(shifted):
            die("%s: no shifted alone run s_%s" % (pair, kb))
        alone_b = alone_row(shifted, kb)["gpu_sim_cycle"]
        unshifted_b = mine.get(kb, ref.get(kb))
        if unshifted_b is None:
            die("%s: no unshifted alone cycles for %s" % (pair, kb))
        alone_a = mine[ka]
        total = max(ends.values())
        prows.append(dict(
            pair=pair, trace_dir="traces/pairs/%s" % pair, app_a=ka, app_b=kb,
            stream_a=1, stream_b=2, total_cycles=total,
            end_cycle_a=ends[1], end_cycle_b=ends[2],
            first_finished=ka if first == 1 else kb,
            alone_cycles_a=alone_a, alone_cycles_b=alone_b, alone_cycles_b_unshifted=unshifted_b,
            slowdown_a="%.4f" % (ends[1] / alone_a), slowdown_b="%.4f" % (ends[2] / alone_b),
            serial_sum_alone_cycles=alone_a + alone_b,
            concurrency_speedup_vs_serial="%.4f" % ((alone_a + alone_b) / total),
            total_thread_insts=tot_insn,
            sim_wall_s="%.1f" % t["wall"], sim_user_cpu_s="%.2f" % t["user"],
        ))
        tdir = os.path.join(a.out, "traces", "pairs", pair)
        os.makedirs(tdir, exist_ok=True)
        for n in ("kernel-1.traceg", "kernel-2.traceg"):
            gz(os.path.join(run, n), os.path.join(tdir, n + ".gz"))
        shutil.copy(os.path.join(run, "kernelslist.g"), tdir)

    for fname, rows in (("results_kernels.csv", krows), ("results_pairs.csv", prows)):
        if not rows:
            die("no rows for %s" % fname)
        with open(os.path.join(a.out, fname), "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0].keys()), lineterminator="\n")
            w.writeheader()
            w.writerows(rows)
        print("wrote %s (%d rows)" % (fname, len(rows)))


if __name__ == "__main__":
    main()
