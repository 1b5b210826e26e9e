"""The nccl-tests binaries, run under a real mpirun across targets (rank 0 prints)."""

from __future__ import annotations

import math
import os
import sys

from .node import BUS, Node, emit
from .smi import fabric_of
from .thermal import run_load

# one rank's algbw at large sizes: a device-local copy (2,130 GB/s at 4 GiB on a real H200,
# captures/h200-580/nccl-all_reduce_perf-g1-1K-8G.out); busbw is 0 with one rank
ONE_GPU_ALGBW = 2130.0


def _size(text):
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper()
    return int(float(text[:-1]) * mult[text[-1]]) if text[-1] in mult else int(text)


def _nccl_opts(args):
    """nccl-tests' options: -b -e -f -g -n -w -c -J."""
    o = {"b": 32 << 20, "e": 32 << 20, "f": 2, "g": 1, "n": 20, "w": 5, "c": 1, "J": None}
    i = 0
    while i < len(args):
        k = args[i].lstrip("-")
        if k in ("b", "e") and i + 1 < len(args):
            o[k] = _size(args[i + 1])
            i += 1
        elif k in ("f", "g", "n", "w", "c") and i + 1 < len(args):
            o[k] = int(args[i + 1])
            i += 1
        elif k == "J" and i + 1 < len(args):
            o["J"] = args[i + 1]
            i += 1
        i += 1
    return o


def _mpi():
    """This process's rank, the job's size and the ranks per node."""
    # the MPI rank as Open MPI (mpirun) or Slurm's PMI (srun --mpi=pmi2|pmix) gives it; a
    # task srun starts without an MPI plugin is a rank 0 of its own, as the real binary is
    env = os.environ
    pmi = env.get("PMI_RANK") or env.get("PMIX_RANK")
    rank = int(env.get("OMPI_COMM_WORLD_RANK") or pmi or 0)
    size = int(
        env.get("OMPI_COMM_WORLD_SIZE")
        or (env.get("PMI_SIZE") or env.get("SLURM_NTASKS") if pmi else None)
        or 1
    )
    local = env.get("OMPI_COMM_WORLD_LOCAL_SIZE") or (
        env.get("SLURM_NTASKS_PER_NODE", "1").split("(")[0] if pmi else "1"
    )
    return rank, size, local


def nccl(node, tool, args):
    o = _nccl_opts(args)
    rank, size, local = _mpi()
    env = os.environ
    if (env.get("OMPI_COMM_WORLD_LOCAL_RANK") or env.get("SLURM_LOCALID") or "0") == "0":
        run_load(node, node.gpus(), kind="nccl")  # one process per node, for the job's time
    if rank != 0:
        return 0
    hosts_env = os.environ.get("RACKOPS_HWSIM_HOSTS")
    per = o["g"] * int(local) if size > 1 else o["g"]
    hosts = hosts_env.split(",") if hosts_env else [node.name] * max(1, size // max(per, 1))
    nodes = {h: Node(node.scenario, h) for h in dict.fromkeys(hosts)}
    gpus_by_host = {h: nodes[h].gpus() for h in nodes}
    ranks = []
    if size > 1:
        per_host = max(1, size // len(nodes))
        for h in nodes:
            for d in range(per_host):
                ranks.append((h, d * o["g"] if o["g"] > 1 else d))
    else:
        for d in range(o["g"]):
            ranks.append((node.name, d))
    if size == 1 and o["g"] > len(gpus_by_host[node.name]):
        # the real failure (nccl-tests 2.19.6 on a 1-GPU node asked for -g 2,
        # captures/h200-580/nccl-all_reduce_perf-g2-on-1gpu): the preamble, one line on
        # stdout, the reason on stderr, exit 5
        head = _preamble(node, tool, o)
        emit(
            node,
            tool,
            head + " .. %s pid %d: Test failure common.cu:1454\n" % (node.name, os.getpid()),
        )
        sys.stderr.write(
            "Invalid number of GPUs: %d requested but only %d were found.\n"
            "Please check the number of processes and GPUs per process.\n"
            % (o["g"], len(gpus_by_host[node.name]))
        )
        return 5
    for h, d in ranks:
        if d not in gpus_by_host[h]:
            sys.stderr.write(
                "%s: Test CUDA failure common.cu:1010 'invalid device ordinal'\n .. %s pid %d: Test failure common.cu:893\n"
                % (h, h, os.getpid())
            )
            return 2
    n = len(ranks)
    multi = len(nodes) > 1
    coll = tool.replace("_perf", "")
    domains = {nd.hw.get("nvlink_domain") for nd in nodes.values()}
    if multi and len(domains) == 1 and None not in domains:  # one NVLink domain: MNNVL
        peak = min(float(nd.hw["nccl_mnnvl_busbw_gbs"]) for nd in nodes.values())
        for nd in nodes.values():
            for f in nd.faults_of("node_slow"):
                peak *= float(f.get("factor", 0.6))
    elif multi:
        peak = min(
            float(nd.hw["hcas"]) * float(nd.hw["nccl_per_nic_busbw_gbs"]) for nd in nodes.values()
        )
        for nd in nodes.values():
            for f in nd.faults_of("node_slow"):
                peak *= float(f.get("factor", 0.6))
    else:
        peak = float(node.hw["nccl_single_busbw_gbs"]) if coll == "all_reduce" else 372.0
    for nd in nodes.values():
        for f in nd.faults_of("nccl_degraded"):
            peak *= float(f.get("factor", 0.7))
    wrong = sum(int(f.get("count", 1)) for nd in nodes.values() for f in nd.faults_of("nccl_wrong"))
    factor = (
        {"all_reduce": 2.0 * (n - 1) / n, "broadcast": 1.0, "sendrecv": 1.0}.get(
            coll, (n - 1.0) / n
        )
        if n > 1
        else 1.0
    )
    sizes = []
    s = o["b"]
    while s <= o["e"]:
        sizes.append(s)
        s = s * o["f"] if o["f"] > 1 else s + 1
    out, oob = _nccl_text(node, tool, o, ranks, nodes, sizes, peak, factor, wrong, coll)
    emit(node, tool, out)
    return 1 if oob else 0


def _preamble(node, tool, o):
    """Down to ``# Using devices``. The 2025 generation as nccl-tests 2.19.6 built against
    NCCL 2.28.9 prints it (captures/h200-580/nccl-*-g1.out): version line with the NCCL
    headers' and library's version codes, ``unalign: 0`` closing the parameter line."""
    gen = str(node.formats.get("nccl-tests", "2025"))
    out = ""
    if gen == "2025":
        out += (
            "# nccl-tests version 2.19.6 nccl-headers=22803 nccl-library=22809\n# Collective test starting: %s\n"
            % tool
        )
    return out + (
        "# nThread 1 nGpus %d minBytes %d maxBytes %d step: %d(factor) warmup iters: %d iters: %d agg iters: 1 validation: %d graph: 0%s\n#\n# Using devices\n"
        % (
            o["g"],
            o["b"],
            o["e"],
            o["f"],
            o["w"],
            o["n"],
            o["c"],
            " unalign: 0" if gen == "2025" else "",
        )
    )


def _nccl_text(node, tool, o, ranks, nodes, sizes, peak, factor, wrong, coll):
    """The text nccl-tests prints: preamble, ranks, the table, the summary."""
    gen = str(node.formats.get("nccl-tests", "2025"))
    out = _preamble(node, tool, o)
    info = _nccl_info(ranks, nodes) if _debug_info() else ""
    for r, (h, d) in enumerate(ranks):
        bus = (
            "[0000:%s:00]" % BUS[d % 16].lower()
            if gen == "2025"
            else "[0x%s]" % BUS[d % 16].lower()
        )
        out += "#  Rank %2d Group  0 Pid %6d on %10s device %2d %s %s\n" % (
            r,
            40000 + r,
            h,
            d,
            bus,
            nodes[h].hw["gpu_model"],
        )
    out += info
    out += (
        "#\n#                                                              out-of-place                       in-place          \n"
        "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
        "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       \n"
    )
    redop = "sum" if coll in ("all_reduce", "reduce_scatter", "sendrecv") else "none"
    root = "0" if coll == "broadcast" else "-1"
    total = 0.0
    oob = 0
    for size_b in sizes:
        busbw = peak * (1 - math.exp(-size_b / float(256 << 20))) if size_b >= 1024 else 0.0
        alg = busbw / factor if factor else busbw
        if len(ranks) == 1:  # one rank moves nothing between GPUs: busbw 0, algbw a copy
            alg, busbw = ONE_GPU_ALGBW * (1 - math.exp(-size_b / float(256 << 20))), 0.0
        t = size_b / (alg * 1e9) * 1e6 if alg > 0 else 3.1
        w = wrong if (wrong and size_b == sizes[-1]) else 0
        oob += 2 * (1 if w else 0)
        wrong_txt = "N/A" if o["c"] == 0 else str(w)
        out += "%12d  %12d  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s\n" % (
            size_b,
            size_b // 4,
            "float",
            redop,
            root,
            _f(t, 7),
            _f(alg, 6),
            _f(busbw, 6),
            wrong_txt,
            _f(t * 1.003, 7),
            _f(alg * 0.997, 6),
            _f(busbw * 0.997, 6),
            wrong_txt,
        )
        total += busbw + busbw * 0.997  # nccl-tests averages out-of-place and in-place
    avg = total / max(1, 2 * len(sizes))
    out += "# Out of bounds values : %d %s\n# Avg bus bandwidth    : %g \n#\n" % (
        oob,
        "FAILED" if oob else "OK",
        round(avg, 4),
    )
    if gen == "2025":
        out += "# Collective test concluded: %s\n#\n" % tool
    return out, oob


def _f(x, w):
    for p in (2, 1, 0):
        v = "%*.*f" % (w, p, x)
        if len(v) <= w:
            return v
    return "%*.1e" % (w, x)


def _debug_info():
    """NCCL_DEBUG=INFO with the INIT subsystem in force (its default set holds INIT)."""
    subsys = os.environ.get("NCCL_DEBUG_SUBSYS", "INIT").upper().split(",")
    return os.environ.get("NCCL_DEBUG", "").upper() == "INFO" and (
        "INIT" in subsys or "ALL" in subsys
    )


def _uuid_words(cluster):
    """The cluster UUID as NCCL prints it: its 16 bytes read as two little-endian u64
    (``fabric UUID %lx.%lx``)."""
    raw = bytes.fromhex(cluster.replace("-", ""))
    return "%x.%x" % (int.from_bytes(raw[:8], "little"), int.from_bytes(raw[8:], "little"))


def _nccl_info(ranks, nodes):
    """NCCL's INIT lines of a run (NCCL_DEBUG=INFO), every rank's: each GPU's fabric
    (``MNNVL busId … fabric UUID … cliqueId … state … healthMask``, as the real GB200 capture
    prints it, NVIDIA/nccl#1769), the communicator (``comm … MNNVL 0|1``) and a ring's
    connections, in NCCL's format strings (init.cc, transport/p2p.cc, transport/net.cc): over
    P2P/MNNVL between GPUs of one clique that spans nodes, P2P/CUMEM inside a node, else the
    network."""
    n = len(ranks)
    hosts = list(dict.fromkeys(h for h, _d in ranks))
    per_host = {h: [d for hh, d in ranks if hh == h] for h in hosts}
    part = {}
    lines = []
    for r, (h, d) in enumerate(ranks):
        state, _status, clique, cluster = fabric_of(nodes[h], d)
        tray = nodes[h].hw.get("nvlink_domain")
        part[r] = (tray, clique, cluster) if tray and state == "Completed" and clique else None
        if state == "Completed" and cluster:
            lines.append(
                (r, "MNNVL busId 0x%x fabric UUID %s cliqueId 0x%x state 3 healthMask 0x%s"
                 % (int("0000%s000" % BUS[d % 16].lower(), 16), _uuid_words(cluster), clique,
                    "aa" if tray else "0"))
            )  # fmt: skip
    # a clique is MNNVL for a rank when it spans more than the rank's own node
    spans = {
        r: p is not None and any(part.get(q) == p and ranks[q][0] != ranks[r][0] for q in range(n))
        for r, p in part.items()
    }
    for r, (h, d) in enumerate(ranks):
        lines.append(
            (r, "comm 0x55d0%08x rank %d nRanks %d nNodes %d localRanks %d localRank %d MNNVL %d"
             % (0x1000 * r, r, n, len(hosts), len(per_host[h]), per_host[h].index(d),
                1 if spans[r] else 0))
        )  # fmt: skip
    for ch in range(2):
        for r, (h, d) in enumerate(ranks):
            q = (r + 1) % n
            if q == r:
                continue
            qh, qd = ranks[q]
            if spans[r] and part[r] == part[q]:
                lines.append(
                    (r, "Channel %02d/0 : %d[%d] -> %d[%d] via P2P/MNNVL" % (ch, r, d, q, qd))
                )
            elif qh == h:
                lines.append(
                    (r, "Channel %02d/0 : %d[%d] -> %d[%d] via P2P/CUMEM" % (ch, r, d, q, qd))
                )
            else:
                net = "Channel %02d/0 : %d[%d] -> %d[%d] [%%s] via NET/IB/%d/GDRDMA" % (
                    ch,
                    r,
                    d,
                    q,
                    qd,
                    d,
                )
                lines.append((r, net % "send"))
                lines.append((q, net % "receive"))
    return "".join(
        "%s:%d:%d [%d] NCCL INFO %s\n" % (ranks[r][0], 40000 + r, 40100 + r, ranks[r][1], text)
        for r, text in lines
    )
