"""mlxconfig -d DEV q: an HCA's firmware configuration. Compared across the fleet
(``rackops/fleet``); on its own, a port's LINK_TYPE must be the fabric's."""

from __future__ import annotations

from typing import Any

from rackops.findings import Finding, Status, Subject
from rackops.inventory.model import Cluster
from rackops.parsers.mlxconfig import canonical, parse_mlxconfig
from rackops.suites import Suite
from rackops.tools._common import not_whole
from rackops.tools.base import Binary, Context, FactSink, NodeCheck, Tool

# the settings read (mlxconfig -d DEV query KEY...) and compared across the fleet
MLXCONFIG_KEYS = (
    "ATS_ENABLED",
    "ADVANCED_PCI_SETTINGS",
    "MAX_ACC_OUT_READ",
    "PCI_WR_ORDERING",
    "P2P_ORDERING_MODE",
    "PCI_ATOMIC_MODE",
    "LINK_TYPE_P1",
    "LINK_TYPE_P2",
    "SRIOV_EN",
    "NUM_OF_VFS",
    "ROCE_CONTROL",
    "ROCE_CC_PRIO_MASK_P1",
    "ROCE_CC_PRIO_MASK_P2",
    "CNP_DSCP_P1",
    "CNP_802P_PRIO_P1",
)


def plan(suite: Suite, cluster: Cluster) -> list[NodeCheck]:
    if not suite.checks.fleet:
        return []
    # -e: the Default, Current and Next Boot columns: a setting made but not yet in force
    # (no reboot or mlxfwreset since) is the Next Boot column alone
    argv = ("mlxconfig", "-e", "-d", "{device}", "q")
    return [NodeCheck("mlxconfig", "mlxconfig", argv, 60, 2, per_hca=True)]


LINK_TYPE = {"infiniband": ("1", "IB(1)"), "roce": ("2", "ETH(2)")}


def check(parsed: Any, ctx: Context, node: str | None) -> list[Finding]:
    subj = Subject(node=node)
    fix = (
        "run mlxconfig as root (ansible_become); for '-E- Failed to open the device' start "
        "mst (mst start) or check the device name"
    )
    lacks = None if parsed.devices else "no device table"
    if bad := not_whole(parsed, "MLXCFG-000", subj, "firmware configuration", fix, lacks):
        return bad
    dev = parsed.devices[0]
    out = []
    if ctx.cluster is not None:
        want, shown = LINK_TYPE[ctx.cluster.fabric.type]
        for key in ("LINK_TYPE_P1",):  # the cabled port; a second one may be storage
            value = dev.value(key)
            if value is not None and canonical(value) != want:
                out.append(
                    Finding(
                        "MLXCFG-001",
                        Status.FAIL,
                        subj,
                        f"{key} is {value}, the fabric is {ctx.cluster.fabric.type} ({shown})",
                        observed=value,
                        expected=shown,
                        remediation=f"mlxconfig -d DEV set {key}={want}, then reboot",
                        action="node",
                    )
                )
    pending = [
        (k, dev.value(k), dev.next_boot(k))
        for k in MLXCONFIG_KEYS
        if "Current" in dev.columns
        and dev.next_boot(k) is not None
        and canonical(dev.next_boot(k) or "") != canonical(dev.value(k) or "")
    ]
    for key, now, nxt in pending:
        out.append(
            Finding(
                "MLXCFG-002",
                Status.WARN,
                subj,
                f"{key} is {now} now, {nxt} from the next boot: set but not in force",
                observed=now,
                expected=nxt,
                remediation="reboot the node or reset the card (mlxfwreset -d DEV reset) to "
                "apply it, or set it back",
                action="node",
            )
        )
    return out or [
        Finding("MLXCFG-000", Status.OK, subj, f"{len(dev.params)} firmware settings read")
    ]


def facts(cfg: Any, out: FactSink, check: str) -> None:
    """The settings of ``MLXCONFIG_KEYS`` of the HCA this check queried (``mlxconfig/DEV``)."""
    device = check.partition("/")[2]
    if device not in {h.device for h in out.node.hcas} or not cfg.devices:
        return
    dev = cfg.devices[0]
    for key in MLXCONFIG_KEYS:
        out.add(device, f"mlxconfig.{key}", dev.value(key), f"mlxconfig -d {device} q")


TOOL = Tool(
    "mlxconfig",
    "HCA firmware configuration",
    parse=parse_mlxconfig,
    check=check,
    plan=plan,
    hca=True,
    order=44,
    binaries=(Binary("mlxconfig", "mft"),),
    nvidia_stack=True,
    facts=facts,
)
