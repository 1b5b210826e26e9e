"""ibstat: every HCA port's state, physical state, rate and link layer."""

from __future__ import annotations

from rackops.inventory.model import Cluster
from rackops.parsers.ibstat import parse_ibstat
from rackops.suites import Suite
from rackops.tools._hca import check_ports
from rackops.tools.base import Binary, NodeCheck, Tool

ARGV = ("ibstat",)


def plan(suite: Suite, cluster: Cluster) -> list[NodeCheck]:
    return [NodeCheck("ibstat", "ibstat", ARGV, 60, 1)] if suite.checks.hca_ports else []


TOOL = Tool(
    "ibstat",
    "HCA port state, rate and link layer",
    parse=parse_ibstat,
    check=check_ports,
    plan=plan,
    hca=True,
    order=10,
    binaries=(Binary("ibstat", "infiniband-diags"),),
    settles=True,
)
