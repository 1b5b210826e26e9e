"""nvidia-smi nvlink -e: each GPU's NVLink error counters. A run reads them before and after
its load and judges what grew (``validate/stages/nvlinkerrors.py``, ``checks/nvlinkerrors.py``)."""

from __future__ import annotations

from rackops.parsers.nvidia_smi_nvlink_errors import parse_nvlink_errors
from rackops.tools._smi import NVIDIA_SMI
from rackops.tools.base import Tool

NVLINK_ERRORS_ARGV = ("nvidia-smi", "nvlink", "-e")

TOOL = Tool(
    "nvidia-smi-nvlink-errors",
    "NVLink error counters per link",
    parse=parse_nvlink_errors,
    binaries=(NVIDIA_SMI,),
    no_check="nvidia-smi-nvlink-errors is judged on what grows during a run: use "
    "`rackops parse nvidia-smi-nvlink-errors` to read one output",
)
