"""nvidia-ctk: the container toolkit's CLI, which the GPU Operator prerequisites role runs
(installed and simulated; rackops reads none of its output)."""

from __future__ import annotations

from rackops.tools.base import Binary, Tool

TOOL = Tool(
    "nvidia-ctk",
    "NVIDIA container toolkit CLI (provisioning only)",
    binaries=(Binary("nvidia-ctk", "nvidia-container-toolkit"),),
)
