"""The lab: real SSH targets in containers with simulated GPU and RDMA hardware."""

from rackops.lab.engine import LabError
from rackops.lab.lab import apply_leaf_mtus, down, status, up
from rackops.lab.slurm import set_health_interval

__all__ = ["LabError", "apply_leaf_mtus", "down", "set_health_interval", "status", "up"]
