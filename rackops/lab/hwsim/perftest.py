"""perftest (ib_{write,read,send}_{bw,lat}): server and client really connect over TCP;
the bandwidth and latency they report come from the scenario, per link."""

from __future__ import annotations

import json
import socket
import sys
import time

from . import counters
from .node import D87, Node, emit


def _opts(args):
    o = {
        "dev": "mlx5_0",
        "size": 65536,
        "duration": None,
        "iters": 5000,
        "qps": 1,
        "bidir": False,
        "port": 18515,
        "gbits": False,
        "all": False,
        "server": None,
        "json": None,
        "gid": None,
    }
    i = 0
    while i < len(args):
        a = args[i]
        nxt = args[i + 1] if i + 1 < len(args) else None
        if a in ("-d", "--ib-dev"):
            o["dev"], i = nxt, i + 1
        elif a in ("-s", "--size"):
            o["size"], i = int(nxt), i + 1
        elif a in ("-D", "--duration"):
            o["duration"], i = int(nxt), i + 1
        elif a in ("-n", "--iters"):
            o["iters"], i = int(nxt), i + 1
        elif a in ("-q", "--qp"):
            o["qps"], i = int(nxt), i + 1
        elif a in ("-p", "--port"):
            o["port"], i = int(nxt), i + 1
        elif a in ("-x", "--gid-index"):
            o["gid"], i = int(nxt), i + 1
        elif a == "-b" or a == "--bidirectional":
            o["bidir"] = True
        elif a in ("--report_gbits", "--report-gbits"):
            o["gbits"] = True
        elif a == "-a":
            o["all"] = True
        elif a.startswith("--out_json_file="):
            o["json"] = a.split("=", 1)[1]
        elif not a.startswith("-"):
            o["server"] = a
        # other flags (-F, --out_json, -R, --...) change nothing in the simulation
        i += 1
    return o


def link_bw(a, a_dev, b, b_dev, hw):
    """Gb/s one direction of the link a/a_dev ↔ b/b_dev, from both ends' faults."""
    bw = float(hw["bw_gbps"])
    for node, dev, peer in ((a, a_dev, b.name), (b, b_dev, a.name)):
        f = node.fault("link_rate", hca=dev)
        if f:
            bw = min(bw, 0.98 * float(f.get("rate_gbps", hw["rate_gbps"] / 2)))
        for f in node.faults_of("cable_slow"):
            if f.get("hca") == dev and (not f.get("peers") or peer in f["peers"]):
                bw = min(bw, float(f.get("bw_gbps", hw["bw_gbps"] * 0.5)))
        for f in node.faults_of("node_slow"):
            bw *= float(f.get("factor", 0.6))
    return bw


def perftest(node, tool, args):
    o = _opts(args)
    lat = tool.endswith("_lat")
    dev = o["dev"]
    if dev not in node.hcas():
        sys.stderr.write(
            " Couldn't find device %s\n Unable to find the Infiniband/RoCE device\n" % dev
        )
        return 1
    state = node.port(dev)[0]
    title = {
        "ib_write_bw": "RDMA_Write",
        "ib_read_bw": "RDMA_Read",
        "ib_send_bw": "Send",
        "ib_write_lat": "RDMA_Write",
        "ib_read_lat": "RDMA_Read",
        "ib_send_lat": "Send",
    }[tool]
    title += " Latency Test" if lat else (" Bidirectional BW Test" if o["bidir"] else " BW Test")
    hello = {"node": node.name, "dev": dev, "bidir": o["bidir"], "size": o["size"], "tool": tool}
    conn = _connect(o)
    if conn is None:
        return 1
    with conn:
        conn.settimeout(60)
        conn.sendall((json.dumps(hello) + "\n").encode())
        buf = b""
        while not buf.endswith(b"\n"):
            chunk = conn.recv(4096)
            if not chunk:
                sys.stderr.write(" Failed to exchange data between server and clients\n")
                return 1
            buf += chunk
        peer = json.loads(buf.decode())
    if peer["bidir"] != o["bidir"] or peer["size"] != o["size"] or peer["tool"] != tool:
        sys.stderr.write(
            " Mismatch in test parameters between server and client (duplex/size/test)\n"
            " Failed to exchange data between server and clients\n"
        )
        return 1
    other = Node(node.scenario, peer["node"])
    if state != "Active" or other.port(peer["dev"])[0] != "Active":
        sys.stdout.write(banner(node, title, o))
        sys.stderr.write(
            "Failed to modify QP to RTR\n Unable to Connect the HCA's through the link\n"
        )
        return 1
    seconds = node.hw.get("tool_seconds", {}).get(tool)
    if seconds:  # the transfer itself (-D), after both ends have connected
        time.sleep(float(seconds))
    bw = link_bw(node, dev, other, peer["dev"], node.hw)
    if o["bidir"]:
        bw *= 2
    _carry(node, dev, o, bw, lat)
    out = banner(node, title, o)
    out += _lat_table(node, dev, other, peer, o, bw) if lat else _bw_table(o, bw)
    out += D87 + "\n"
    emit(node, tool, out)
    return 0


def _connect(o):
    """The server's accepted connection, or the client's; None (and the tool's words on
    stderr) when there is none."""
    try:
        if o["server"] is None:
            srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                srv.bind(("0.0.0.0", o["port"]))
            except OSError:
                sys.stderr.write(
                    " Couldn't bind the server socket to port %d: Address already in use\n"
                    " Unable to open file descriptor for socket connection Unable to init the socket connection\n"
                    % o["port"]
                )
                return None
            srv.listen(1)
            sys.stdout.write(
                "\n************************************\n* Waiting for client to connect... *\n"
                "************************************\n"
            )
            sys.stdout.flush()
            conn, _ = srv.accept()
        else:
            conn = socket.create_connection((o["server"], o["port"]), timeout=10)
    except OSError:
        sys.stderr.write(
            "Couldn't connect to %s:%d\nUnable to open file descriptor for socket connection"
            " Unable to init the socket connection\n" % (o["server"], o["port"])
        )
        return None
    return conn


def _lat_table(node, dev, other, peer, o, bw):
    out = ""
    base = float(node.hw["lat_us"]) * (
        1.0 if bw >= 0.8 * node.hw["bw_gbps"] * (2 if o["bidir"] else 1) else 1.9
    )
    # a port that adds latency (either end of the link)
    slow = [
        float(f["lat_us"])
        for nd, d in ((node, dev), (other, peer["dev"]))
        for f in nd.faults_of("latency")
        if f.get("hca") == d and f.get("lat_us")
    ]
    if slow:
        base = max([base, *slow])
    out += (
        " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    "
        "t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] \n"
    )
    out += " %-7d %-13d %-14.2f %-12.2f %-16.2f %-14.2f %-15.2f %-22.2f %.2f   \n" % (
        o["size"] if o["size"] != 65536 else 2,
        o["iters"],
        base * 0.95,
        base * 3.1,
        base,
        base * 1.01,
        base * 0.04,
        base * 1.12,
        base * 3.1,
    )
    return out


def _bw_table(o, bw):
    out = ""
    out += (
        " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n"
        if o["gbits"]
        else " #bytes     #iterations    BW peak[MiB/sec]    BW average[MiB/sec]   MsgRate[Mpps]\n"
    )
    sizes = [2**e for e in range(1, 24)] if o["all"] else [o["size"]]
    for size in sizes:
        eff = bw * min(1.0, (size / 65536.0) ** 0.35) if size < 65536 else bw
        rate = eff * 1e9 / 8 / size / 1e6
        peak = 0.0 if o["duration"] else eff * 1.003
        if not o["gbits"]:
            eff, peak = eff * 1e9 / 8 / 2**20, peak * 1e9 / 8 / 2**20
        iters = int(rate * 1e6 * o["duration"]) if o["duration"] else o["iters"]
        out += " %-10d %-10d       %-18.2f %.2f\t\t   %.6f\n" % (size, iters, peak, eff, rate)
    return out


def _carry(node, dev, o, bw, lat):
    """What this run moved through this end's port, into its counters."""
    if lat:  # ping-pong: every iteration sends and receives one message
        moved = o["iters"] * (o["size"] if o["size"] != 65536 else 2)
        tx = rx = moved
    else:
        one_way = bw / (2 if o["bidir"] else 1)
        moved = one_way * 1e9 / 8 * o["duration"] if o["duration"] else o["iters"] * o["size"]
        client = o["server"] is not None
        tx = moved if (client or o["bidir"]) else 0
        rx = moved if (not client or o["bidir"]) else 0
    counters.carry(node, dev, tx, rx)


def banner(node, title, o):
    i = node.hcas().index(o["dev"])
    s = "" if not o["duration"] else "WARNING: BW peak won't be measured in this run.\n"
    s += D87 + "\n                    %s\n" % title
    s += " Dual-port       : OFF\t\tDevice         : %s\n" % o["dev"]
    s += " Number of qps   : %d\t\tTransport type : IB\n" % o["qps"]
    s += " Connection type : RC\t\tUsing SRQ      : OFF\n PCIe relax order: ON\t\tLock-free      : OFF\n"
    s += " ibv_wr* API     : ON\t\tUsing Enhanced Reorder      : OFF\n TX depth        : 128\n"
    s += (
        " CQ Moderation   : 1\n CQE Poll Batch  : Dynamic\n Mtu             : %d[B]\n"
        % node.active_mtu(i)
    )
    s += " Link type       : %s\n" % ("Ethernet" if node.hw["link_layer"] == "Ethernet" else "IB")
    if node.hw["link_layer"] == "Ethernet":
        s += " GID index       : %d\n" % (o["gid"] if o["gid"] is not None else 3)
    s += " Max inline data : 0[B]\n rdma_cm QPs\t : OFF\n Data ex. method : Ethernet\n" + D87 + "\n"
    s += " local address: LID %04x QPN 0x%04x PSN 0x%06x RKey 0x1fff00 VAddr 0x007f6a1b400000\n" % (
        node.lid(i),
        0x100 + i,
        (node.index * 7919 + i) & 0xFFFFFF,
    )
    return s + D87 + "\n"
