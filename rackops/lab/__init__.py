"""The lab: real SSH targets in containers with simulated GPU and RDMA hardware."""

from rackops.lab.engine import LabError
from rackops.lab.lab import down, status, up

__all__ = ["LabError", "down", "status", "up"]
