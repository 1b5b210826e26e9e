"""nvidia-smi -q -d PERFORMANCE (and the --query-gpu sampling stream): clock event reasons,
clocks, temperatures and power of every GPU. Parsed now; judged over a run's load window
(issue 24, planned: docs/design.md "GPUs under load")."""

from __future__ import annotations

from rackops.parsers.nvidia_smi_perf import parse_smi_perf
from rackops.tools._smi import NVIDIA_SMI
from rackops.tools.base import Tool

TOOL = Tool(
    "nvidia-smi-perf",
    "GPU clock event reasons, clocks, temperature and power",
    parse=parse_smi_perf,
    binaries=(NVIDIA_SMI,),
    no_check="nvidia-smi-perf is judged over the load window of a run (planned, issue 24): "
    "use `rackops parse nvidia-smi-perf` to read one output",
)
