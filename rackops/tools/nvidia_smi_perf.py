"""nvidia-smi -q -d PERFORMANCE: clock event reasons, clocks, temperatures and power of every
GPU. A run samples the same quantities with ``--query-gpu … -lms`` while it loads the GPUs
(``validate/stages/gpuload.py``, parsed by ``parse_smi_samples``)."""

from __future__ import annotations

from rackops.parsers.nvidia_smi_perf import parse_smi_any
from rackops.tools._smi import NVIDIA_SMI
from rackops.tools.base import Tool

TOOL = Tool(
    "nvidia-smi-perf",
    "GPU clock event reasons, clocks, temperature and power",
    parse=parse_smi_any,
    binaries=(NVIDIA_SMI,),
    no_check="one nvidia-smi-perf output is a moment, not a load: a run judges the samples it "
    "takes while it loads the GPUs; use `rackops parse nvidia-smi-perf` to read one output",
)
