"""``rackops check``: evaluate one captured output offline, as an engineer does with an
output pasted into a ticket. Parse → the tool's own check (:mod:`rackops.tools`) → findings.
This module builds the context the check needs from the command line."""

from __future__ import annotations

from pathlib import Path

from rackops.errors import RackopsError
from rackops.profiles import load_profile
from rackops.suites import load_suite
from rackops.tools import evaluate
from rackops.tools.base import Context

__all__ = ["Context", "build_context", "evaluate"]


def build_context(
    profile: str | None, inventory: str | None, node: str | None, suite: str | None
) -> Context:
    cluster = node_obj = None
    inv_dir = None
    if inventory:
        from rackops.inventory import load_inventory

        result = load_inventory(inventory)
        cluster = result.raise_for_errors()
        inv_dir = Path(inventory) if Path(inventory).is_dir() else Path(inventory).parent
        if node:
            names = [n.name for n in cluster.nodes]
            if node not in names:
                raise RackopsError(
                    f"node {node!r} is not in {inventory} (nodes: {', '.join(names)})"
                )
            node_obj = cluster.node(node)
    if profile is None:
        if node_obj is None:
            raise RackopsError("pass --profile P, or -i INVENTORY --node N to take the node's")
        profile = node_obj.profile
    return Context(
        load_profile(profile, inv_dir).profile,
        node_obj,
        cluster,
        load_suite(suite, inv_dir) if suite else None,
    )
