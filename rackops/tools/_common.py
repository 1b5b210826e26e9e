"""Helpers the tool modules share."""

from __future__ import annotations

from rackops.errors import RackopsError
from rackops.inventory.model import Cluster, Node
from rackops.tools.base import Context


def needs_node(ctx: Context, tool: str) -> Node:
    if ctx.node is None:
        raise RackopsError(f"checking {tool} needs the cabling map: pass -i INVENTORY --node N")
    return ctx.node


def needs_cluster(ctx: Context, tool: str, what: str) -> Cluster:
    if ctx.cluster is None:
        raise RackopsError(f"checking {tool} needs {what}: pass -i INVENTORY")
    return ctx.cluster
