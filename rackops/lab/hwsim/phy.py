"""The physical layer of the simulated HCAs: ``perfquery``, ``ethtool -S`` / ``-m`` and
``mlxlink``, in the layouts the real tools print (rdma-core v29+ perfquery with the
additional extended counters; mlx5 ethtool counters; ethtool's CMIS module decode; MFT 4.3x
mlxlink sections), over the counters that ``counters`` keeps.

Faults shown here: ``symbol_errors``/``ber``/``flap`` (through the counters), ``optic_power``
(one lane's rx power at ``rx_power_dbm``, default -14 dBm, below the module's low alarm),
``hca_port`` (state), and an InfiniBand-only tool on an Ethernet port fails as the real
one does.
"""

from __future__ import annotations

import math
import os
import sys

from . import counters

# The module in every port: a 400G OSFP SR4 optic with its own alarm/warning thresholds
MODULE = {
    "vendor": "NVIDIA",
    "pn": "MMA4Z00-NS400",
    "rx_dbm": (0.84, 0.91, 0.77, 0.88),
    "tx_dbm": (1.52, 1.47, 1.61, 1.55),
    "bias_ma": (7.412, 7.398, 7.420, 7.405),
    "temp_c": 44.5,
    "rx_window": (-10.41, -7.41, 3.0, 6.0),  # low alarm, low warning, high warning, high alarm
    "tx_window": (-8.51, -5.51, 4.0, 5.0),
    "bias_window": (2.0, 3.0, 13.0, 15.0),
    "temp_window": (-5.0, 0.0, 70.0, 75.0),
    "volt_window": (2.97, 3.135, 3.465, 3.63),
}


def _dev_index(node, dev):
    return node.hcas().index(dev) if dev in node.hcas() else None


def _lanes(node, dev):
    """(rx dBm, tx dBm, bias mA) per lane of this port's module, with optic faults."""
    rx = list(MODULE["rx_dbm"])
    for f in node.faults_of("optic_power"):
        if f.get("hca") == dev:
            lane = int(f.get("lane") or 1)
            rx[lane - 1] = float(f.get("rx_power_dbm", -14.0))
    return rx, list(MODULE["tx_dbm"]), list(MODULE["bias_ma"])


# ------------------------------------------------------------------ perfquery


def _dots(name, value):
    return "%s:%s%s\n" % (name, "." * (32 - len(name)), value)


def perfquery(node, args):
    """``perfquery [-x] [-C dev] [-P port]``: PortCounters(Extended) of one local port;
    ``perfquery -x -l LID``: every port of the switch with that LID (the fabric sweep)."""
    dev = args[args.index("-C") + 1] if "-C" in args else node.hcas()[0]
    port = int(args[args.index("-P") + 1]) if "-P" in args else 1
    i = _dev_index(node, dev)
    if i is None or node.hw["link_layer"] == "Ethernet":
        # a RoCE port has no subnet manager agent to answer PerfMgt MADs
        sys.stderr.write(
            "ibwarn: [%d] mad_rpc_open_port: client_register for mgmt 1 failed\n" % os.getpid()
        )
        sys.stdout.write(
            "perfquery: iberror: failed: Failed to open '%s' port '%d'\n" % (dev, port)
        )
        sys.exit(255)
    lids = [
        a for k, a in enumerate(args) if a.isdigit() and args[k - 1 : k] not in (["-C"], ["-P"])
    ]
    if lids and "-l" in args:
        return _switch_ports(node, int(lids[0]), "-x" in args)
    c = counters.read(node, dev)
    state = node.port(dev)[0]
    return _block(node.lid(i) if state == "Active" else 0, port, c, "-x" in args)


def _switch_ports(node, lid, ext):
    from .ibdiag import switch_counters, switches

    names = switches(node.scenario)
    if not 2 <= lid < 2 + len(names):
        sys.stderr.write(
            "ibwarn: [%d] _do_madrpc: recv failed: Connection timed out\n"
            "perfquery: iberror: failed: perfquery: Failed to query PortInfo of lid %d\n"
            % (os.getpid(), lid)
        )
        sys.exit(255)
    return "".join(
        _block(lid, port, c, ext)
        for port, c in sorted(switch_counters(node.scenario, names[lid - 2]).items())
    )


def _block(lid, port, c, ext):
    """One port's PortCounters (``-x``: PortCountersExtended) block."""
    if ext:
        out = "# Port extended counters: Lid %d port %d (CapMask: 0x5A00 CapMask2: 0x0000002)\n" % (
            lid,
            port,
        )
    else:
        out = "# Port counters: Lid %d port %d (CapMask: 0x5A00)\n" % (lid, port)
    out += _dots("PortSelect", port) + _dots("CounterSelect", "0x0000")
    words_tx, words_rx = c["tx_bytes"] // 4, c["rx_bytes"] // 4  # octets divided by 4
    errors = [
        ("SymbolErrorCounter", c["symbol_errors"], 0xFFFF),
        ("LinkErrorRecoveryCounter", c["link_recovery"], 0xFF),
        ("LinkDownedCounter", c["link_downed"], 0xFF),
        ("PortRcvErrors", c["rcv_errors"], 0xFFFF),
        ("PortRcvRemotePhysicalErrors", 0, 0xFFFF),
        ("PortRcvSwitchRelayErrors", 0, 0xFFFF),
        ("PortXmitDiscards", c["xmit_discards"], 0xFFFF),
        ("PortXmitConstraintErrors", 0, 0xFF),
        ("PortRcvConstraintErrors", 0, 0xFF),
    ]
    tail = [
        ("LocalLinkIntegrityErrors", 0, 0xF),
        ("ExcessiveBufferOverrunErrors", 0, 0xF),
    ]
    if ext:
        for name, v in (
            ("PortXmitData", words_tx),
            ("PortRcvData", words_rx),
            ("PortXmitPkts", c["tx_pkts"]),
            ("PortRcvPkts", c["rx_pkts"]),
            ("PortUnicastXmitPkts", c["tx_pkts"]),
            ("PortUnicastRcvPkts", c["rx_pkts"]),
            ("PortMulticastXmitPkts", 0),
            ("PortMulticastRcvPkts", 0),
        ):
            out += _dots(name, v)
        out += _dots("CounterSelect2", "0x00000000")
        for name, v, _ in errors + tail:
            out += _dots(name, v)
        out += _dots("VL15Dropped", 0) + _dots("PortXmitWait", c["xmit_wait"])
        out += _dots("QP1Dropped", 0)
    else:  # 4-, 8-, 16- and 32-bit counters stick at their maximum
        for name, v, top in errors:
            out += _dots(name, min(v, top))
        out += _dots("CounterSelect2", "0x00")
        for name, v, top in tail:
            out += _dots(name, min(v, top))
        out += _dots("QP1Dropped", 0) + _dots("VL15Dropped", 0)
        for name, v in (
            ("PortXmitData", words_tx),
            ("PortRcvData", words_rx),
            ("PortXmitPkts", c["tx_pkts"]),
            ("PortRcvPkts", c["rx_pkts"]),
            ("PortXmitWait", c["xmit_wait"]),
        ):
            out += _dots(name, min(v, 0xFFFFFFFF))
    return out


# ------------------------------------------------------------------ ethtool


def ethtool(node, args):
    """``ethtool -S IF`` (mlx5 counters) and ``ethtool -m IF`` (CMIS module decode)."""
    opts = [a for a in args if a.startswith("-")]
    names = [a for a in args if not a.startswith("-")]
    netdevs = [node.netdev(i) for i in range(node.hw["hcas"])]
    if not names:
        sys.stderr.write(
            "ethtool: bad command line argument(s)\nFor more information run ethtool -h\n"
        )
        sys.exit(1)
    if names[0] not in netdevs:
        sys.stderr.write(
            "netlink error: no device matches name (offset 24)\nnetlink error: No such device\n"
        )
        sys.exit(1)
    i = netdevs.index(names[0])
    dev = node.hcas()[i]
    if "-S" in opts or "--statistics" in opts:
        return _stats(node, dev)
    if "-m" in opts or "--module-info" in opts or "--dump-module-eeprom" in opts:
        return _module(node, dev)
    sys.stderr.write("ethtool (lab): only -S and -m are simulated\n")
    sys.exit(1)


def _pfc_priorities(node, netdev):
    from .rdma import _qos_state

    state, _ = _qos_state(netdev)
    return [p for p, on in enumerate(state.get("pfc", [0] * 8)) if on]


def _stats(node, dev):
    c = counters.read(node, dev)
    i = node.hcas().index(dev)
    rows = [
        ("rx_packets", c["rx_pkts"]),
        ("rx_bytes", c["rx_bytes"]),
        ("tx_packets", c["tx_pkts"]),
        ("tx_bytes", c["tx_bytes"]),
        ("rx_csum_complete", c["rx_pkts"]),
        ("rx_out_of_buffer", c["out_of_buffer"]),
        ("rx_if_down_packets", 0),
        ("rx_vport_unicast_packets", c["rx_pkts"]),
        ("rx_vport_unicast_bytes", c["rx_bytes"]),
        ("tx_vport_unicast_packets", c["tx_pkts"]),
        ("tx_vport_unicast_bytes", c["tx_bytes"]),
        ("rx_vport_rdma_unicast_packets", c["rx_pkts"]),
        ("rx_vport_rdma_unicast_bytes", c["rx_bytes"]),
        ("tx_vport_rdma_unicast_packets", c["tx_pkts"]),
        ("tx_vport_rdma_unicast_bytes", c["tx_bytes"]),
        ("tx_packets_phy", c["tx_pkts"]),
        ("rx_packets_phy", c["rx_pkts"]),
        ("rx_crc_errors_phy", c["crc_errors"]),
        ("tx_bytes_phy", c["tx_bytes"]),
        ("rx_bytes_phy", c["rx_bytes"]),
        ("tx_multicast_phy", 0),
        ("rx_multicast_phy", 0),
        ("rx_in_range_len_errors_phy", 0),
        ("rx_symbol_err_phy", 0),
        ("rx_discards_phy", c["rx_discards"]),
        ("tx_discards_phy", c["xmit_discards"]),
        ("tx_errors_phy", 0),
        ("rx_undersize_pkts_phy", 0),
        ("rx_oversize_pkts_phy", 0),
        ("link_down_events_phy", c["link_downed"]),
        ("rx_pcs_symbol_err_phy", c["symbol_errors"]),
        ("rx_corrected_bits_phy", c["corrected_bits"]),
    ]
    per_lane = c["corrected_bits"] // 4
    rows += [("rx_err_lane_%d_phy" % n, per_lane) for n in range(4)]
    rows += [("rx_buffer_passed_thres_phy", 0)]
    pfc = _pfc_priorities(node, node.netdev(i))
    for p in range(8):
        on = p in pfc
        rows += [
            ("rx_prio%d_bytes" % p, c["rx_bytes"] if p == 3 else 0),
            ("rx_prio%d_packets" % p, c["rx_pkts"] if p == 3 else 0),
            ("rx_prio%d_discards" % p, 0),
            ("tx_prio%d_bytes" % p, c["tx_bytes"] if p == 3 else 0),
            ("tx_prio%d_packets" % p, c["tx_pkts"] if p == 3 else 0),
        ]
        if on:  # mlx5 prints the pause counters only for priorities with PFC enabled
            rows += [
                ("rx_prio%d_pause" % p, c["pause_rx"]),
                ("rx_prio%d_pause_duration" % p, c["pause_rx_us"]),
                ("tx_prio%d_pause" % p, c["pause_tx"]),
                ("tx_prio%d_pause_duration" % p, c["pause_tx_us"]),
                ("rx_prio%d_pause_transition" % p, c["pause_rx"]),
            ]
    rows += [("module_unplug", 0), ("module_bus_stuck", 0), ("module_high_temp", 0)]
    return "NIC statistics:\n" + "".join("     %s: %d\n" % r for r in rows)


def _mw(dbm):
    return 10 ** (dbm / 10.0)


def _power(label, dbm):
    return "\t%-41s : %.4f mW / %.2f dBm\n" % (label, _mw(dbm), dbm)


def _module(node, dev):
    i = node.hcas().index(dev)
    rx, tx, bias = _lanes(node, dev)
    m = MODULE
    out = "\t%-41s : 0x19 (OSFP 8X Pluggable Transceiver)\n" % "Identifier"
    out += "\t%-41s : 0x00\n" % "Power class"
    out += "\t%-41s : 9.50W\n" % "Max power"
    out += "\t%-41s : 0x23 (No separable connector)\n" % "Connector"
    out += "\t%-41s : 0x0e (MPO 1x12)\n" % "Connector"
    out += "\t%-41s : 850.000nm\n" % "Laser wavelength"
    out += "\t%-41s : 0x00 (850 nm VCSEL)\n" % "Transmitter technology"
    out += "\t%-41s : %s\n" % ("Vendor name", m["vendor"])
    out += "\t%-41s : 48:b0:2d\n" % "Vendor OUI"
    out += "\t%-41s : %s\n" % ("Vendor PN", m["pn"])
    out += "\t%-41s : A3\n" % "Vendor rev"
    out += "\t%-41s : MT24%02d%02dFT%05d\n" % ("Vendor SN", node.index, i, node.index * 100 + i)
    out += "\t%-41s : 241015\n" % "Date code"
    out += "\t%-41s : 5.0\n" % "Revision compliance"
    out += "\t%-41s : 0x03 (ModuleReady)\n" % "Module State"
    t = m["temp_c"]
    out += "\t%-41s : %.2f degrees C / %.2f degrees F\n" % ("Module temperature", t, t * 1.8 + 32)
    out += "\t%-41s : 3.2917 V\n" % "Module voltage"
    for n, v in enumerate(bias, 1):
        out += "\t%-41s : %.3f mA\n" % ("Laser tx bias current (Channel %d)" % n, v)
    for n, v in enumerate(tx, 1):
        out += _power("Transmit avg optical power (Channel %d)" % n, v)
    for n, v in enumerate(rx, 1):
        out += _power("Rcvr signal avg optical power (Channel %d)" % n, v)
    lo_a, lo_w, hi_w, hi_a = m["rx_window"]
    for n, v in enumerate(rx, 1):
        for kind, on in (
            ("high alarm  ", v > hi_a),
            ("low alarm   ", v < lo_a),
            ("high warning", v > hi_w),
            ("low warning ", v < lo_w),
        ):
            out += "\t%-41s : %s\n" % (
                "Laser rx power %s (Channel %d)" % (kind, n),
                "On" if on else "Off",
            )
    for key, label, unit in (
        ("bias_window", "Laser bias current", "mA"),
        ("tx_window", "Laser output power", "dBm"),
        ("temp_window", "Module temperature", "C"),
        ("volt_window", "Module voltage", "V"),
        ("rx_window", "Laser rx power", "dBm"),
    ):
        lo_a, lo_w, hi_w, hi_a = m[key]
        for name, v in (
            ("high alarm", hi_a),
            ("low alarm", lo_a),
            ("high warning", hi_w),
            ("low warning", lo_w),
        ):
            label_t = "%s %s threshold" % (label, name)
            if unit == "dBm":
                out += _power(label_t, v)
            elif unit == "V":
                out += "\t%-41s : %.4f V\n" % (label_t, v)
            elif unit == "C":
                out += "\t%-41s : %.2f degrees C / %.2f degrees F\n" % (label_t, v, v * 1.8 + 32)
            else:
                out += "\t%-41s : %.3f mA\n" % (label_t, v)
    return out


# ------------------------------------------------------------------ mlxlink


def _rec(key, value):
    return "%-35s: %s\n" % (key, value)


def _ber(x):
    """mlxlink prints a BER as <coefficient>E-<magnitude> (1.5e-254 → 15E-255)."""
    if x <= 0:
        return "15E-255"
    mag = -math.floor(math.log10(x))
    coef = round(x * 10**mag)
    if coef >= 10:
        coef, mag = coef // 10, mag - 1
    return "%dE-%d" % (coef, mag)


def mlxlink(node, args):
    """``mlxlink -d DEV [-m] [-c] [-e]``: operational info, module, counters and BER."""
    if "-d" not in args:
        sys.stderr.write("-E- Please provide a device name using -d\n")
        sys.exit(1)
    dev = args[args.index("-d") + 1]
    if dev not in node.hcas():
        sys.stderr.write("-E- Failed to open device: %s, No such device\n" % dev)
        sys.exit(1)
    eth = node.hw["link_layer"] == "Ethernet"
    state, phys, rate, width = node.port(dev)
    c = counters.read(node, dev)
    up = state == "Active"
    speed = (
        ("%dG" % rate) if eth else {400: "IB-NDR", 200: "IB-HDR", 100: "IB-EDR"}.get(rate, "IB-NDR")
    )
    lanes = int(str(width).rstrip("Xx") or 4)
    out = "\nOperational Info\n----------------\n"
    out += _rec("State", "Active" if up else "Disable")
    out += _rec("Physical state", "LinkUp" if up else phys)
    out += _rec("Speed", speed if up else "N/A")
    out += _rec("Width", ("%dx" % lanes) if up else "N/A")
    out += _rec("FEC", "Standard_RS-FEC - (544,514)" if eth else "Standard LL RS-FEC - RS(271,257)")
    out += _rec("Loopback Mode", "No Loopback")
    out += _rec("Auto Negotiation", "ON")
    out += "\nSupported Info\n--------------\n"
    if eth:
        out += _rec(
            "Enabled Link Speed (Ext.)",
            "0x00003ff2 (400G_4X,200G_2X,200G_4X,100G_1X,100G_2X,50G_1X,40G,25G,10G,1G)",
        )
        out += _rec(
            "Supported Cable Speed (Ext.)",
            "0x000037f2 (400G_4X,200G_4X,100G_2X,50G_1X,40G,25G,10G,1G)",
        )
    else:
        out += _rec("Enabled Link Speed", "0x000000f1 (NDR,HDR,EDR,FDR,SDR)")
        out += _rec("Supported Cable Speed", "0x000000f1 (NDR,HDR,EDR,FDR,SDR)")
    out += "\nTroubleshooting Info\n--------------------\n"
    out += _rec("Status Opcode", 0 if up else 1)
    out += _rec("Group Opcode", "N/A")
    out += _rec("Recommendation", "No issue was observed" if up else "Check the cable")
    out += "\nTool Information\n----------------\n"
    out += _rec("Firmware Version", node.hca_fw(dev))
    out += _rec("amBER Version", "4.6")
    out += _rec("MFT Version", "mft 4.33.0-169")
    if "-m" in args or "--show_module" in args:
        out += _module_info(node, dev)
    if "-c" in args:
        bits = 8 * (c["tx_bytes"] + c["rx_bytes"]) or 1
        raw = counters.raw_ber(node, dev) if c["corrected_bits"] else 0
        eff = c["symbol_errors"] / float(bits) if c["symbol_errors"] else 0
        per_lane = ",".join(str(c["corrected_bits"] // lanes) for _ in range(lanes))
        out += "\nPhysical Counters and BER Info\n------------------------------\n"
        out += _rec("Time Since Last Clear [Min]", "%.1f" % 2.5)
        if not eth:
            out += _rec("Symbol Errors", c["symbol_errors"])
            out += _rec("Symbol BER", _ber(eff))
        out += _rec("Effective Physical Errors", c["symbol_errors"])
        out += _rec("Effective Physical BER", _ber(eff))
        out += _rec("Raw Physical Errors Per Lane", per_lane)
        if eth:
            out += _rec("Link Down Counter", c["link_downed"])
            out += _rec("Link Error Recovery Counter", c["link_recovery"])
        out += _rec("Raw Physical BER", _ber(raw))
        if not eth:
            out += _rec("Link Down Counter", c["link_downed"])
            out += _rec("Link Error Recovery Counter", c["link_recovery"])
    if "-e" in args:
        out += "\nEYE Opening Info (PAM4)\n-----------------------\n"
        out += _rec("Physical Grade", ",".join("8240" for _ in range(lanes)))
        out += _rec("Height Eye Opening [mV]", ",".join("112,118,115" for _ in range(1)) + ",113")
        out += _rec("Phase  Eye Opening [psec]", ",".join("14" for _ in range(lanes)))
    return out


def _module_info(node, dev):
    """mlxlink -m: the module's section."""
    out = ""
    rx, tx, bias = _lanes(node, dev)
    m = MODULE

    def lane_values(vals, window, fmt="%.3f"):
        return "%s [%s..%s]" % (",".join(fmt % v for v in vals), _g(window[0]), _g(window[3]))

    out += "\nModule Info\n-----------\n"
    out += _rec("Identifier", "OSFP")
    out += _rec("Compliance", "400GBASE-SR4")
    out += _rec("Cable Technology", "850 nm VCSEL")
    out += _rec("Cable Type", "Optical Module (separated)")
    out += _rec("OUI", "Mellanox")
    out += _rec("Vendor Name", m["vendor"])
    out += _rec("Vendor Part Number", m["pn"])
    out += _rec(
        "Vendor Serial Number",
        "MT24%02d%02dFT%05d"
        % (node.index, node.hcas().index(dev), node.index * 100 + node.hcas().index(dev)),
    )
    out += _rec("Rev", "A3")
    out += _rec("Wavelength [nm]", "850")
    out += _rec("Transfer Distance [m]", "50")
    out += _rec("Digital Diagnostic Monitoring", "Yes")
    out += _rec(
        "Temperature [C]",
        "%d [%s..%s]" % (round(m["temp_c"]), _g(m["temp_window"][0]), _g(m["temp_window"][3])),
    )
    out += _rec("Voltage [mV]", "3291.7 [2970..3630]")
    out += _rec("Bias Current [mA]", lane_values(bias, m["bias_window"]))
    out += _rec("Rx Power Current [dBm]", lane_values(rx, m["rx_window"]))
    out += _rec("Tx Power Current [dBm]", lane_values(tx, m["tx_window"]))
    return out


def _g(x):
    return ("%g" % x) if x != int(x) else "%d" % int(x)
