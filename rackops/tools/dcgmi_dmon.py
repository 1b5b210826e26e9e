"""dcgmi dmon -e FIELDS: DCGM's samples of clocks, temperatures, power and clock event
reasons per GPU. Parsed only: a run samples with nvidia-smi (``validate/stages/gpuload.py``)."""

from __future__ import annotations

from rackops.parsers.dcgmi_dmon import parse_dcgmi_dmon
from rackops.tools.base import Tool

TOOL = Tool(
    "dcgmi-dmon",
    "DCGM field samples per GPU",
    parse=parse_dcgmi_dmon,
    no_check="dcgmi-dmon is parsed only: a run samples its GPUs with nvidia-smi --query-gpu, "
    'which every driver has (docs/design.md "GPUs under load"); use `rackops parse '
    "dcgmi-dmon` to read one output",
)
