"""nvidia-imex-ctl -N [-H] (and -q, this daemon's state: READY): the IMEX domain as this
tray's daemon sees it, for a tray of a
multi-node NVLink domain (hardware ``nvlink_domain``). The layout is R570.1xx's (the AWS PCS
guide's 18-node GB200 table, tests/fixtures/nvidia-imex/aws-pcs-570-18node-up.txt: the
legend with the tool's own "triggreed", ``Node #N - ADDR - STATE - Version: V``, the matrix,
``Domain State``); ``-H`` adds ``- Hostname:`` as a public 580.173.02 snapshot shows. A tray
whose IMEX is down (fault ``imex_down``) is UNAVAILABLE with an empty version in every other
tray's table, its row and column N (never connected), the domain DEGRADED; on that tray the
command reaches no daemon and prints nothing (no public capture says what it prints)."""

from __future__ import annotations

import sys
import time

from .node import Node, emit

LEGEND = (
    "Connectivity Table Legend:\n"
    "I - Invalid - Node wasn't reachable, no connection status available\n"
    "N - Never Connected\n"
    "R - Recovering - Connection was lost, but clean up has not yet been triggered.\n"
    "D - Disconnected - Connection was lost, and clean up has been triggreed.\n"
    "A - Authenticating - If GSSAPI enabled, client has initiated mutual authentication.\n"
    "!V! - Version mismatch, communication disabled.\n"
    "!M! - Node map mismatch, communication disabled.\n"
    "C - Connected - Ready for operation\n"
)


def _trays(node):
    """The domain's trays in nodes_config.cfg order (the scenario's node index)."""
    domain = node.hw.get("nvlink_domain")
    out = []
    for name in node.scenario.get("nodes", {}):
        other = node if name == node.name else Node(node.scenario, name)
        if other.hw.get("nvlink_domain") == domain:
            out.append(other)
    return sorted(out, key=lambda n: (n.index, n.name))


def nvidia_imex_ctl(node, args):
    if not ("-N" in args or "-q" in args) or not node.hw.get("nvlink_domain"):
        sys.stderr.write("Unable to open configuration file at /etc/nvidia-imex/config.cfg\n")
        return 1
    if node.faults_of("imex_down"):
        return 1
    if "-q" in args:  # this daemon's own state (jgehrcke/jpsnips-nv, 570.00: READY)
        emit(node, "nvidia-imex-ctl", "READY\n")
        return 0
    trays = _trays(node)
    down = {i for i, t in enumerate(trays) if t.faults_of("imex_down")}
    now = time.time()
    stamp = "%d/%d/%s.%03d" % (
        time.localtime(now).tm_mon,
        time.localtime(now).tm_mday,
        time.strftime("%Y %H:%M:%S", time.localtime(now)),
        int(now * 1000) % 1000,
    )
    out = LEGEND + "\n" + stamp + "\nNodes:\n"
    for i, t in enumerate(trays):
        addr = t.hw.get("imex_address") or "172.31.0.%d" % (10 + t.index)
        state = "UNAVAILABLE" if i in down else "READY"
        version = "" if i in down else t.hw["driver"]
        if "-H" in args:
            out += "Node #%-3d - %-18s - %-20s - Version: %-16s- Hostname: %s\n" % (
                i,
                addr,
                state,
                version,
                t.name,
            )
        else:
            out += (
                "Node #%-3d - %-15s - %-20s - Version: %s" % (i, addr, state, version)
            ).rstrip() + "\n"
    out += "\n Nodes From\\To  " + "".join("%-4d" % i for i in range(len(trays))).rstrip() + "\n"
    for i in range(len(trays)):
        cells = ["N" if (i in down or j in down) else "C" for j in range(len(trays))]
        out += "%8d        " % i + "   ".join(cells) + "\n"
    out += "\nDomain State: %s\n" % ("DEGRADED" if down else "UP")
    emit(node, "nvidia-imex-ctl", out)
    return 0
