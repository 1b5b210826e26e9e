"""The InfiniBand fabric sweep: ``ibdiagnet`` (ibutils2) and ``perfquery -x -l <switch LID>``
for every port of a switch, over the whole wired fabric — leaves, spines and the ISLs
between them.

The fabric is the scenario's: the nodes' cables as the lab wired them (``wiring``), the
leaf–spine links as designed (``fabric.isls``: leaf, port, spine, spine_port) and the
fabric faults (``fabric.faults``):

- ``isl_errors`` (``switch``: a leaf, ``per_packets``): both ends of that leaf's uplinks
  count one symbol error (and one PortRcvError) per N packets received;
- ``isl_rate`` (``switch``): that leaf's uplinks trained at half the lane speed;
- ``isl_miscabled`` (``switch``, ``spine_port``): that leaf's uplink sits in another port of
  its spine (the uplink designed into that port, if any, in this one's: a swap);
- ``sm`` (``masters``: 0 or 2): no master subnet manager, or two.

Packets on a switch port are the real counters of the Linux interface that plays it (a
bridge port on the lab machine, seen through a read-only bind mount of its
``/sys/devices/virtual/net`` at ``/run/rackops-fabric/net``; ``switches.json`` maps every
port to its interface). Outside the lab both are absent and the counters are zero.

Layouts: the console follows ibdiagnet 2.7's stage banners, ``-E- Link:`` lines and Fabric
Summary; ``ibdiagnet2.sm`` and ``ibdiagnet2.net_dump`` follow the files of 2.x (see
tests/fixtures/ibdiagnet/SOURCES.md for the real ones they are modelled on).
"""

from __future__ import annotations

import json
import os
import re
import sys
import time

from . import nos
from .node import Node

NET_ROOT = "/run/rackops-fabric/net"
SWITCHES = "/etc/rackops-nos/switches.json"
VERSION = '"IBDIAGNET 2.13.0.MLNX20250602.a1b2c3d","IBDIAG 2.1.1.a1b2c3d","IBDM 2.1.1.a1b2c3d"'
LANE = {400: 100, 200: 50, 100: 25}  # port rate -> per-lane Gb/s on 4 lanes
SWITCH_PORTS = 64


def ib_port(name, fallback):
    m = re.match(r"^(\d+)/(\d+)$", str(name))
    if m:
        return 2 * int(m.group(1)) - 2 + int(m.group(2))
    m = re.search(r"(\d+)$", str(name))
    return int(m.group(1)) if m else fallback


def _faults(scenario, kind):
    return [f for f in (scenario.get("fabric") or {}).get("faults") or [] if f.get("kind") == kind]


def isls(scenario):
    """[(leaf, leaf IB port, spine, spine IB port, per-lane Gb/s)] as really cabled."""
    lane = LANE.get(int((scenario.get("hardware") or {}).get("rate_gbps", 400)), 100)
    out = []
    for i in (scenario.get("fabric") or {}).get("isls") or []:
        out.append(
            [i["leaf"], ib_port(i["port"], 0), i["spine"], ib_port(i["spine_port"], 0), lane]
        )
    for f in _faults(scenario, "isl_miscabled"):
        mine = [x for x in out if x[0] == f.get("switch")]
        if not mine:
            continue
        to = ib_port(f.get("spine_port", ""), 0)
        taken = [x for x in out if x[2] == mine[0][2] and x[3] == to]
        for x in taken:
            x[3] = mine[0][3]  # the cable designed into that port: in this one's (a swap)
        mine[0][3] = to
    for f in _faults(scenario, "isl_rate"):
        for x in out:
            if x[0] == f.get("switch"):
                x[4] = x[4] // 2
    return [tuple(x) for x in out]


def switches(scenario):
    names = set()
    for plugs in (scenario.get("wiring") or {}).values():
        names.update(p[0] for p in plugs.values())
    for leaf, _, spine, _, _ in isls(scenario):
        names.update((leaf, spine))
    if not names:  # no wiring: the designed one-rack fabric
        names = {
            "leaf-r%d" % i for i in range(int((scenario.get("hardware") or {}).get("hcas", 8)))
        }
    return sorted(names)


_NUMBERED = [None, {}]  # the scenario last numbered, and its switch -> index


def _number(scenario, name):
    """The switch's index in the fabric's sorted switches (its LID and GUID follow)."""
    if _NUMBERED[0] is not scenario:
        _NUMBERED[:] = [scenario, {n: i for i, n in enumerate(switches(scenario))}]
    return _NUMBERED[1][name]


def switch_lid(scenario, name):
    return 2 + _number(scenario, name)


def switch_guid(scenario, name):
    return "b83fd20300%06x" % (0xA000 + _number(scenario, name))


def host_links(scenario):
    """[(leaf, IB port, node, HCA index)] for every host cable, as wired."""
    out = []
    wiring = scenario.get("wiring") or {}
    for name in sorted(
        scenario.get("nodes", {}), key=lambda n: scenario["nodes"][n].get("index", 0)
    ):
        node = Node(scenario, name)
        for i in range(node.hw["hcas"]):
            plug = wiring.get(name, {}).get(str(i))
            leaf, port = (
                (plug[0], ib_port(plug[1], node.index)) if plug else ("leaf-r%d" % i, node.index)
            )
            out.append((leaf, port, node, i))
    return out


_ROWS = [None, {}]  # the scenario last tabulated, and its rows


def _rows(scenario):
    """switch -> IB port -> (neighbour GUID, its port, its LID, description, width, lane)."""
    if _ROWS[0] is not scenario:  # once a scenario: every switch's counters read them
        _ROWS[:] = [scenario, _tabulate(scenario)]
    return _ROWS[1]


def _tabulate(scenario):
    rows = {s: {} for s in switches(scenario)}
    for leaf, port, node, i in host_links(scenario):
        dev = node.hcas()[i]
        state, _, rate, width = node.port(dev)
        if state != "Active":
            continue
        lanes = int(str(width).rstrip("Xx") or 4)
        rows[leaf][port] = (
            "0x" + node.guid(i, 1).lstrip("0"),
            1,
            node.lid(i),
            "%s %s" % (node.name, dev),
            "%dx" % lanes,
            LANE.get(rate * 4 // lanes, 100),
        )
    for leaf, lp, spine, sp, lane in isls(scenario):
        rows[leaf][lp] = (
            "0x" + switch_guid(scenario, spine).lstrip("0"),
            sp,
            switch_lid(scenario, spine),
            _desc(spine),
            "4x",
            lane,
        )
        rows[spine][sp] = (
            "0x" + switch_guid(scenario, leaf).lstrip("0"),
            lp,
            switch_lid(scenario, leaf),
            _desc(leaf),
            "4x",
            lane,
        )
    return rows


def _desc(switch):
    return "MF0;%s:MQM9790/U1" % switch


def _masters(scenario):
    """The SMs as (state, node, HCA index, priority): one master on the first node's first
    HCA and a standby on the last node's, unless an ``sm`` fault says otherwise."""
    names = sorted(scenario.get("nodes", {}), key=lambda n: scenario["nodes"][n].get("index", 0))
    if not names:
        return []
    first, last = Node(scenario, names[0]), Node(scenario, names[-1])
    f = _faults(scenario, "sm")
    masters = int(f[0].get("masters", 1)) if f else 1
    if masters == 0:
        return []  # opensm stopped everywhere: nobody answers SMInfo as master
    if masters >= 2:
        return [("master", first, 0, 15), ("master", last, 0, 14)]
    return [("master", first, 0, 15), ("standby", last, 0, 14)]


def sm_file(scenario):
    out = "# This database file was automatically generated by IBDIAG\n\n\nibdiagnet fabric SM report\n\n"
    for state in ("master", "standby"):
        group = [s for s in _masters(scenario) if s[0] == state]
        if not group:
            continue
        out += "  SM - %s\n" % state
        for _, node, i, prio in group:
            out += "    Port=1 lid=0x%04x guid=0x%s dev=4129 priority:%d\n" % (
                node.lid(i),
                node.guid(i, 1),
                prio,
            )
        out += "\n"
    return out


def net_dump(scenario, command):
    out = (
        "# This database file was automatically generated by IBDIAG\n"
        "# Running version   : %s\n# Running command   : %s\n"
        "# Running timestamp : %s\n\n\n"
        % (VERSION, command, time.strftime("%Y-%m-%d %H:%M:%S UTC"))
    )
    cols = "  #          : IB# : Sta  : PhysSta    : MTU : LWA     : LSA     : FEC mode            : Retran : Neighbor Guid      : N#         : NLID : Neighbor Description\n"
    # with no master SM nobody activates a link: trained (LinkUp) but INIT
    sta = "ACT " if any(m[0] == "master" for m in _masters(scenario)) else "INI "
    for sw, ports in sorted(_rows(scenario).items()):
        out += '"%s", Mellanox, 0x%s, LID %d\n' % (
            _desc(sw),
            switch_guid(scenario, sw).lstrip("0"),
            switch_lid(scenario, sw),
        )
        out += cols
        for p in sorted(ports):
            guid, np_, nlid, desc, width, lane = ports[p]
            out += (
                '  %-10s : %-3d : %s : LINK UP    : 5   : %-7s : %-7d : %-19s : NO-RTR : %-18s : %-10d : %-4d : "%s"\n'
                % (
                    p,
                    p,
                    sta,
                    width,
                    lane,
                    "MLNX_RS_544_514_PLR",
                    guid,
                    np_,
                    nlid,
                    desc,
                )
            )
        out += "\n"
    return out


def console(scenario, outdir):
    rows = _rows(scenario)
    nsw = len(rows)
    hosts = {
        (h[2].name, h[3])
        for h in host_links(scenario)
        if h[2].port(h[2].hcas()[h[3]])[0] == "Active"
    }
    nodes = nsw + len(hosts)
    rule = "-" * 45 + "\n"
    out = "Running version: %s\nRunning command: ibdiagnet -o %s\nTimestamp: %s\n\n" % (
        VERSION,
        outdir,
        time.strftime("%Y-%m-%d %H:%M:%S UTC +0000"),
    )
    out += rule + "Discovery\n"
    out += "-I- Discovering ... %d nodes (%d Switches & %d CA-s) discovered.\n" % (
        nodes,
        nsw,
        len(hosts),
    )
    out += "-I- Fabric Discover finished successfully\n\n"
    out += "-I- Duplicated GUIDs detection finished successfully\n\n"
    out += rule + "Lids Check\n-I- Lids Check finished successfully\n\n"
    out += rule + "Links Check\n-I- Links Check finished successfully\n\n"
    sms = _masters(scenario)
    nmasters = sum(1 for s in sms if s[0] == "master")
    out += rule + "Subnet Manager\n-I- SM Info retrieving finished successfully\n\n"
    sm_err = nmasters != 1
    out += "-%s- Subnet Manager Check finished %s\n\n" % (
        "E" if sm_err else "I",
        "with errors" if sm_err else "successfully",
    )
    out += rule + "Port Counters\n-I- Ports counters retrieving finished successfully\n\n"
    slow = _slow_links(scenario, rows)
    out += rule + "Speed / Width checks\n"
    out += "-I- Link Speed Check (Compare to supported link speed)\n"
    if slow:
        out += "-E- Links Speed Check finished with errors\n"
        for a, pa, b, pb, lane in slow[:5]:  # the screen shows 5; the log has them all
            out += "-E- Link: %s/P%d<-->%s/P%d - Unexpected actual link speed %d\n" % (
                _desc(a),
                pa,
                _desc(b),
                pb,
                lane,
            )
    else:
        out += "-I- Links Speed Check finished successfully\n"
    out += "\n" + rule + "Fabric Summary\n\n"
    out += (
        "Total Nodes             : %d\nIB Switches             : %d\nIB Channel Adapters     : %d\n\n"
        % (
            nodes,
            nsw,
            len(hosts),
        )
    )
    for state, label in (("master", "Master SM"), ("standby", "Standby SM")):
        group = [s for s in sms if s[0] == state]
        if not group:
            out += "%s : No %s\n" % (label, label)
        for _, node, i, prio in group:
            out += (
                "%s: Port=1 LID=%d GUID=0x%s devid=4129 Priority:%d Node_Type=CA Node_Description=%s %s\n"
                % (
                    label,
                    node.lid(i),
                    node.guid(i, 1),
                    prio,
                    node.name,
                    node.hcas()[i],
                )
            )
    out += "\n" + rule + "Summary\n"
    out += "-I- Stage                               Warnings   Errors     Comment\n"
    for stage, errs in (
        ("Discovery", 0),
        ("Lids Check", 0),
        ("Links Check", 0),
        ("Subnet Manager", 1 if sm_err else 0),
        ("Port Counters", 0),
        ("Speed / Width checks", len(slow)),
    ):
        out += "-I- %-35s %-10d %-10d\n" % (stage, 0, errs)
    out += "\n-I- You can find detailed errors/warnings in: %s/ibdiagnet2.log\n" % outdir
    return out


def _slow_links(scenario, rows):
    """Links below the fabric's lane speed, each once (a switch end first)."""
    lane = LANE.get(int((scenario.get("hardware") or {}).get("rate_gbps", 400)), 100)
    out = []
    for leaf, lp, spine, sp, got in isls(scenario):
        if got < lane:
            out.append((leaf, lp, spine, sp, got))
    return out


def ibdiagnet(node, args):
    """``ibdiagnet [-o DIR]``: the console on stdout, ibdiagnet2.{log,sm,net_dump} in DIR."""
    scenario = node.scenario
    if node.hw["link_layer"] == "Ethernet":
        sys.stdout.write("-E- Failed to find any InfiniBand port to run on\n")
        return 1
    outdir = args[args.index("-o") + 1] if "-o" in args else "/var/tmp/ibdiagnet2"
    text = console(scenario, outdir)
    os.makedirs(outdir, exist_ok=True)
    for name, body in (
        ("ibdiagnet2.log", text),
        ("ibdiagnet2.sm", sm_file(scenario)),
        ("ibdiagnet2.net_dump", net_dump(scenario, "ibdiagnet " + " ".join(args))),
    ):
        with open(os.path.join(outdir, name), "w") as fh:
            fh.write(body)
    sys.stdout.write(text)
    return 1 if "\n-E- " in text else 0  # ibdiagnet: 1 when it found fabric errors


# --- a switch's port counters, as ``perfquery -x -l <LID>`` reads them from any node --------


def _port_names(scenario):
    """switch -> IB port -> the interface that plays it (switches.json), when in the lab."""
    try:
        with open(SWITCHES) as fh:
            conf = json.load(fh)
    except (OSError, ValueError):
        return {}
    return {
        sw: {ib_port(p, 0): ifname for p, ifname in c.get("ports", {}).items()}
        for sw, c in conf.items()
    }


def switch_counters(scenario, switch):
    """IB port -> counters (perfquery's names) of every cabled port of ``switch``."""
    names = _port_names(scenario).get(switch, {})
    per_port = {}  # (switch, IB port) -> an isl_errors fault's packets per error
    for f in _faults(scenario, "isl_errors"):
        for leaf, lp, spine, sp, _ in isls(scenario):
            if leaf == f.get("switch"):
                per_port[(leaf, lp)] = per_port[(spine, sp)] = int(f.get("per_packets") or 10)
    cabled = _rows(scenario).get(switch, {})
    out = {}
    for port in range(1, max([SWITCH_PORTS, *cabled]) + 1):
        ifname = names.get(port) if port in cabled else None
        c = {k: nos.stat(NET_ROOT, ifname, k) if ifname else 0 for k in nos.STAT_NAMES}
        c = {
            "tx_pkts": c["tx_packets"],
            "rx_pkts": c["rx_packets"],
            "tx_bytes": c["tx_bytes"],
            "rx_bytes": c["rx_bytes"],
            "symbol_errors": 0,
            "rcv_errors": 0,
            "link_recovery": 0,
            "link_downed": 0,
            "xmit_discards": 0,
            "xmit_wait": 0,
        }
        per = per_port.get((switch, port))
        if per:
            c["symbol_errors"] = c["rcv_errors"] = c["rx_pkts"] // max(1, per)
        out[port] = c
    return out
