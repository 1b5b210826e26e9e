"""What the nvidia-smi readings share: the program and the package that installs it."""

from __future__ import annotations

from rackops.tools.base import Binary, Context

NVIDIA_SMI = Binary("nvidia-smi", "nvidia-utils")


def driver(ctx: Context) -> str | None:
    return ctx.cluster.versions.driver if ctx.cluster else None
