"""``python3 -m hwsim TOOL ARGS...``: run one simulated tool on this node."""

from __future__ import annotations

import os
import socket
import sys

from .ctk import nvidia_ctk
from .dcgm import dcgmi, dcgmproftester
from .fabric import iblinkinfo, ibnetdiscover
from .ibdiag import ibdiagnet
from .imex import nvidia_imex_ctl
from .kmsg import dmesg
from .nccl import nccl
from .node import PERF, Node, emit, load_scenario, tool_fault_gate
from .pci import dmidecode, lspci, mlxconfig
from .perftest import perftest
from .phy import ethtool, mlxlink, perfquery
from .rdma import ibstat, ibstatus, ibv_devinfo, mlnx_qos, ofed_info, show_gids
from .smi import nvidia_smi
from .tree import hw_tree, imex_tree

RDMA = {
    "ibstat": ibstat,
    "ibstatus": ibstatus,
    "ibv_devinfo": ibv_devinfo,
    "show_gids": show_gids,
    "ofed_info": ofed_info,
    "mlnx_qos": mlnx_qos,
    "perfquery": perfquery,
    "ethtool": ethtool,
    "mlxlink": mlxlink,
    "iblinkinfo": iblinkinfo,
    "ibnetdiscover": ibnetdiscover,
}
NCCL = (
    "all_reduce_perf",
    "all_gather_perf",
    "reduce_scatter_perf",
    "alltoall_perf",
    "sendrecv_perf",
    "broadcast_perf",
)
PCI = {"lspci": lspci, "mlxconfig": mlxconfig, "dmidecode": dmidecode}
PROFTESTER = ("dcgmproftester12", "dcgmproftester13")
TOOLS = (
    tuple(RDMA)
    + tuple(PCI)
    + PERF
    + NCCL
    + PROFTESTER
    + ("dcgmi", "nvidia-smi", "nvidia-ctk", "dmesg", "ibdiagnet", "nvidia-imex-ctl")
)


def main(argv):
    if argv and argv[0] in ("hw-tree", "imex-tree"):
        lay = hw_tree if argv[0] == "hw-tree" else imex_tree
        return lay(
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
    if tool in PCI:
        return PCI[tool](node, args)
    if tool in PERF:
        return perftest(node, tool, args)
    if tool in NCCL:
        return nccl(node, tool, args)
    if tool == "dcgmi":
        return dcgmi(node, args)
    if tool in PROFTESTER:
        return dcgmproftester(node, args, tool)
    if tool == "ibdiagnet":
        return ibdiagnet(node, args)
    if tool == "dmesg":
        return dmesg(node, args)
    if tool == "nvidia-ctk":
        return nvidia_ctk(node, args)
    if tool == "nvidia-imex-ctl":
        return nvidia_imex_ctl(node, args)
    return nvidia_smi(node, args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
