"""The simulated sysfs and procfs of a node (laid out once, at package install)."""

from __future__ import annotations

import os
import stat
import sys

from .node import STATE_DIR
from .pci import hca_bdf

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
        pci = "sys/devices/pci0000:00/%s" % hca_bdf(i)  # the HCA's PCI function
        put(pci + "/numa_node", numa)
        link = os.path.join(root, "sys/class/infiniband/mlx5_%d/device" % i)
        if not os.path.lexists(link):
            os.makedirs(os.path.dirname(link), exist_ok=True)
            os.symlink(os.path.relpath(os.path.join(root, pci), os.path.dirname(link)), link)
        put("sys/class/infiniband/mlx5_%d/tc/1/traffic_class" % i, 0)
        for counter in ("np_cnp_sent", "rp_cnp_handled", "out_of_buffer"):
            put("sys/class/infiniband/mlx5_%d/ports/1/hw_counters/%s" % (i, counter), 0)
    return 0


# the IMEX channel class's major as NVIDIA's IMEX guide shows it (it differs between nodes)
IMEX_MAJOR = 234


def imex_tree(node, args):
    """What a GB200 tray's driver lays out for IMEX (run by the stand-in nvidia-imex package
    at install): /proc/devices with the driver's character devices and the IMEX channel
    class (NVIDIA/nvidia-modprobe#9's lines), and channel 0 at that class's major, minor 0,
    as NVreg_CreateImexChannel0=1 makes it (NVIDIA's IMEX guide). A container that may not
    make device nodes gets none: rackops then names the missing channel, as on a real tray."""
    root = args[0] if args else os.path.join(STATE_DIR, "root")
    devices = os.path.join(root, "proc", "devices")
    os.makedirs(os.path.dirname(devices), exist_ok=True)
    if not os.path.exists(devices):
        with open(devices, "w", encoding="ascii") as fh:
            fh.write("195 nvidia\n195 nvidiactl\n%d nvidia-caps-imex-channels\n" % IMEX_MAJOR)
    chan = os.path.join(root, "dev", "nvidia-caps-imex-channels", "channel0")
    os.makedirs(os.path.dirname(chan), exist_ok=True)
    if not os.path.lexists(chan):
        try:
            os.mknod(chan, 0o666 | stat.S_IFCHR, os.makedev(IMEX_MAJOR, 0))
            os.chmod(chan, 0o666)
        except OSError as exc:
            sys.stderr.write("imex-tree: no channel0 (%s)\n" % exc)
    return 0
