"""The InfiniBand fabric as the subnet manager sees it: ``iblinkinfo`` and ``ibnetdiscover``.

Fabric-wide tools: whichever node runs them prints every node of the scenario and every
leaf, wired as the scenario's ``wiring`` says (the lab writes it, with its miscabling
faults applied) or, without one, as designed: HCA ``mlx5_r`` of node ``i`` in leaf
``leaf-r<r>`` port ``i``. Port names of the form ``C/S`` (cage/split of a 64-port NDR
switch) are IB port ``2C-2+S``. Layouts follow rdma-core's iblinkinfo.c (``%18s`` speed
field) and ibnetdiscover.c (topology file: TABs, ``vendid=`` blocks).
"""

from __future__ import annotations

import os
import sys
import time

from .ibdiag import host_links, switch_guid, switch_lid

SPEED = {400: "106.25 Gbps", 200: "53.125 Gbps", 100: "25.78125 Gbps"}
SPEED_NAME = {400: "NDR", 200: "HDR", 100: "EDR"}


def _plugs(scenario):
    """[(node, dev index, leaf, ib port)] for every cable in the fabric."""
    return [(node, i, leaf, port) for leaf, port, node, i in host_links(scenario)]


def _needs_ib(node, tool):
    """On an Ethernet (RoCE) port there is no subnet manager to discover: fail as the real
    tools do."""
    if node.hw["link_layer"] == "Ethernet":
        sys.stderr.write(
            "ibwarn: [%d] mad_rpc_open_port: client_register for mgmt 1 failed\n"
            "src/ibnetdisc.c:802; can't open MAD port ((null):0)\n" % os.getpid()
        )
        sys.stdout.write("%s: iberror: failed: discover failed\n" % tool)
        sys.exit(255)


def iblinkinfo(node, args):
    _needs_ib(node, "iblinkinfo")
    plugs = _plugs(node.scenario)
    out = ""
    for n, i, leaf, port in plugs:
        dev = n.hcas()[i]
        state, phys, rate, width = n.port(dev)
        if state != "Active":
            continue  # the subnet manager cannot reach a CA behind a port that is down
        out += "CA: %s %s:\n" % (n.name, dev)
        out += "      0x%s %6d %4d[  ] ==%s==>  %s" % (
            n.guid(i, 1),
            n.lid(i),
            1,
            _link(state, phys, rate, width),
            '%6d %4d[  ] "%s" ( )\n' % (switch_lid(node.scenario, leaf), port, leaf)
            if state == "Active"
            else '           [  ] "" ( )\n',
        )
    for leaf in sorted({p[2] for p in plugs}):
        out += "Switch: 0x%s %s:\n" % (switch_guid(node.scenario, leaf), leaf)
        ports = sorted((p for p in plugs if p[2] == leaf), key=lambda p: p[3])
        for n, i, _, port in ports:
            dev = n.hcas()[i]
            state, phys, rate, width = n.port(dev)
            out += "      %6d %4d[  ] ==%s==>  %s" % (
                switch_lid(node.scenario, leaf),
                port,
                _link(state, phys, rate, width),
                '%6d %4d[  ] "%s %s" ( )\n' % (n.lid(i), 1, n.name, dev)
                if state == "Active"
                else '           [  ] "" ( )\n',
            )
    return out


def _link(state, phys, rate, width):
    if state != "Active":
        return "(              %6s/%8s)" % ("Down", phys)
    lanes = int(str(width).rstrip("X") or 4)
    return "(%3s %18s %6s/%8s)" % (
        width,
        SPEED.get(rate * 4 // lanes, "106.25 Gbps"),
        "Active",
        "LinkUp",
    )


def ibnetdiscover(node, args):
    _needs_ib(node, "ibnetdiscover")
    plugs = _plugs(node.scenario)
    out = "#\n# Topology file: generated on %s\n#\n" % time.ctime()
    first = plugs[0][0] if plugs else node
    out += "# Initiated from node %s port %s\n" % (first.guid(0), first.guid(0, 1))
    for leaf in sorted({p[2] for p in plugs}):
        g = switch_guid(node.scenario, leaf)
        out += "\nvendid=0x2c9\ndevid=0xd2f2\nsysimgguid=0x%s\nswitchguid=0x%s(%s)\n" % (
            g.lstrip("0"),
            g.lstrip("0"),
            g.lstrip("0"),
        )
        out += 'Switch\t64 "S-%s"\t\t# "%s" enhanced port 0 lid %d lmc 0\n' % (
            g,
            leaf,
            switch_lid(node.scenario, leaf),
        )
        for n, i, _, port in sorted((p for p in plugs if p[2] == leaf), key=lambda p: p[3]):
            state, _, rate, width = n.port(n.hcas()[i])
            if state != "Active":
                continue
            out += '[%d]\t"H-%s"[1](%s) \t\t# "%s %s" lid %d %s%s\n' % (
                port,
                n.guid(i),
                n.guid(i, 1).lstrip("0"),
                n.name,
                n.hcas()[i],
                n.lid(i),
                str(width).lower(),
                SPEED_NAME.get(rate * 4 // int(str(width).rstrip("X") or 4), "NDR"),
            )
    for n, i, leaf, port in plugs:
        state, _, rate, width = n.port(n.hcas()[i])
        if state != "Active":
            continue  # not discovered: the port to it is down
        out += "\nvendid=0x2c9\ndevid=0x1021\nsysimgguid=0x%s\ncaguid=0x%s\n" % (
            n.guid(i).lstrip("0"),
            n.guid(i).lstrip("0"),
        )
        out += 'Ca\t1 "H-%s"\t\t# "%s %s"\n' % (n.guid(i), n.name, n.hcas()[i])
        if state == "Active":
            out += '[1](%s) \t"S-%s"[%d]\t\t# lid %d lmc 0 "%s" lid %d %s%s\n' % (
                n.guid(i, 1).lstrip("0"),
                switch_guid(node.scenario, leaf),
                port,
                n.lid(i),
                leaf,
                switch_lid(node.scenario, leaf),
                str(width).lower(),
                SPEED_NAME.get(rate * 4 // int(str(width).rstrip("X") or 4), "NDR"),
            )
    return out
