"""The RDMA stack's state tools: ibstat, ibstatus, ibv_devinfo, show_gids, ofed_info,
mlnx_qos (whose settings persist, so roles can set and read them back)."""

from __future__ import annotations

import json
import os
import sys

from .node import STATE_DIR


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
            "CA '%s'\n\tCA type: MT4129\n\tNumber of ports: 1\n\tFirmware version: %s\n"
            "\tHardware version: 0\n\tNode GUID: 0x%s\n\tSystem image GUID: 0x%s\n\tPort 1:\n"
            "\t\tState: %s\n\t\tPhysical state: %s\n\t\tRate: %s\n\t\tBase lid: %d\n\t\tLMC: 0\n"
            "\t\tSM lid: %d\n\t\tCapability mask: %s\n\t\tPort GUID: 0x%s\n\t\tLink layer: %s\n"
            % (
                dev,
                node.hca_fw(dev),
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
            "hca_id:\t%s\n\ttransport:\t\t\tInfiniBand (0)\n\tfw_ver:\t\t\t\t%s\n"
            "\tnode_guid:\t\t\t%s\n\tsys_image_guid:\t\t\t%s\n\tvendor_id:\t\t\t0x02c9\n"
            "\tvendor_part_id:\t\t\t4129\n\thw_ver:\t\t\t\t0x0\n\tboard_id:\t\t\tMT_0000000838\n"
            "\tphys_port_cnt:\t\t\t1\n\t\tport:\t1\n\t\t\tstate:\t\t\t%s\n\t\t\tmax_mtu:\t\t4096 (5)\n"
            "\t\t\tactive_mtu:\t\t%d (%d)\n\t\t\tsm_lid:\t\t\t0\n\t\t\tport_lid:\t\t%d\n"
            "\t\t\tport_lmc:\t\t0x00\n\t\t\tlink_layer:\t\t%s\n\n"
            % (
                dev,
                node.hca_fw(dev),
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
