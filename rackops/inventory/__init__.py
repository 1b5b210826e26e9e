"""The rack model and its loader (one inventory, read the way Ansible reads it)."""

from rackops.inventory.loader import LoadResult, load_inventory
from rackops.inventory.model import Cluster, Fabric, Hca, Node, RoceQos, Switch, Versions

__all__ = [
    "Cluster",
    "Fabric",
    "Hca",
    "LoadResult",
    "Node",
    "RoceQos",
    "Switch",
    "Versions",
    "load_inventory",
]
