"""nvidia-smi -q -d PERFORMANCE: clock event reasons, clocks, temperatures and power of every
GPU. A run samples the same quantities with ``--query-gpu … -lms`` while it loads the GPUs:
the sampler (its script and argv, here) is started and stopped by
``validate/stages/gpuload.py`` and its rows are read by ``parse_smi_samples``, which names
the fields it asks for (``SAMPLED``, ``REASONS_FIELDS``)."""

from __future__ import annotations

from rackops.parsers.nvidia_smi_perf import REASONS_FIELDS, SAMPLED, parse_smi_any
from rackops.tools._smi import NVIDIA_SMI
from rackops.tools.base import Tool

# $1: the interval in ms. The shell's pid goes to stderr first (how the run stops it); on
# TERM it stops nvidia-smi, waits for its last row and exits 0. If nvidia-smi ends on its own,
# the script exits with its status: a sampler that stopped early is not a whole run.
SAMPLER = (
    "trap 'stopped=1; [ -n \"$p\" ] && kill $p 2>/dev/null' TERM INT HUP\n"
    'echo "rackops-sampler pid $$" >&2\n'
    f"R={REASONS_FIELDS[0]}\n"
    "nvidia-smi --query-gpu=$R --format=csv,noheader >/dev/null 2>&1 "
    f"|| R={REASONS_FIELDS[1]}\n"
    f'nvidia-smi --query-gpu={",".join(SAMPLED)},$R --format=csv,nounits -lms "$1" &\n'
    "p=$!\n"
    "wait $p\n"
    "rc=$?\n"
    'if [ -n "$stopped" ]; then wait $p; exit 0; fi\n'
    'echo "rackops-sampler: nvidia-smi exited $rc" >&2\n'
    "exit $rc\n"
)
PID_MARK = b"rackops-sampler pid "


def sampler_argv(interval_ms: int) -> tuple[str, ...]:
    return ("sh", "-c", SAMPLER, "rackops-sampler", str(interval_ms))


TOOL = Tool(
    "nvidia-smi-perf",
    "GPU clock event reasons, clocks, temperature and power",
    parse=parse_smi_any,
    binaries=(NVIDIA_SMI,),
    no_check="one nvidia-smi-perf output is a moment, not a load: a run judges the samples it "
    "takes while it loads the GPUs; use `rackops parse nvidia-smi-perf` to read one output",
)
