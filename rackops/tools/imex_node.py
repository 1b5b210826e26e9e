"""imex-node: one tray's own IMEX (GB200/GB300 NVL72) — its daemon (``nvidia-imex-ctl -q``),
the IMEX channel class and channel 0 (/proc/devices, /dev/nvidia-caps-imex-channels), and
its nodes_config.cfg, in one read. Run only on trays of a domain (``Node.nvlink``)."""

from __future__ import annotations

from typing import Any

from rackops.checks.imex import check_imex_node
from rackops.findings import Finding
from rackops.inventory.model import Cluster
from rackops.parsers.imex_node import HEADER, parse_imex_node
from rackops.suites import Suite
from rackops.tools.base import Binary, Context, NodeCheck, Tool
from rackops.tools.nvidia_imex import IMEX_CTL

# each part as the real command prints it; the devices and channels under the node's
# rackops_hw_root (the lab's simulated /proc and /dev; "" on a real tray)
SCRIPT = (
    'r=$1; echo "' + HEADER + '"\n'
    'echo "== ctl"; nvidia-imex-ctl -q 2>&1\n'
    'echo "== devices"; grep nvidia "$r/proc/devices" 2>&1\n'
    'echo "== channels"; ls -l "$r/dev/nvidia-caps-imex-channels/" 2>&1\n'
    'echo "== nodes_config"; cat /etc/nvidia-imex/nodes_config.cfg 2>&1\n'
    'echo "== end"\n'
)


def plan(suite: Suite, cluster: Cluster) -> list[NodeCheck]:
    if not suite.checks.gpu_inventory or not any(n.nvlink for n in cluster.nodes):
        return []
    argv = ("sh", "-c", SCRIPT, "imex-node", "{hw_root}")
    return [NodeCheck("imex-node", "imex-node", argv, 30, 1)]


def check(parsed: Any, ctx: Context, node: str | None) -> list[Finding]:
    return check_imex_node(parsed, node=ctx.node, cluster=ctx.cluster)


TOOL = Tool(
    "imex-node",
    "a tray's own IMEX: daemon READY, channel 0, nodes_config.cfg (GB200/GB300 NVL72)",
    parse=parse_imex_node,
    check=check,
    plan=plan,
    order=86,
    binaries=(IMEX_CTL, Binary("ls", "coreutils", simulated=False)),
    nvlink_domain=True,
)
