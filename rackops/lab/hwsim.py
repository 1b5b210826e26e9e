#!/usr/bin/env python3
"""hwsim: the GPU and RDMA hardware of a lab target, simulated in the tools' real formats.

Installed in lab targets as /usr/lib/rackops-hwsim/hwsim.py, with one wrapper per tool
(/usr/bin/ibstat → ``hwsim.py ibstat "$@"``) put in place by the stand-in vendor
packages. Standard library only (it runs on the target's python3, 3.9+).

The hardware and its faults come from the scenario (``/etc/rackops-hwsim/scenario.json``
or ``$RACKOPS_HWSIM_SCENARIO``); the node is ``$RACKOPS_HWSIM_NODE`` or the hostname.
``ib_write_bw``/``ib_write_lat`` servers and clients really connect over TCP; the
bandwidth they report comes from the scenario, per link.
"""

from __future__ import annotations

import json
import math
import os
import socket
import sys
import time

SCENARIO = os.environ.get("RACKOPS_HWSIM_SCENARIO", "/etc/rackops-hwsim/scenario.json")
STATE_DIR = os.environ.get("RACKOPS_HWSIM_STATE", "/var/lib/rackops-hwsim")
BUS = [
    "18",
    "2A",
    "3A",
    "5D",
    "9A",
    "AB",
    "BA",
    "DB",
    "1B",
    "2B",
    "3B",
    "4B",
    "5B",
    "6B",
    "7B",
    "8B",
]
D87 = "-" * 87

DEFAULT_HW = {
    "gpus": 8,
    "gpu_model": "NVIDIA H100 80GB HBM3",
    "gpu_device_id": "2330",
    "hcas": 8,
    "link_layer": "Ethernet",
    "rate_gbps": 400,
    "width": "4X",
    "driver": "580.95.05",
    "cuda": "13.0",
    "ofed": "25.07-0.9.7",
    "dcgm": "4.4.1",
    "nvlink_links": 18,
    "nvlink_link_gbs": 26.562,
    "active_mtu": 4096,
    "bw_gbps": 392.4,
    "lat_us": 1.92,
    "nccl_single_busbw_gbs": 481.6,
    "nccl_per_nic_busbw_gbs": 47.6,
    "memory_mib": 81559,
}


# ------------------------------------------------------------------ scenario


def load_scenario():
    try:
        with open(SCENARIO, encoding="utf-8") as fh:
            return json.load(fh)
    except FileNotFoundError:
        return {"hardware": {}, "nodes": {}}


class Node:
    def __init__(self, scenario, name):
        self.scenario = scenario
        self.name = name
        self.hw = dict(DEFAULT_HW)
        self.hw.update(scenario.get("hardware", {}))
        spec = scenario.get("nodes", {}).get(name, {})
        self.hw.update(spec.get("hardware", {}))
        self.index = int(spec.get("index", 1))
        self.rails = {int(k): v for k, v in spec.get("rails", {}).items()}
        self.faults = spec.get("faults", [])
        self.formats = scenario.get("formats", {})

    def faults_of(self, kind):
        return [f for f in self.faults if f.get("kind") == kind]

    def fault(self, kind, **match):
        for f in self.faults_of(kind):
            if all(str(f.get(k)) == str(v) for k, v in match.items()):
                return f
        return None

    # hardware facts ---------------------------------------------------------
    def gpus(self):
        missing = {int(f["gpu"]) for f in self.faults_of("gpu_missing")}
        return [g for g in range(self.hw["gpus"]) if g not in missing]

    def hcas(self):
        return ["mlx5_%d" % i for i in range(self.hw["hcas"])]

    def netdev(self, i):
        return "enp%ds0np0" % (24 + 17 * i)

    def port(self, dev):
        """state, physical state, rate (Gb/s), width of one HCA port."""
        f = self.fault("hca_port", hca=dev)
        if f:
            phys = f.get("state", "Down")
            rate = 40 if phys == "Disabled" else 10
            return ("Down", phys if phys != "Down" else "Polling", rate, "4X")
        f = self.fault("link_rate", hca=dev)
        if f:
            return (
                "Active",
                "LinkUp",
                int(f.get("rate_gbps", self.hw["rate_gbps"] // 2)),
                f.get("width", self.hw["width"]),
            )
        return ("Active", "LinkUp", self.hw["rate_gbps"], self.hw["width"])

    def guid(self, i, k=0):
        return "a088c20300%02x%02x%02x" % (self.index & 0xFF, i, k)

    def lid(self, i):
        return 0 if self.hw["link_layer"] == "Ethernet" else 0x100 + self.index * 16 + i

    def rail_ip(self, i):
        return self.rails.get(i)

    def active_mtu(self, i):
        """RoCE active_mtu from the interface's real MTU, as the kernel derives it
        (iboe_get_mtu: the largest IB MTU <= netdev MTU - 96); IB: the scenario's."""
        mtu = self.hw["active_mtu"]
        f = self.fault("netdev_mtu")
        if f:
            return 1024 if int(f.get("mtu", 1500)) < 4192 else mtu
        if self.hw["link_layer"] != "Ethernet":
            return mtu
        try:
            with open("/sys/class/net/%s/mtu" % self.netdev(i), encoding="ascii") as fh:
                netdev_mtu = int(fh.read())
        except (OSError, ValueError):
            return mtu  # not in a lab target (unit tests): the scenario's value
        fits = [m for m in (256, 512, 1024, 2048, 4096) if m <= netdev_mtu - 96]
        return min(mtu, fits[-1]) if fits else 256


def tool_fault_gate(node, tool):
    """Faults that change how a tool behaves, not what it reports; and the tool's run time
    (``hardware.tool_seconds``), so benchmarks see tools that take as long as real ones."""
    seconds = node.hw.get("tool_seconds", {}).get(tool)
    if seconds and tool not in PERF:  # perftest spends its time in the transfer, see perftest()
        time.sleep(float(seconds))
    if node.fault("missing", tool=tool):
        sys.stderr.write("%s: command not found\n" % tool)
        sys.exit(127)
    if node.fault("hang", tool=tool):
        while True:
            time.sleep(3600)


def emit(node, tool, text):
    f = node.fault("garbled", tool=tool)
    if f:
        cut = int(len(text) * float(f.get("keep", 0.4)))
        text = text[:cut] + "\x00\x1b[?%$#@!" + "\n"
    sys.stdout.write(text)
    sys.stdout.flush()


# ------------------------------------------------------------------ RDMA tools


def ibstat(node, args):
    names = [a for a in args if not a.startswith("-")]
    if "-l" in args:
        return "".join(d + "\n" for d in sorted(node.hcas()))
    out = []
    for i, dev in sorted(enumerate(node.hcas()), key=lambda t: t[1]):
        if names and dev != names[0]:
            continue
        state, phys, rate, _ = node.port(dev)
        eth = node.hw["link_layer"] == "Ethernet"
        lid = 65535 if state == "Down" and not eth else node.lid(i)
        out.append(
            "CA '%s'\n\tCA type: MT4129\n\tNumber of ports: 1\n\tFirmware version: 28.41.1000\n"
            "\tHardware version: 0\n\tNode GUID: 0x%s\n\tSystem image GUID: 0x%s\n\tPort 1:\n"
            "\t\tState: %s\n\t\tPhysical state: %s\n\t\tRate: %s\n\t\tBase lid: %d\n\t\tLMC: 0\n"
            "\t\tSM lid: %d\n\t\tCapability mask: %s\n\t\tPort GUID: 0x%s\n\t\tLink layer: %s\n"
            % (
                dev,
                node.guid(i),
                node.guid(i),
                state,
                phys,
                rate,
                lid,
                0 if eth else 1,
                "0x00010000" if eth else "0xa751e848",
                node.guid(i, 1),
                node.hw["link_layer"],
            )
        )
    if names and not out:
        sys.stderr.write(
            "ibpanic: [%d] main: '%s' IB device can't be found\n" % (os.getpid(), names[0])
        )
        sys.exit(1)
    return "".join(out)


def ibstatus(node, args):
    speeds = {400: "NDR", 200: "HDR", 100: "EDR", 50: "HDR", 10: "SDR", 40: "QDR"}
    out = []
    for i, dev in enumerate(node.hcas()):
        state, phys, rate, width = node.port(dev)
        code = (4, "ACTIVE") if state == "Active" else (1, "DOWN")
        pcode = {"LinkUp": 5, "Polling": 2, "Disabled": 3}.get(phys, 2)
        lanes = int(width.rstrip("X"))
        speed = speeds.get(rate // lanes * 4 if lanes else rate, "NDR")
        out.append(
            "Infiniband device '%s' port 1 status:\n\tdefault gid:\t fe80:0000:0000:0000:%s\n"
            "\tbase lid:\t 0x%x\n\tsm lid:\t\t 0x%x\n\tstate:\t\t %d: %s\n\tphys state:\t %d: %s\n"
            "\trate:\t\t %d Gb/sec (%s %s)\n\tlink_layer:\t %s\n\n"
            % (
                dev,
                ":".join(node.guid(i)[j : j + 4] for j in range(0, 16, 4)),
                node.lid(i),
                0 if node.hw["link_layer"] == "Ethernet" else 1,
                code[0],
                code[1],
                pcode,
                phys,
                rate,
                width,
                speed,
                node.hw["link_layer"],
            )
        )
    return "".join(out)


def ibv_devinfo(node, args):
    want = args[args.index("-d") + 1] if "-d" in args else None
    code = {256: 1, 512: 2, 1024: 3, 2048: 4, 4096: 5}
    out = []
    for i, dev in enumerate(node.hcas()):
        if want and dev != want:
            continue
        state, _phys, _, _ = node.port(dev)
        g = node.guid(i)
        mtu = node.active_mtu(i)
        st = "PORT_ACTIVE (4)" if state == "Active" else "PORT_DOWN (1)"
        out.append(
            "hca_id:\t%s\n\ttransport:\t\t\tInfiniBand (0)\n\tfw_ver:\t\t\t\t28.41.1000\n"
            "\tnode_guid:\t\t\t%s\n\tsys_image_guid:\t\t\t%s\n\tvendor_id:\t\t\t0x02c9\n"
            "\tvendor_part_id:\t\t\t4129\n\thw_ver:\t\t\t\t0x0\n\tboard_id:\t\t\tMT_0000000838\n"
            "\tphys_port_cnt:\t\t\t1\n\t\tport:\t1\n\t\t\tstate:\t\t\t%s\n\t\t\tmax_mtu:\t\t4096 (5)\n"
            "\t\t\tactive_mtu:\t\t%d (%d)\n\t\t\tsm_lid:\t\t\t0\n\t\t\tport_lid:\t\t%d\n"
            "\t\t\tport_lmc:\t\t0x00\n\t\t\tlink_layer:\t\t%s\n\n"
            % (
                dev,
                ":".join(g[j : j + 4] for j in range(0, 16, 4)),
                ":".join(g[j : j + 4] for j in range(0, 16, 4)),
                st,
                mtu,
                code[mtu],
                node.lid(i),
                node.hw["link_layer"],
            )
        )
    if not out:
        return "No IB devices found\n"
    return "".join(out)


def show_gids(node, args):
    out = "DEV\tPORT\tINDEX\tGID\t\t\t\t\tIPv4  \t\tVER\tDEV\n---\t----\t-----\t---\t\t\t\t\t------------  \t---\t---\n"
    n = 0
    for i, dev in enumerate(node.hcas()):
        ip = node.rail_ip(i)
        nd = node.netdev(i)
        ll = "fe80:0000:0000:0000:a288:c2ff:fe%02x:%02x%02x" % (node.index & 0xFF, i, 1)
        rows = [(0, ll, "", "v1"), (1, ll, "", "v2")]
        if ip:
            a, b, c, d = (int(x) for x in ip.split("."))
            mapped = "0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x" % (a, b, c, d)
            rows += [(2, mapped, ip, "v1"), (3, mapped, ip, "v2")]
        for idx, gid, addr, ver in rows:
            out += "%s\t1\t%d\t%s\t%s\t%s\t%s\n" % (
                dev,
                idx,
                gid,
                addr + "  " if addr else "",
                ver,
                nd,
            )
            n += 1
    return out + "n_gids_found=%d\n" % n


def ofed_info(node, args):
    v = node.hw["ofed"]
    if "-n" in args:
        return v + "\n"
    return "OFED-internal-%s:\n" % v


def _qos_state(netdev):
    path = os.path.join(STATE_DIR, "qos-%s.json" % netdev)
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh), path
    except (OSError, ValueError):
        return {"trust": "pcp", "pfc": [0] * 8, "dscp2prio": {}}, path


def mlnx_qos(node, args):
    if "-i" not in args:
        sys.stderr.write(
            "usage: mlnx_qos -i <interface> [options]\nmlnx_qos: error: -i/--interface is required\n"
        )
        sys.exit(2)
    netdev = args[args.index("-i") + 1]
    if netdev not in [node.netdev(i) for i in range(node.hw["hcas"])]:
        sys.stderr.write("Interface %s doesn't exist\n" % netdev)
        sys.exit(1)
    state, path = _qos_state(netdev)
    changed = False
    for flag, key in (("--trust", "trust"), ("-f", "pfc"), ("--pfc", "pfc")):
        if flag in args:
            value = args[args.index(flag) + 1]
            state[key] = [int(x) for x in value.split(",")] if key == "pfc" else value
            changed = True
    if "--dscp2prio" in args:
        op = args[args.index("--dscp2prio") + 1].split(",")
        if op[0] == "set":
            state["dscp2prio"][op[1]] = int(op[2])
        elif op[0] == "flush":
            state["dscp2prio"], state["trust"] = {}, "pcp"
        changed = True
    if changed:
        os.makedirs(STATE_DIR, exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(state, fh)
    out = "DCBX mode: OS controlled\nPriority trust state: %s\n" % state["trust"]
    if state["trust"] == "dscp":
        out += "dscp2prio mapping:\n"
        table = {d: d >> 3 for d in range(64)}
        table.update({int(k): v for k, v in state["dscp2prio"].items()})
        for p in range(8):
            ds = [d for d in range(63, -1, -1) if table[d] == p]
            if ds:
                out += "\tprio:%d dscp:%s,\n" % (p, ",".join("%02d" % d for d in ds))
    out += (
        "default priority:\nReceive buffer size (bytes): 130944,130944,0,0,0,0,0,0,total_size=1027808\n"
        "Cable len: 7\nPFC configuration:\n\tpriority    0   1   2   3   4   5   6   7\n"
        "\tenabled     %s   \n\tbuffer      %s   \n"
        % ("   ".join(str(v) for v in state["pfc"]), "   ".join(str(v) for v in state["pfc"]))
    )
    for tc, prio in ((0, 1), (1, 0), (2, 2), (3, 3), (4, 4), (5, 5), (6, 6), (7, 7)):
        out += "tc: %d ratelimit: unlimited, tsa: vendor\n\t priority:  %d\n" % (tc, prio)
    return out


# ------------------------------------------------------------------ perftest


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
        elif a in ("-F", "--out_json", "-R") or a.startswith("--"):
            pass
        elif not a.startswith("-"):
            o["server"] = a
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
                return 1
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
    out = banner(node, title, o)
    if lat:
        base = float(node.hw["lat_us"]) * (
            1.0 if bw >= 0.8 * node.hw["bw_gbps"] * (2 if o["bidir"] else 1) else 1.9
        )
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
    else:
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
    out += D87 + "\n"
    emit(node, tool, out)
    return 0


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


# ------------------------------------------------------------------ nccl-tests


def _size(text):
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper()
    return int(float(text[:-1]) * mult[text[-1]]) if text[-1] in mult else int(text)


def nccl(node, tool, args):
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
    rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", "0"))
    size = int(os.environ.get("OMPI_COMM_WORLD_SIZE", "1"))
    if rank != 0:
        return 0
    hosts_env = os.environ.get("RACKOPS_HWSIM_HOSTS")
    per = o["g"] * int(os.environ.get("OMPI_COMM_WORLD_LOCAL_SIZE", "1")) if size > 1 else o["g"]
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
    if multi:
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
    gen = str(node.formats.get("nccl-tests", "2025"))
    out = ""
    if gen == "2025":
        out += (
            "# nccl-tests version 2.17.6 nccl-headers=22807 nccl-library=22807\n# Collective test starting: %s\n"
            % tool
        )
    out += (
        "# nThread 1 nGpus %d minBytes %d maxBytes %d step: %d(factor) warmup iters: %d iters: %d agg iters: 1 validation: %d graph: 0\n#\n# Using devices\n"
        % (o["g"], o["b"], o["e"], o["f"], o["w"], o["n"], o["c"])
    )
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
        total += busbw
    avg = total / max(1, len(sizes))
    out += "# Out of bounds values : %d %s\n# Avg bus bandwidth    : %g \n#\n" % (
        oob,
        "FAILED" if oob else "OK",
        round(avg, 4),
    )
    if gen == "2025":
        out += "# Collective test concluded: %s\n#\n" % tool
    emit(node, tool, out)
    return 1 if oob else 0


def _f(x, w):
    for p in (2, 1, 0):
        v = "%*.*f" % (w, p, x)
        if len(v) <= w:
            return v
    return "%*.1e" % (w, x)


# ------------------------------------------------------------------ DCGM


W = 46


def _row(name, value):
    return "| %-25s | %-46s |\n" % (name, value)


def _sec(name, first=False):
    label = "-----  %s  " % name
    return ("|%s%s+%s|\n" if first else "+%s%s+%s+\n") % (label, "-" * (27 - len(label)), "-" * 48)


def dcgmi(node, args):
    if not args or args[0] != "diag":
        sys.stderr.write("Usage: dcgmi diag -r <level>\n")
        return 2
    level = "1"
    if "-r" in args:
        level = args[args.index("-r") + 1]
    level = {"quick": "1", "short": "1", "medium": "2", "long": "3", "xlong": "4"}.get(level, level)
    lvl = int(level) if level.isdigit() else 1
    gpus = node.gpus()
    plugins = [("Deployment", "software")]
    if lvl >= 2:
        plugins += [("Hardware", "memory"), ("Integration", "pcie")]
    if lvl >= 3:
        plugins += [
            ("Hardware", "diagnostic"),
            ("Hardware", "nvbandwidth"),
            ("Stress", "targeted_stress"),
            ("Stress", "targeted_power"),
            ("Stress", "memory_bandwidth"),
        ]
    if lvl >= 4:
        plugins += [("Hardware", "memtest"), ("Stress", "pulse_test")]
    skip_all = bool(node.faults_of("dcgm_all_skip"))
    results = {}
    for cat, p in plugins:
        per = {g: ("Skip" if skip_all and p != "software" else "Pass") for g in gpus}
        plugin_result = "Skip" if skip_all and p != "software" else "Pass"
        msgs = []
        for f in node.faults_of("dcgm_fail"):
            if f.get("plugin") == p and lvl >= int(f.get("min_level", 2)):
                g = f.get("gpu")
                if g is not None and int(g) in per:
                    per[int(g)] = "Fail"
                plugin_result = "Fail"
                msgs.append(f.get("message", "GPU %s: %s failed: simulated fault." % (g, p)))
        for f in node.faults_of("remap_pending"):
            if p == "software":
                plugin_result = "Fail"
                per[int(f["gpu"])] = "Fail"
                msgs.append(
                    "GPU %s had uncorrectable memory errors and row remapping is pending. Reset the GPU."
                    % f["gpu"]
                )
        results[p] = (cat, plugin_result, per, msgs)
    if "-j" in args or "--json" in args:
        cats = []
        for cat, p in plugins:
            _, res, per, msgs = results[p]
            entry = {
                "name": p,
                "results": [
                    {"entity_group": "GPU", "entity_group_id": 1, "entity_id": g, "status": s}
                    for g, s in per.items()
                ],
                "test_summary": {
                    "status": res,
                    "warnings": [{"warning": m, "error_id": 81} for m in msgs],
                },
            }
            for c in cats:
                if c["category"] == cat:
                    c["tests"].append(entry)
                    break
            else:
                cats.append({"category": cat, "tests": [entry]})
        text = (
            json.dumps(
                {
                    "DCGM Diagnostic": {"test_categories": cats},
                    "version": node.hw["dcgm"],
                    "Driver Version Detected": node.hw["driver"],
                    "GPU Device IDs": [node.hw["gpu_device_id"]] * len(gpus),
                },
                indent=4,
            )
            + "\n"
        )
        emit(node, "dcgmi", text)
        return 1 if any(r[1] == "Fail" for r in results.values()) else 0
    top = "+" + "-" * 27 + "+" + "-" * 48 + "+\n"
    out = "Successfully ran diagnostic for group.\n" + top
    out += (
        "| Diagnostic                | Result                                         |\n+"
        + "=" * 27
        + "+"
        + "=" * 48
        + "+\n"
    )
    out += (
        _sec("Metadata", True)
        + _row("DCGM Version", node.hw["dcgm"])
        + _row("Driver Version Detected", node.hw["driver"])
    )
    out += _row("GPU Device IDs Detected", ", ".join([node.hw["gpu_device_id"]] * len(gpus))[:46])
    seen = []
    first = True
    for cat, p in sorted(
        plugins, key=lambda t: ["Deployment", "Hardware", "Integration", "Stress"].index(t[0])
    ):
        if cat not in seen:
            out += _sec(cat, first)
            first = False
            seen.append(cat)
        _, res, per, msgs = results[p]
        out += _row(p, res)
        for m in msgs:
            chunks = [m[i : i + 45] for i in range(0, len(m), 45)]
            for j, c in enumerate(chunks):
                out += _row("Warning" if j == 0 else "", c)
        for g, s in per.items():
            out += _row("", "GPU%d: %s" % (g, s))
    out += top
    emit(node, "dcgmi", out)
    return 1 if any(r[1] == "Fail" for r in results.values()) else 0


# ------------------------------------------------------------------ nvidia-smi


def _gpu_fields(node, g):
    pending = bool(node.fault("remap_pending", gpu=g))
    ecc = node.fault("ecc_uncorrectable", gpu=g)
    pm = (
        "Enabled"
        if os.path.exists(os.path.join(STATE_DIR, "persistence"))
        or not node.fault("persistence_off")
        else "Disabled"
    )
    return {
        "index": str(g),
        "name": node.hw["gpu_model"],
        "uuid": "GPU-%08x-4c52-8e1%d-5d0a-%012x"
        % (0x7C1B0000 + node.index, g % 10, node.index * 100 + g),
        "pci.bus_id": "00000000:%s:00.0" % BUS[g % 16],
        "gpu_bus_id": "00000000:%s:00.0" % BUS[g % 16],
        "driver_version": node.hw["driver"],
        "persistence_mode": pm,
        "pcie.link.gen.current": "1",
        "pcie.link.gen.max": "5",
        "pcie.link.gen.gpumax": "5",
        "pcie.link.width.current": "16",
        "pcie.link.width.max": "16",
        "memory.total": "%d MiB" % node.hw["memory_mib"],
        "temperature.gpu": str(31 + g),
        "ecc.errors.uncorrected.volatile.total": str(ecc.get("count", 1)) if ecc else "0",
        "ecc.errors.uncorrected.aggregate.total": str(ecc.get("count", 1)) if ecc else "0",
        "remapped_rows.correctable": "0",
        "remapped_rows.uncorrectable": "2" if pending else "0",
        "remapped_rows.pending": "Yes" if pending else "No",
        "remapped_rows.failure": "No",
        "serial": "16523210%04d%02d" % (node.index, g),
    }


def nvidia_smi(node, args):
    gpus = node.gpus()
    if not gpus and node.hw["gpus"]:
        pass
    apps = next((a for a in args if a.startswith("--query-compute-apps=")), None)
    if apps:  # compute processes on the GPUs: none, unless the scenario says so
        fmt = next((a.split("=", 1)[1] for a in args if a.startswith("--format=")), "csv")
        fields = apps.split("=", 1)[1].split(",")
        out = "" if "noheader" in fmt else ", ".join(fields) + "\n"
        for f in node.faults_of("gpu_processes"):
            out += (
                ", ".join(str(f.get("pid", 4242)) if x == "pid" else "python" for x in fields)
                + "\n"
            )
        emit(node, "nvidia-smi", out)
        return 0
    q = next((a for a in args if a.startswith(("--query-gpu=", "--query-remapped-rows="))), None)
    if q:
        fields = q.split("=", 1)[1].split(",")
        fmt = next((a.split("=", 1)[1] for a in args if a.startswith("--format=")), "csv")
        units = {"memory.total": " [MiB]"}
        out = ""
        if "noheader" not in fmt:
            out += ", ".join(f + (units.get(f, "")) for f in fields) + "\n"
        for g in gpus:
            vals = _gpu_fields(node, g)
            row = []
            for f in fields:
                if f not in vals:
                    sys.stderr.write('Field "%s" is not a valid field to query.\n' % f)
                    return 2
                v = vals[f]
                if "nounits" in fmt and v.endswith(" MiB"):
                    v = v[:-4]
                row.append(v)
            out += ", ".join(row) + "\n"
        emit(node, "nvidia-smi", out)
        return 0
    if "-pm" in args:
        os.makedirs(STATE_DIR, exist_ok=True)
        open(os.path.join(STATE_DIR, "persistence"), "w").close()
        for g in gpus:
            sys.stdout.write("Enabled persistence mode for GPU 00000000:%s:00.0.\n" % BUS[g % 16])
        return 0
    if "-q" in args and "-x" in args:
        out = (
            '<?xml version="1.0" ?>\n<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">\n<nvidia_smi_log>\n'
            "\t<timestamp>%s</timestamp>\n\t<driver_version>%s</driver_version>\n\t<cuda_version>%s</cuda_version>\n"
            "\t<attached_gpus>%d</attached_gpus>\n"
            % (time.ctime(), node.hw["driver"], node.hw["cuda"], len(gpus))
        )
        for g in gpus:
            v = _gpu_fields(node, g)
            ecc = v["ecc.errors.uncorrected.volatile.total"]
            fab = (
                ("In Progress", "N/A")
                if node.faults_of("fabric_manager_down")
                else ("Completed", "Success")
            )
            out += (
                '\t<gpu id="%s">\n\t\t<product_name>%s</product_name>\n\t\t<persistence_mode>%s</persistence_mode>\n'
                "\t\t<serial>%s</serial>\n\t\t<uuid>%s</uuid>\n\t\t<minor_number>%d</minor_number>\n"
                "\t\t<fabric>\n\t\t\t<state>%s</state>\n\t\t\t<status>%s</status>\n\t\t</fabric>\n"
                "\t\t<pci>\n\t\t\t<pci_gpu_link_info>\n\t\t\t\t<pcie_gen>\n\t\t\t\t\t<max_link_gen>5</max_link_gen>\n"
                "\t\t\t\t\t<current_link_gen>1</current_link_gen>\n\t\t\t\t</pcie_gen>\n\t\t\t\t<link_widths>\n"
                "\t\t\t\t\t<max_link_width>16x</max_link_width>\n\t\t\t\t\t<current_link_width>16x</current_link_width>\n"
                "\t\t\t\t</link_widths>\n\t\t\t</pci_gpu_link_info>\n\t\t</pci>\n"
                "\t\t<fb_memory_usage>\n\t\t\t<total>%s</total>\n\t\t</fb_memory_usage>\n"
                "\t\t<ecc_mode>\n\t\t\t<current_ecc>Enabled</current_ecc>\n\t\t</ecc_mode>\n"
                "\t\t<ecc_errors>\n\t\t\t<volatile>\n\t\t\t\t<dram_uncorrectable>%s</dram_uncorrectable>\n\t\t\t</volatile>\n"
                "\t\t\t<aggregate>\n\t\t\t\t<dram_uncorrectable>%s</dram_uncorrectable>\n\t\t\t</aggregate>\n\t\t</ecc_errors>\n"
                "\t\t<remapped_rows>\n\t\t\t<remapped_row_corr>0</remapped_row_corr>\n\t\t\t<remapped_row_unc>%s</remapped_row_unc>\n"
                "\t\t\t<remapped_row_pending>%s</remapped_row_pending>\n\t\t\t<remapped_row_failure>No</remapped_row_failure>\n"
                "\t\t</remapped_rows>\n\t\t<temperature>\n\t\t\t<gpu_temp>%s C</gpu_temp>\n\t\t</temperature>\n\t</gpu>\n"
                % (
                    v["pci.bus_id"],
                    v["name"],
                    v["persistence_mode"],
                    v["serial"],
                    v["uuid"],
                    g,
                    fab[0],
                    fab[1],
                    v["memory.total"],
                    ecc,
                    ecc,
                    v["remapped_rows.uncorrectable"],
                    v["remapped_rows.pending"],
                    v["temperature.gpu"],
                )
            )
        emit(node, "nvidia-smi", out + "</nvidia_smi_log>\n")
        return 0
    if args[:2] == ["topo", "-m"]:
        cols = ["GPU%d" % g for g in gpus] + ["NIC%d" % i for i in range(node.hw["hcas"])]
        out = "\t" + "\t".join(cols) + "\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"
        for r in cols:
            cells = []
            for c in cols:
                if r == c:
                    cells.append(" X ")
                elif r.startswith("GPU") and c.startswith("GPU"):
                    cells.append("NV%d" % node.hw["nvlink_links"])
                else:
                    a, b = int(r[3:]), int(c[3:])
                    cells.append(
                        "PIX"
                        if a == b and r[:3] != c[:3]
                        else ("NODE" if a // 4 == b // 4 else "SYS")
                    )
            extra = (
                ("\t0-55,112-167\t0\t\tN/A" if int(r[3:]) < 4 else "\t56-111,168-223\t1\t\tN/A")
                if r.startswith("GPU")
                else ""
            )
            out += r + "\t" + "\t".join(cells) + extra + "\n"
        out += "\nLegend:\n\n  X    = Self\n  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)\n"
        out += "  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node\n"
        out += "  PIX  = Connection traversing at most a single PCIe bridge\n  NV#  = Connection traversing a bonded set of # NVLinks\n\nNIC Legend:\n\n"
        out += "".join("  NIC%d: mlx5_%d\n" % (i, i) for i in range(node.hw["hcas"]))
        emit(node, "nvidia-smi", out)
        return 0
    if args[:2] == ["nvlink", "-s"]:
        out = ""
        for g in gpus:
            out += "GPU %d: %s (UUID: %s)\n" % (
                g,
                node.hw["gpu_model"],
                _gpu_fields(node, g)["uuid"],
            )
            down = {
                int(f["link"]) for f in node.faults_of("nvlink_down") if int(f.get("gpu", -1)) == g
            }
            for link in range(node.hw["nvlink_links"]):
                out += "\t Link %d: %s\n" % (
                    link,
                    "<inactive>" if link in down else "%.3f GB/s" % node.hw["nvlink_link_gbs"],
                )
        emit(node, "nvidia-smi", out)
        return 0
    out = (
        "%s\n+-----------------------------------------------------------------------------------------+\n"
        % time.ctime()
    )
    out += "| NVIDIA-SMI %s             Driver Version: %s     CUDA Version: %s     |\n" % (
        node.hw["driver"],
        node.hw["driver"],
        node.hw["cuda"],
    )
    out += "+-----------------------------------------------------------------------------------------+\n"
    for g in gpus:
        out += "|   %d  %-30s On  |   00000000:%s:00.0 Off |                    0 |\n" % (
            g,
            node.hw["gpu_model"],
            BUS[g % 16],
        )
    emit(node, "nvidia-smi", out)
    return 0


# ------------------------------------------------------------------ container toolkit


def nvidia_ctk(node, args):
    if "--version" in args or "-v" in args:
        sys.stdout.write("NVIDIA Container Toolkit CLI version 1.17.8\ncommit: rackops-lab\n")
        return 0
    if args[:2] == ["runtime", "configure"]:
        runtime = next((a.split("=", 1)[1] for a in args if a.startswith("--runtime=")), "docker")
        default = {
            "containerd": "/etc/containerd/conf.d/99-nvidia.toml",
            "crio": "/etc/crio/crio.conf.d/99-nvidia.toml",
        }.get(runtime, "/etc/docker/daemon.json")
        path = next(
            (a.split("=", 1)[1] for a in args if a.startswith(("--drop-in-config=", "--config="))),
            default,
        )
        name = next(
            (a.split("=", 1)[1] for a in args if a.startswith("--nvidia-runtime-name=")), "nvidia"
        )
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(
                '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.%s]\n'
                '  runtime_type = "io.containerd.runc.v2"\n'
                '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.%s.options]\n'
                '  BinaryName = "/usr/bin/nvidia-container-runtime"\n' % (name, name)
            )
        sys.stderr.write("INFO[0000] Wrote updated config to %s\n" % path)
        return 0
    if args[:2] == ["cdi", "generate"]:
        path = next((a.split("=", 1)[1] for a in args if a.startswith("--output=")), None)
        text = "cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices:\n" + "".join(
            '- name: "%d"\n' % g for g in node.gpus()
        )
        if path:
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(text)
        else:
            sys.stdout.write(text)
        return 0
    sys.stderr.write("nvidia-ctk: unsupported command in the lab: %s\n" % " ".join(args))
    return 1


# ------------------------------------------------------------------ entry


RDMA = {
    "ibstat": ibstat,
    "ibstatus": ibstatus,
    "ibv_devinfo": ibv_devinfo,
    "show_gids": show_gids,
    "ofed_info": ofed_info,
    "mlnx_qos": mlnx_qos,
}
PERF = ("ib_write_bw", "ib_read_bw", "ib_send_bw", "ib_write_lat", "ib_read_lat", "ib_send_lat")
NCCL = (
    "all_reduce_perf",
    "all_gather_perf",
    "reduce_scatter_perf",
    "alltoall_perf",
    "sendrecv_perf",
    "broadcast_perf",
)
TOOLS = tuple(RDMA) + PERF + NCCL + ("dcgmi", "nvidia-smi", "nvidia-ctk")


# ------------------------------------------------------------------ sysfs and procfs

CPUS_PER_NUMA = 16
NUMA_NODES = 2


def _cpulist(numa):
    return "%d-%d" % (numa * CPUS_PER_NUMA, (numa + 1) * CPUS_PER_NUMA - 1)


def hw_tree(node, args):
    """Lay out the node's simulated sysfs and procfs under ROOT (run by the stand-in OFED
    package at install): per HCA its NUMA node, local CPUs, MSI-X IRQs and the ECN
    directory with the driver's defaults; /proc/irq/N/smp_affinity_list on all CPUs; the
    NUMA nodes with empty hugepage pools. Existing files are kept (a reinstall does not
    reset what the roles set)."""
    root = args[0] if args else os.path.join(STATE_DIR, "root")
    every = "0-%d" % (NUMA_NODES * CPUS_PER_NUMA - 1)

    def put(rel, value):
        path = os.path.join(root, rel)
        if os.path.exists(path):
            return
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="ascii") as fh:
            fh.write("%s\n" % value)

    put("sys/devices/system/node/online", "0-%d" % (NUMA_NODES - 1))
    for n in range(NUMA_NODES):
        base = "sys/devices/system/node/node%d" % n
        put(base + "/cpulist", _cpulist(n))
        for size in (2048, 1048576):
            for f in ("nr_hugepages", "free_hugepages", "surplus_hugepages"):
                put("%s/hugepages/hugepages-%dkB/%s" % (base, size, f), 0)
    for size in (2048, 1048576):
        put("sys/kernel/mm/hugepages/hugepages-%dkB/nr_hugepages" % size, 0)
    hcas = node.hw["hcas"]
    for i in range(hcas):
        nd = node.netdev(i)
        numa = 0 if i < (hcas + 1) // 2 else 1
        dev = "sys/class/net/%s/device" % nd
        put(dev + "/numa_node", numa)
        put(dev + "/local_cpulist", _cpulist(numa))
        first = 100 + i * (CPUS_PER_NUMA + 1)
        for irq in range(first, first + CPUS_PER_NUMA + 1):  # async + one per local CPU
            put("%s/msi_irqs/%d" % (dev, irq), "msix")
            put("proc/irq/%d/smp_affinity_list" % irq, every)
        ecn = "sys/class/net/%s/ecn" % nd
        for p in range(8):
            put("%s/roce_np/enable/%d" % (ecn, p), 1)
            put("%s/roce_rp/enable/%d" % (ecn, p), 1)
        put(ecn + "/roce_np/cnp_dscp", 48)
        put(ecn + "/roce_np/cnp_802p_prio", 6)
        put("sys/class/infiniband/mlx5_%d/tc/1/traffic_class" % i, 0)
    return 0


def main(argv):
    if argv and argv[0] == "hw-tree":
        return hw_tree(
            Node(
                load_scenario(),
                os.environ.get("RACKOPS_HWSIM_NODE") or socket.gethostname().split(".")[0],
            ),
            argv[1:],
        )
    if not argv or argv[0] not in TOOLS:
        sys.stderr.write("usage: hwsim.py TOOL [ARGS...]; tools: %s\n" % " ".join(TOOLS))
        return 64
    tool, args = argv[0], argv[1:]
    node = Node(
        load_scenario(), os.environ.get("RACKOPS_HWSIM_NODE") or socket.gethostname().split(".")[0]
    )
    tool_fault_gate(node, tool)
    if tool in RDMA:
        emit(node, tool, RDMA[tool](node, args))
        return 0
    if tool in PERF:
        return perftest(node, tool, args)
    if tool in NCCL:
        return nccl(node, tool, args)
    if tool == "dcgmi":
        return dcgmi(node, args)
    if tool == "nvidia-ctk":
        return nvidia_ctk(node, args)
    return nvidia_smi(node, args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
