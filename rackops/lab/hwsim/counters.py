"""Port counters of the simulated HCAs: they grow with the traffic perftest moves.

One JSON file in the state directory holds, per node and HCA, the counters a real port
keeps (bytes and packets both ways, symbol/CRC/receive errors, corrected bits, link
downed and recovery events, discards, PFC pause frames and their duration, CNPs). Every
perftest run adds what it moved to the counters of its own HCA (``carry``), and the
scenario's physical-layer faults add their errors in proportion to it:

* ``symbol_errors`` (``ber``, default 1e-9): uncorrectable symbol errors per bit received
  (at least one per test that brings the port any traffic), with the CRC/receive errors they
  cause;
* ``ber`` (``ber``, default 1e-3): raw errors that FEC corrects, per bit received (corrected
  bits grow, mlxlink's raw BER shows it; nothing uncorrectable);
* ``flap`` (``count``, default 1): the link goes down and retrains that many times per run.

A fresh port starts from a baseline that a real one has after bring-up (the link went down
once while training), so absolute values are not zero and only the delta says what
happened under load. ``RACKOPS_HWSIM_STATE`` is per target in the lab; tests may share one
directory between nodes, so the file is keyed by node and updated under a lock.
"""

from __future__ import annotations

import fcntl
import json
import os

from .node import STATE_DIR

BASELINE = {
    "tx_bytes": 0,
    "rx_bytes": 0,
    "tx_pkts": 0,
    "rx_pkts": 0,
    "symbol_errors": 0,
    "corrected_bits": 0,
    "crc_errors": 0,
    "rcv_errors": 0,
    "link_downed": 1,  # the link went down once while it trained at bring-up
    "link_recovery": 0,
    "xmit_discards": 0,
    "rx_discards": 0,
    "out_of_buffer": 0,
    "pause_rx": 0,
    "pause_tx": 0,
    "pause_rx_us": 0,
    "pause_tx_us": 0,
    "xmit_wait": 0,
    "cnp_sent": 0,
    "cnp_handled": 0,
}
HEALTHY_RAW_BER = 2e-10  # pre-FEC BER of a clean PAM4 link (corrected bits grow at this rate)
MTU_BYTES = 4096


def _path():
    return os.path.join(STATE_DIR, "counters.json")


def _locked(update):
    os.makedirs(STATE_DIR, exist_ok=True)
    with open(_path() + ".lock", "a+", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            with open(_path(), encoding="utf-8") as fh:
                data = json.load(fh)
        except (OSError, ValueError):
            data = {}
        result = update(data)
        tmp = _path() + ".tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(data, fh)
        os.replace(tmp, _path())
        return result


def read(node, dev):
    """The counters of one HCA port now (baseline for a port that never moved traffic)."""

    def get(data):
        return dict(BASELINE, **data.get(node.name, {}).get(dev, {}))

    try:
        return _locked(get)
    except OSError:  # a user who may not write the state directory still reads the counters
        try:
            with open(_path(), encoding="utf-8") as fh:
                return get(json.load(fh))
        except (OSError, ValueError):
            return get({})


def carry(node, dev, tx_bytes, rx_bytes):
    """Add one test's traffic (and the faults it reveals) to this node's HCA ``dev``."""
    tx_bytes, rx_bytes = int(tx_bytes), int(rx_bytes)
    bits = 8 * rx_bytes  # a receiver counts (and its FEC corrects) what it receives
    pkts_tx, pkts_rx = tx_bytes // MTU_BYTES + 1, rx_bytes // MTU_BYTES + 1

    def add(data):
        c = dict(BASELINE, **data.setdefault(node.name, {}).get(dev, {}))
        c["tx_bytes"] += tx_bytes
        c["rx_bytes"] += rx_bytes
        c["tx_pkts"] += pkts_tx
        c["rx_pkts"] += pkts_rx
        c["corrected_bits"] += int(bits * HEALTHY_RAW_BER)
        # lossless traffic between two idle ends: a few pause frames, no storm
        c["pause_tx"] += pkts_tx // 200000
        c["pause_rx"] += pkts_rx // 200000
        c["pause_tx_us"] += pkts_tx // 200000
        c["pause_rx_us"] += pkts_rx // 200000
        c["cnp_sent"] += pkts_rx // 500000
        c["cnp_handled"] += pkts_tx // 500000
        for f in node.faults_of("symbol_errors"):
            if f.get("hca") == dev and bits:
                errs = max(1, int(bits * float(f.get("ber") or 1e-9)))
                c["symbol_errors"] += errs
                c["crc_errors"] += max(1, errs // 4)
                c["rcv_errors"] += max(1, errs // 4)
        for f in node.faults_of("ber"):
            if f.get("hca") == dev:
                c["corrected_bits"] += int(bits * float(f.get("ber") or 1e-3))
        for f in node.faults_of("flap"):
            if f.get("hca") == dev:
                c["link_downed"] += int(f.get("count") or 1)
                c["link_recovery"] += int(f.get("count") or 1)
        data[node.name][dev] = c
        return c

    try:
        c = _locked(add)
        _hw_counters(node, dev, c)
    except OSError:
        # the port counts in the hardware whoever runs the test; here, a user who may not
        # write the state directory (perftest needs no root) leaves them as they were
        return None
    return c


def raw_ber(node, dev):
    """The raw (pre-FEC) BER mlxlink reports for this port."""
    for f in node.faults_of("ber"):
        if f.get("hca") == dev:
            return float(f.get("ber") or 1e-3)
    return HEALTHY_RAW_BER


def _hw_counters(node, dev, c):
    """The RDMA device's hw_counters (CNPs, out_of_buffer) in the simulated sysfs, where the
    node has one (rackops_hw_root in the lab)."""
    base = os.path.join(STATE_DIR, "root", "sys", "class", "infiniband", dev, "ports", "1")
    if not os.path.isdir(os.path.join(STATE_DIR, "root", "sys")):
        return
    d = os.path.join(base, "hw_counters")
    os.makedirs(d, exist_ok=True)
    for name, key in (
        ("np_cnp_sent", "cnp_sent"),
        ("rp_cnp_handled", "cnp_handled"),
        ("out_of_buffer", "out_of_buffer"),
    ):
        with open(os.path.join(d, name), "w", encoding="ascii") as fh:
            fh.write("%d\n" % c[key])
