"""The lab: real SSH targets in containers with simulated GPU and RDMA hardware."""

from rackops.lab.engine import LabError
from rackops.lab.lab import apply_leaf_mtus, down, status, up

__all__ = ["LabError", "apply_leaf_mtus", "down", "status", "up"]
