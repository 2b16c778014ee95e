#!/usr/bin/env python3
"""Writes the nccl-tests log fixtures of tests/test_nccltests.c.

The logs follow nccl-tests' documented output (README.md, doc/PERFORMANCE.md and the
printf formats of src/common.cu); their times come from known alpha-beta parameters so
the fit they should give is known exactly. Run from this directory:
    python3 gen_fixtures.py
Times are what spsim's analytic engine computes for the collective (engine/collectives.c),
written out here independently:
  ring all-reduce on P ranks of one node:  t = 2(P-1) * (L + (S/P) / B)
  ring all-gather / reduce-scatter:         t = (P-1) * (L + (S/P) / B)
  direct all-to-all, one node:              t = L + (P-1) * (S/P) / B
  direct all-to-all, n nodes of r GPUs, one NIC per GPU, NIC the bottleneck:
                                            t = L_inter + (P-r) * (S/P) / B_nic
algbw = S / t, busbw = algbw x factor (nccl-tests doc/PERFORMANCE.md).
"""

GB = 1e9


def float_str(value, width):
    """nccl-tests' getFloatStr (current versions)."""
    power = 0
    v = 1
    while value >= v and power < 19:
        power += 1
        v *= 10
    if power < width - 2:
        return "%*.2f" % (width, value)
    if power < width - 1:
        return "%*.1f" % (width, value)
    if power < width + 1:
        return "%*.0f" % (width, value)
    return "%*.1e" % (width, value)


def old_time_str(us):
    """Older nccl-tests (2.0-2.12): %7.2f under 100 us, %7.1f under 10 ms, %7.0f above."""
    if us >= 10000.0:
        return "%7.0f" % us
    if us >= 100.0:
        return "%7.1f" % us
    return "%7.2f" % us


def sizes(lo, hi, factor=2):
    s = lo
    while s <= hi:
        yield s
        s *= factor


NEW_HEADER = [
    "#\n",
    "# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          \n"
    % ("", "", "", "", ""),
    "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s %6s  %7s  %6s  %6s %6s\n"
    % ("size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw",
       "#wrong"),
    "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %5s  %7s  %6s  %6s  %5s\n"
    % ("(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", ""),
]


def rank_table(nodes, gpn, gpu="NVIDIA A100-SXM4-80GB", host_fmt="node-%02d", prefix=""):
    out = [prefix + "# Using devices\n"]
    for n in range(nodes):
        for g in range(gpn):
            r = n * gpn + g
            out.append(prefix + "#  Rank %2d Group %2d Pid %6d on %10s device %2d [0x%02x] %s\n"
                       % (r, 0, 4000 + r, host_fmt % n, g, 0x07 + 0x10 * g, gpu))
    return out


def allreduce_8():
    """all_reduce_perf, one node of 8 GPUs: L = 2.5 us, B = 230 GB/s (intra-node)."""
    P, L, B = 8, 2.5e-6, 230 * GB
    out = ["# nccl-tests version 2.13.9 nccl-headers=21903 nccl-library=21903\n",
           "# Collective test starting: all_reduce_perf\n",
           "# nThread 1 nGpus 8 minBytes 8 maxBytes 1073741824 step: 2(factor) warmup iters: 5 iters: 20 "
           "agg iters: 1 validation: 1 graph: 0\n", "#\n"]
    out += rank_table(1, P)
    out += NEW_HEADER
    total, n = 0.0, 0
    for S in sizes(8, 1 << 30):
        t = 2 * (P - 1) * (L + (S / P) / B)
        row = "%12i  %12i  %8s  %6s  %6s" % (S, S // 4, "float", "sum", "%6i" % -1)
        for scale in (1.0, 1.0):
            tu = t * scale * 1e6
            alg = S / (t * scale) / GB
            bus = alg * 2 * (P - 1) / P
            total += bus
            n += 1
            row += "  %7s  %6s  %6s  %6g" % (float_str(tu, 7), float_str(alg, 6), float_str(bus, 6), 0)
        out.append(row + "\n")
    out.append("# Out of bounds values : 0 OK\n")
    out.append("# Avg bus bandwidth    : %g \n" % (total / n))
    out.append("#\n")
    return "".join(out)


def alltoall_2x8():
    """alltoall_perf on 2 nodes x 8 GPUs under mpirun --tag-output, older number format,
    NCCL INFO chatter, CRLF line ends. Intra-node as allreduce_8; inter-node
    L = 12 us, B = 46 GB/s per NIC, one NIC per GPU."""
    P, r, L, B = 16, 8, 12e-6, 46 * GB
    pre = "[1,0]<stdout>:"
    out = ["$ mpirun -np 16 -N 8 --tag-output ./build/alltoall_perf -b 1K -e 4G -f 2 -g 1\n",
           pre + "# nThread 1 nGpus 1 minBytes 1024 maxBytes 4294967296 step: 2(factor) warmup iters: 5 "
           "iters: 20 agg iters: 1 validation: 1 graph: 0\n", pre + "#\n"]
    out += rank_table(2, 8, prefix=pre, host_fmt="dgx%02d")
    out.append("dgx00:4000:4100 [0] NCCL INFO Bootstrap : Using ib0:10.0.0.1<0>\n")
    out.append("dgx00:4000:4100 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB ib0:10.0.0.1<0>\n")
    out.append("NCCL version 2.18.5+cuda12.2\n")
    out += [pre + h for h in NEW_HEADER]
    for S in sizes(1024, 4 << 30):
        t = L + (P - r) * (S / P) / B
        tu = t * 1e6
        alg = S / t / GB
        bus = alg * (P - 1) / P
        row = "%12i  %12i  %8s  %6s  %6s" % (S, S // 4 // P, "float", "none", "%6i" % -1)
        row += "  %7s  %6.2f  %6.2f  %6g" % (old_time_str(tu), alg, bus, 0)
        row += "  %7s  %6.2f  %6.2f  %6s" % (old_time_str(tu), alg, bus, "N/A")
        out.append(pre + row + "\n")
        if S == 1 << 20:
            out.append("dgx01:4101:4200 [3] NCCL INFO comm 0x5581 rank 11 nranks 16 - Init COMPLETE\n")
    out.append(pre + "# Out of bounds values : 0 OK\n")
    out.append(pre + "# Avg bus bandwidth    : 30.1234 \n")
    return "".join(out).replace("\n", "\r\n")


def allgather_old_4():
    """An all_gather_perf table in the 2019 format: no redop/root columns, 'error' instead
    of '#wrong', the collective known only from the file name. 4 GPUs of a mesh node:
    L = 3 us, B = 150 GB/s."""
    P, L, B = 4, 3e-6, 150 * GB
    out = ["# nThread 1 nGpus 4 minBytes 4096 maxBytes 268435456 step: 4(factor) warmup iters: 5 iters: 20 "
           "validation: 1 \n", "#\n", "# Using devices\n"]
    for g in range(P):
        out.append("#   Rank %2d Pid %6d on %10s device %2d [0x%02x] A100-SXM4-40GB\n" % (g, 900, "hgx-a", g, g + 7))
    out.append("#\n")
    out.append("# %10s  %12s  %6s            out-of-place                       in-place          \n" % ("", "", ""))
    out.append("# %10s  %12s  %6s  %7s  %6s  %6s  %5s  %7s  %6s  %6s  %5s\n"
               % ("size", "count", "type", "time", "algbw", "busbw", "error", "time", "algbw", "busbw", "error"))
    out.append("# %10s  %12s  %6s  %7s  %6s  %6s  %5s  %7s  %6s  %6s  %5s\n"
               % ("(B)", "(elements)", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", ""))
    for S in sizes(4096, 1 << 28, 4):
        t = (P - 1) * (L + (S / P) / B)
        alg = S / t / GB
        bus = alg * (P - 1) / P
        row = "%12i  %12i  %6s" % (S, S // 4 // P, "float")
        for _ in range(2):
            row += "  %7s  %6.2f  %6.2f  %5.0e" % (old_time_str(t * 1e6), alg, bus, 0)
        out.append(row + "\n")
    out.append(" Out of bounds values : 0 OK\n")
    return "".join(out)


def p2p_log(test, nodes, gpn, L, B, per_rank_coll, gpu="NVIDIA H100 80GB HBM3"):
    """A SYNTHETIC p2p log (no published sendrecv_perf/alltoall_perf table of 8 or 16 H100s
    was found in public issue threads): nccl-tests' format, times from a known alpha-beta
    line, labelled as such in the log itself.
      sendrecv (one message to the next rank): t = L + S / B
      alltoall, one node of P ranks:            t = L + (P-1) * (S/P) / B"""
    P = nodes * gpn
    out = ["# SYNTHETIC log, not a measurement: written by tests/data/nccltests/gen_fixtures.py with\n",
           "# t = L + %s / B, L = %g us, B = %g GB/s\n" % ("(P-1)(S/P)" if per_rank_coll else "S", L * 1e6, B / GB),
           "# Collective test starting: %s\n" % test,
           "# nThread 1 nGpus 1 minBytes 8 maxBytes 1073741824 step: 2(factor) warmup iters: 5 iters: 20 "
           "agg iters: 1 validation: 1 graph: 0\n", "#\n"]
    out += rank_table(nodes, gpn, gpu=gpu, host_fmt="h100-%02d")
    out += NEW_HEADER
    lo = 8 * P if per_rank_coll else 8
    for S in sizes(lo, 1 << 30):
        if per_rank_coll:
            t = L + (P - 1) * (S / P) / B
            count, redop, factor = S // 4 // P, "none", (P - 1) / P
        else:
            t = L + S / B
            count, redop, factor = S // 4, "sum", 1.0
        alg = S / t / GB
        row = "%12i  %12i  %8s  %6s  %6s" % (S, count, "float", redop, "%6i" % -1)
        for wrong in ("0", "N/A"):
            row += "  %7s  %6s  %6s  %6s" % (float_str(t * 1e6, 7), float_str(alg, 6), float_str(alg * factor, 6),
                                              wrong)
        out.append(row + "\n")
    out.append("# Out of bounds values : 0 OK\n")
    return "".join(out)


def bad_row():
    """all_reduce_perf.1x8.log with a unit glued to the size on line 23."""
    lines = allreduce_8().splitlines(True)
    lines[22] = lines[22].replace("         256", "       4096B", 1)
    return "".join(lines)


def write(name, text):
    with open(name, "w", newline="") as f:
        f.write(text)


if __name__ == "__main__":
    write("all_reduce_perf.1x8.log", allreduce_8())
    write("a2a-2x8.log", alltoall_2x8())
    write("all_gather_old.1x4.log", allgather_old_4())
    write("bad_row.log", bad_row())
    # p2p path: one node (NVSwitch) and two nodes (a NIC hop per node boundary)
    write("synthetic.sendrecv_perf.1x8.log", p2p_log("sendrecv_perf", 1, 8, 4e-6, 160 * GB, False))
    write("synthetic.sendrecv_perf.2x8.log", p2p_log("sendrecv_perf", 2, 8, 10e-6, 40 * GB, False))
    write("synthetic.alltoall_perf.1x8.log", p2p_log("alltoall_perf", 1, 8, 6e-6, 150 * GB, True))
