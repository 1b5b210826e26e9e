"""The switches' counter commands, printed as each NOS prints them, from one set of counters
per port: SONiC's portstat / pfcstat / wredstat tables (sonic-utilities' ``tabulate`` "simple"
layout: right-aligned cells under runs of dashes, integers comma-grouped), Cumulus NVUE's
``nv show interface <if> counters`` and ``... qos roce counters`` (left-aligned, units), and
Arista EOS's ``| json`` objects.

A port's counters (``c``) use the normalised names of rackops.checks.switchports:
``rx_pkts``, ``tx_pkts``, ``rx_bytes``, ``tx_bytes``, ``crc_errors``, ``symbol_errors``,
``fec_corrected``, ``rx_discards``, ``xmit_discards``, ``pause_rx``, ``pause_tx``,
``ecn_marked`` (the RoCE priority's); ``state`` is U/D.
"""

from __future__ import annotations

import json
import os
import re
import sys


def _table(header, rows, left=False):
    n = len(header)
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(n)]

    def fmt(cells):
        out = [
            str(cells[i]).ljust(widths[i]) if left else str(cells[i]).rjust(widths[i])
            for i in range(n)
        ]
        return "  ".join(out)

    lines = [fmt(header), "  ".join("-" * w for w in widths)] + [fmt(r) for r in rows]
    return "\n".join(line.rstrip() if not left else line for line in lines) + "\n"


def _n(v):
    return f"{int(v):,}"


def _rate(bps):
    if bps <= 10000:
        return "%.2f B/s" % bps
    if bps <= 10000000:
        return "%.2f KB/s" % (bps / 1000.0)
    return "%.2f MB/s" % (bps / 1000000.0)


def sonic_interfaces(ports):
    header = [
        "IFACE",
        "STATE",
        "RX_OK",
        "RX_BPS",
        "RX_UTIL",
        "RX_ERR",
        "RX_DRP",
        "RX_OVR",
        "TX_OK",
        "TX_BPS",
        "TX_UTIL",
        "TX_ERR",
        "TX_DRP",
        "TX_OVR",
    ]
    rows = []
    for p, c in ports.items():
        rows.append(
            [
                p,
                c.get("state", "U"),
                _n(c["rx_pkts"]),
                _rate(0),
                "0.00%",
                _n(c["crc_errors"]),
                _n(c["rx_discards"]),
                "0",
                _n(c["tx_pkts"]),
                _rate(0),
                "0.00%",
                "0",
                _n(c["xmit_discards"]),
                "0",
            ]
        )
    return _table(header, rows)


def sonic_fec(ports):
    header = ["IFACE", "STATE", "FEC_CORR", "FEC_UNCORR", "FEC_SYMBOL_ERR"]
    rows = [
        [
            p,
            c.get("state", "U"),
            _n(c["fec_corrected"]),
            _n(c["symbol_errors"]),
            _n(c["fec_corrected"]),
        ]
        for p, c in ports.items()
    ]
    return _table(header, rows)


def sonic_pfc(ports, prio):
    out = []
    for side, key in (("Rx", "pause_rx"), ("Tx", "pause_tx")):
        header = ["Port " + side] + ["PFC%d" % i for i in range(8)]
        rows = [[p] + [_n(c[key] if i == prio else 0) for i in range(8)] for p, c in ports.items()]
        out.append(_table(header, rows))
    return "\n".join(out)


def sonic_wred(ports, prio):
    header = ["Port", "TxQ", "WredDrp/pkts", "WredDrp/bytes", "EcnMarked/pkts", "EcnMarked/bytes"]
    out = []
    for p, c in ports.items():
        rows = [
            [p, "UC%d" % q, "N/A", "N/A", c["ecn_marked"] if q == prio else 0, 0] for q in range(8)
        ]
        out.append(_table(header, rows))
    return "\n".join(out)


def nvue_counters(c):
    def sect(title, rows):
        t = _table(["Counter", "Receive", "Transmit"], rows, left=True)
        body = "".join("    " + line + "\n" for line in t.splitlines())
        return "%s\n%s\n%s" % (title, "=" * (len(title) + 3), body)

    head = _table(
        ["", "operational", "applied"],
        [["carrier-transitions", c.get("carrier", 2), ""]],
        left=True,
    )
    return "\n".join(
        [
            head,
            sect(
                "Detailed Counters",
                [
                    ["Total Octets", c["rx_bytes"], c["tx_bytes"]],
                    ["Total Packets", c["rx_pkts"], c["tx_pkts"]],
                ],
            ),
            sect("Drop Counters", [["Total Drops", c["rx_discards"], c["xmit_discards"]]]),
            sect(
                "Error Counters",
                [
                    ["FCS Errors", c["crc_errors"], "n/a"],
                    ["Symbol Errors", c["symbol_errors"], "n/a"],
                    ["Total Errors", c["crc_errors"] + c["symbol_errors"], 0],
                ],
            ),
        ]
    )


def nvue_roce(c):
    rows = [
        ["rx-stats", "", "", ""],
        ["  rx-pfc-stats", "", "", ""],
        ["    pause-packets", c["pause_rx"], "", "Rx PFC pause packets for RoCE traffic"],
        ["tx-stats", "", "", ""],
        ["  tx-ecn-stats", "", "", ""],
        ["    ecn-marked-packets", c["ecn_marked"], "", "Tx ECN marked packets"],
        ["  tx-pfc-stats", "", "", ""],
        ["    pause-packets", c["pause_tx"], "", "Tx PFC pause packets for RoCE traffic"],
    ]
    return _table(["", "operational", "applied", "description"], rows, left=True)


def eos_json(ports, what, prio):
    if what == "errors":
        body = {
            "interfaceErrorCounters": {
                p: {
                    "fcsErrors": c["crc_errors"],
                    "symbolErrors": c["symbol_errors"],
                    "alignmentErrors": 0,
                    "inErrors": c["crc_errors"],
                    "outErrors": 0,
                    "frameTooLongs": 0,
                    "frameTooShorts": 0,
                }
                for p, c in ports.items()
            }
        }
    elif what == "discards":
        body = {
            "interfaces": {
                p: {"inDiscards": c["rx_discards"], "outDiscards": c["xmit_discards"]}
                for p, c in ports.items()
            },
            "inDiscardsTotal": sum(c["rx_discards"] for c in ports.values()),
            "outDiscardsTotal": sum(c["xmit_discards"] for c in ports.values()),
        }
    elif what == "pfc":
        body = {
            "interfaceCounters": {
                p: {"rxFrames": c["pause_rx"], "txFrames": c["pause_tx"]} for p, c in ports.items()
            }
        }
    else:
        body = {
            "intfQueueCounters": {
                p: {
                    "queueCounters": {
                        str(q): str(c["ecn_marked"] if q == prio else 0) for q in range(8)
                    }
                }
                for p, c in ports.items()
            }
        }
    return json.dumps(body, indent=2) + "\n"


# --- what the switch says is at each port: LLDP neighbour, speed, state ----------------------
# ``views``: port -> {"oper": "up"|"down", "speed": Gb/s, "peer": [system, port] or None}


def _g(speed):
    return "%gG" % speed


def sonic_lldp(views):
    rows = [
        [p, v["peer"][0], v["peer"][1], "BR", ""]
        for p, v in sorted(views.items(), key=lambda x: _natural(x[0]))
        if v["peer"] and v["oper"] == "up"
    ]
    header = ["LocalPort", "RemoteDevice", "RemotePortID", "Capability", "RemotePortDescr"]
    table = "\n".join(x.rstrip() for x in _table(header, rows, left=True).splitlines())
    return (
        "Capability codes: (R) Router, (B) Bridge, (O) Other\n%s\n%s\nTotal entries displayed:  %d\n"
        % (table, "-" * 50, len(rows))
    )


def sonic_status(views, mtu):
    header = [
        "Interface",
        "Lanes",
        "Speed",
        "MTU",
        "FEC",
        "Alias",
        "Vlan",
        "Oper",
        "Admin",
        "Type",
        "Asym PFC",
    ]
    rows = [
        [p, "0", _g(v["speed"]), str(mtu), "rs", p, "routed", v["oper"], "up", "QSFP-DD", "off"]
        for p, v in sorted(views.items(), key=lambda x: _natural(x[0]))
    ]
    return _table(header, rows)


def nvue_interfaces(views, mtu):
    header = [
        "Interface",
        "Admin Status",
        "Oper Status",
        "Speed",
        "MTU",
        "Type",
        "Remote Host",
        "Remote Port",
        "Summary",
    ]
    rows = []
    for p, v in sorted(views.items(), key=lambda x: _natural(x[0])):
        up = v["oper"] == "up"
        peer = v["peer"] if up and v["peer"] else ["", ""]
        rows.append(
            [
                p,
                "up",
                v["oper"],
                _g(v["speed"]) if up else "",
                str(mtu),
                "swp",
                peer[0],
                peer[1],
                "",
            ]
        )
    return "\n".join(x.rstrip() for x in _table(header, rows, left=True).splitlines()) + "\n"


def eos_ports(views, what):
    if what == "lldp":
        body = {
            "tablesLastChangeTime": 0.0,
            "tablesAgeOuts": 0,
            "tablesInserts": len(views),
            "lldpNeighbors": [
                {
                    "port": p,
                    "neighborDevice": v["peer"][0],
                    "neighborPort": v["peer"][1],
                    "ttl": 120,
                }
                for p, v in sorted(views.items())
                if v["peer"] and v["oper"] == "up"
            ],
            "tablesDeletes": 0,
            "tablesDrops": 0,
        }
    else:
        body = {
            "interfaceStatuses": {
                p: {
                    "description": "",
                    "duplex": "duplexFull",
                    "bandwidth": int(v["speed"] * 1e9),
                    "interfaceType": "400GBASE-CR8",
                    "linkStatus": "connected" if v["oper"] == "up" else "notconnect",
                    "lineProtocolStatus": "up" if v["oper"] == "up" else "down",
                }
                for p, v in sorted(views.items())
            }
        }
    return json.dumps(body, indent=4) + "\n"


def _natural(name):
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]


# --- the switch itself: ``nos.py <switch>`` as an SSH ForceCommand ------------------------
# The lab (rackops.lab.switches) writes /etc/rackops-nos/switches.json: for every switch its
# NOS, the RoCE priority and its design ports, each the host-side Linux interface that plays
# it (a bridge port). Packets and bytes are the interface's real counters; errors, discards,
# pause frames and ECN marks are simulated (a veth has none): zero, unless a scenario fault
# of the fabric puts them on the port.

SWITCHES = "/etc/rackops-nos/switches.json"
SCENARIO = "/etc/rackops-hwsim/scenario.json"
STAT_NAMES = ("rx_packets", "tx_packets", "rx_bytes", "tx_bytes")


def stat(root, ifname, name):
    """An interface's statistics counter under ``root`` (a sysfs net directory); 0 if absent."""
    try:
        with open(os.path.join(root, ifname, "statistics", name)) as fh:
            return int(fh.read().strip() or 0)
    except (OSError, ValueError):
        return 0


def _stat(ifname, name):
    return stat("/sys/class/net", ifname, name)


def _operstate(ifname):
    try:
        with open("/sys/class/net/%s/operstate" % ifname) as fh:
            return fh.read().strip()
    except OSError:
        return "down"


def _faults():
    try:
        with open(SCENARIO) as fh:
            return (json.load(fh).get("fabric") or {}).get("faults") or []
    except (OSError, ValueError):
        return []


def port_counters(conf, port):
    ifname = conf["ports"][port]
    c = {
        "rx_pkts": _stat(ifname, "rx_packets"),
        "tx_pkts": _stat(ifname, "tx_packets"),
        "rx_bytes": _stat(ifname, "rx_bytes"),
        "tx_bytes": _stat(ifname, "tx_bytes"),
        "crc_errors": 0,
        "symbol_errors": 0,
        "fec_corrected": 0,
        "rx_discards": 0,
        "xmit_discards": 0,
        "pause_rx": 0,
        "pause_tx": 0,
        "ecn_marked": 0,
        "state": "U" if _operstate(ifname) in ("up", "unknown") else "D",
    }
    for f in _faults():
        if f.get("kind") == "isl_errors" and port in conf.get("isl_faulted", {}).get(
            f.get("switch"), []
        ):
            c["crc_errors"] += c["rx_pkts"] // max(1, int(f.get("per_packets") or 10))
    return c


def port_views(conf, switch, faults, rate_gbps=400):
    """port -> oper, speed, LLDP neighbour, with the fabric faults of this switch's ISLs:
    ``isl_rate`` halves both ends' speed; ``isl_miscabled`` moves the leaf's uplink into
    another port of its spine (the leaf hears that port; the designed one hears nobody)."""
    out = {}
    for p, ifname in conf["ports"].items():
        oper = "up" if _operstate(ifname) in ("up", "unknown") else "down"
        out[p] = {"oper": oper, "speed": rate_gbps, "peer": (conf.get("peers") or {}).get(p)}
    for f in faults:
        mine = conf.get("isl_faulted", {}).get(f.get("switch"), [])
        for p in mine:
            if f.get("kind") == "isl_rate":
                out[p]["speed"] = rate_gbps / 2
            elif f.get("kind") == "isl_miscabled" and f.get("spine_port"):
                peer = out[p]["peer"] or ["", ""]
                if switch == f.get("switch"):  # the leaf: its cable lands elsewhere
                    out[p]["peer"] = [peer[0], f["spine_port"]]
                else:  # the spine: the designed port is empty, the other one has the leaf
                    out[f["spine_port"]] = {"oper": "up", "speed": out[p]["speed"], "peer": peer}
                    out[p] = {"oper": "down", "speed": out[p]["speed"], "peer": None}
    return out


def _port_gbps():
    try:
        with open(SCENARIO) as fh:
            return int((json.load(fh).get("hardware") or {}).get("rate_gbps", 400))
    except (OSError, ValueError, TypeError):
        return 400


def _invalid(os_name, cmd):
    if os_name == "eos":
        sys.stdout.write("% Invalid input\n")
    elif os_name == "cumulus":
        sys.stderr.write("Error: '%s' is not a valid command\n" % cmd)
    else:
        sys.stderr.write('Error: No such command "%s".\n' % cmd)
    return 2


def run(switch, cmd):
    with open(SWITCHES) as fh:
        conf = json.load(fh)[switch]
    os_name, prio = conf["os"], conf["prio"]
    ports = {p: port_counters(conf, p) for p in conf["ports"]}
    words = cmd.split()
    if cmd.strip() in VIEWS.get(os_name, {}):
        views = port_views(conf, switch, _faults(), _port_gbps())
        sys.stdout.write(VIEWS[os_name][cmd.strip()](views))
        return 0
    if os_name == "sonic":
        table = {
            "show interfaces counters": lambda: sonic_interfaces(ports),
            "show interfaces counters fec-stats": lambda: sonic_fec(ports),
            "show pfc counters": lambda: sonic_pfc(ports, prio),
            "show queue wredcounters": lambda: sonic_wred(ports, prio),
        }
        if cmd.strip() in table:
            sys.stdout.write(table[cmd.strip()]())
            return 0
    elif os_name == "cumulus" and words[:3] == ["nv", "show", "interface"] and len(words) > 4:
        port = words[3]
        if port in ports and words[4:] == ["counters"]:
            sys.stdout.write(nvue_counters(ports[port]))
            return 0
        if port in ports and words[4:] == ["qos", "roce", "counters"]:
            sys.stdout.write(nvue_roce(ports[port]))
            return 0
    elif os_name == "eos":
        table = {
            "show interfaces counters errors | json": "errors",
            "show interfaces counters discards | json": "discards",
            "show priority-flow-control counters | json": "pfc",
            "show qos interfaces ecn counters queue | json": "ecn",
        }
        if cmd.strip() in table:
            sys.stdout.write(eos_json(ports, table[cmd.strip()], prio))
            return 0
    return _invalid(os_name, cmd)


MTU = 9216
VIEWS = {
    "sonic": {
        "show lldp table": sonic_lldp,
        "show interfaces status": lambda v: sonic_status(v, MTU),
    },
    "cumulus": {"nv show interface": lambda v: nvue_interfaces(v, MTU)},
    "eos": {
        "show lldp neighbors | json": lambda v: eos_ports(v, "lldp"),
        "show interfaces status | json": lambda v: eos_ports(v, "status"),
    },
}


if __name__ == "__main__":
    sys.exit(run(sys.argv[1], os.environ.get("SSH_ORIGINAL_COMMAND", "")))
