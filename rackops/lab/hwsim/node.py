"""One simulated node: the scenario it reads, its hardware facts and faults, and how a
tool's output leaves it (fault gates, garbling)."""

from __future__ import annotations

import json
import os
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
PERF = ("ib_write_bw", "ib_read_bw", "ib_send_bw", "ib_write_lat", "ib_read_lat", "ib_send_lat")

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


# a GB200 compute tray (hardware nvlink_domain): what its real nvidia-smi -q -x prints
# (tests/fixtures/nvidia-smi-xml/gb200x4-580-real.txt, 580.173.02) and the public all_reduce
# figures of one tray (679.61 GB/s at 8 GB, Azure, NCCL 2.25.1) and of a 72-GPU domain over
# MNNVL (834.57 GB/s at 8 GiB, coreweave/nccl-tests PR #43); a scenario's values win
TRAY_HW = {
    "gpus": 4,
    "hcas": 4,
    "gpu_model": "NVIDIA GB200",
    "memory_mib": 189471,
    "nvlink_links": 18,
    "nvlink_link_gbs": 53.125,
    "nccl_single_busbw_gbs": 679.61,
    "nccl_mnnvl_busbw_gbs": 834.57,
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
        spec = scenario.get("nodes", {}).get(name, {})
        given = dict(scenario.get("hardware", {}))
        given.update(spec.get("hardware", {}))
        if given.get("nvlink_domain"):  # a GB200 tray unless the scenario says otherwise
            self.hw.update(TRAY_HW)
        self.hw.update(given)
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

    def hca_fw(self, dev):
        """The HCA's firmware, after an ``hca_firmware`` fault (another version)."""
        f = self.fault("hca_firmware", hca=dev)
        return f.get("version", "28.39.1002") if f else self.hw.get("hca_fw", "28.41.1000")

    def netdev(self, i):
        return "enp%ds0np0" % (24 + 17 * i)

    def port(self, dev):
        """state, physical state, rate (Gb/s), width of one HCA port."""
        f = self.fault("hca_port", hca=dev)
        if f and f.get("settle_s") is not None and self._settled(dev, float(f["settle_s"])):
            f = None  # a link that trained late: Active once settle_s passed since first seen
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

    def _settled(self, dev, settle_s):
        """Whether ``settle_s`` seconds passed since this port was first looked at."""
        path = os.path.join(STATE_DIR, "first-look-%s-%s" % (self.name, dev))
        try:
            with open(path, encoding="ascii") as fh:
                first = float(fh.read())
        except (OSError, ValueError):
            os.makedirs(STATE_DIR, exist_ok=True)
            first = time.time()
            with open(path, "w", encoding="ascii") as fh:
                fh.write("%f" % first)
        return time.time() - first >= settle_s

    def guid(self, i, k=0):
        # unique to the node for 65,535 nodes (the 4,096-node synthetic fabric too)
        return "a088c203%02x%02x%02x%02x" % ((self.index >> 8) & 0xFF, self.index & 0xFF, i, k)

    def lid(self, i):
        """Unicast LIDs above the switches' (2 + their index) and below 0xC000 (the
        multicast range) for 4,096 nodes of 8 HCAs, as an SM hands them out."""
        if self.hw["link_layer"] == "Ethernet":
            return 0
        return 0x800 + (self.index - 1) * self.hw["hcas"] + i

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
