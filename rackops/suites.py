"""Suites: which checks an acceptance run does, with what parameters and time budget.

``validators/suites/<name>.yaml`` (or ``<inventory>/suites/``). Parameters that
decide a verdict — the pinned message sizes, the DCGM level — live here, not in
code, so a site changes them by editing data.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from rackops import data
from rackops.errors import ProfileError
from rackops.yamlpos import read_yaml_file, yaml_error_location

BUILTIN_SUITES_DIR = data.path("suites")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DcgmParams(_Strict):
    level: Literal[1, 2, 3, 4]
    timeout_s: int = Field(gt=0)


# the programs a suite may name (the perftest and nccl-tests tools run them as named)
PERFTEST_BW = ("ib_write_bw", "ib_read_bw", "ib_send_bw")
PERFTEST_LAT = ("ib_write_lat", "ib_read_lat", "ib_send_lat")
NCCL_COLLECTIVES = (
    "all_reduce_perf",
    "all_gather_perf",
    "reduce_scatter_perf",
    "alltoall_perf",
    "sendrecv_perf",
    "broadcast_perf",
)


def _one_of(value: str, programs: tuple[str, ...]) -> str:
    if value not in programs:
        raise ValueError(f"{value!r} is not one of {', '.join(programs)}")
    return value


class PerftestBwParams(_Strict):
    tool: str = Field(default="ib_write_bw", description="a perftest bandwidth program")

    @field_validator("tool")
    @classmethod
    def _bw(cls, v: str) -> str:
        return _one_of(v, PERFTEST_BW)

    message_size_bytes: int = Field(gt=0, description="the size the verdict is taken at")
    duration_s: int | None = Field(default=None, gt=0, description="-D: seconds per test")
    iterations: int | None = Field(
        default=None,
        gt=0,
        le=10_000_000,
        description="-n: this many messages instead of a duration; the run times itself, "
        "where duration mode's timer can sample nothing (emulated CPUs, the VM lab)",
    )
    qps: int = Field(ge=1, le=64)
    bidirectional: bool = False
    pairing: Literal["full", "sample", "suspects"] = "full"
    repeats: int = Field(ge=1, le=10, default=1)
    timeout_s: int = Field(gt=0)

    @model_validator(mode="after")
    def _one_length(self) -> PerftestBwParams:
        if (self.duration_s is None) == (self.iterations is None):
            raise ValueError("give exactly one of duration_s (-D) or iterations (-n)")
        return self

    @property
    def expected_s(self) -> float:
        """About how long one test runs (for the plan's estimate)."""
        if self.duration_s is not None:
            return float(self.duration_s)
        return 2.0 + (self.iterations or 0) * self.message_size_bytes * 8 / 100e9


class PerftestLatParams(_Strict):
    tool: str = Field(default="ib_write_lat", description="a perftest latency program")

    @field_validator("tool")
    @classmethod
    def _lat(cls, v: str) -> str:
        return _one_of(v, PERFTEST_LAT)

    message_size_bytes: int = Field(gt=0)
    iterations: int = Field(gt=0)
    timeout_s: int = Field(gt=0)


class PhyParams(_Strict):
    """The physical layer: cabling against the map first, port counters before and after
    the pair rounds, BER (mlxlink) and optics (ethtool -m / mlxlink -m) after them."""

    cabling: bool = True
    counters: bool = True
    ber: bool = True
    optics: bool = True
    hold_down_s: int = Field(
        ge=0, le=600, default=10, description="wait this long for a late link before the baseline"
    )
    timeout_s: int = Field(gt=0, default=60)


class NcclParams(_Strict):
    collective: str = Field(default="all_reduce_perf", description="an nccl-tests program")

    @field_validator("collective")
    @classmethod
    def _collective(cls, v: str) -> str:
        return _one_of(v, NCCL_COLLECTIVES)

    min_bytes: int = Field(gt=0)
    max_bytes: int = Field(gt=0)
    gate_sizes_bytes: tuple[int, ...] = Field(
        min_length=1, description="busbw is gated at these sizes"
    )
    iterations: int = Field(gt=0, default=20)
    repeats: int = Field(ge=1, le=10, default=1)
    timeout_s: int = Field(gt=0)


class ProftesterParams(_Strict):
    """One dcgmproftester test on every GPU of a node at once: a figure per GPU."""

    duration_s: int = Field(gt=0, le=3600, description="-d: seconds of load")
    timeout_s: int = Field(gt=0)


class GpuLoadParams(_Strict):
    """GPUs under load (docs/design.md "GPUs under load"): every GPU sampled while the run
    loads it, the kernel log read before and after, and per-GPU GEMM and HBM figures."""

    sample_interval_ms: int = Field(
        default=1000, ge=100, le=60_000, description="nvidia-smi -lms: one sample per GPU"
    )
    kernel_log: bool = True  # dmesg before and after: Xid/SXid during the run vs history
    proftester: Literal["dcgmproftester12", "dcgmproftester13"] = Field(
        default="dcgmproftester13", description="the binary of the DCGM CUDA flavour installed"
    )
    gemm: ProftesterParams | None = None  # -t 1004: FP16 HGEMM TFLOPS per GPU
    hbm: ProftesterParams | None = None  # -t 1005: device memory bandwidth GB/s per GPU


class Checks(_Strict):
    hca_ports: bool = True
    gpu_inventory: bool = True
    dcgm: DcgmParams | None = None
    perftest_bw: PerftestBwParams | None = None
    perftest_lat: PerftestLatParams | None = None
    nccl_single_node: NcclParams | None = None
    nccl_multi_node: NcclParams | None = None
    physical: PhyParams | None = None
    peer_gate: bool = True
    fleet: bool = True  # facts every node shares (rackops/fleet): golden, majority, floors
    gpu_load: GpuLoadParams | None = None


class Suite(_Strict):
    name: str
    description: str
    budget_minutes: int = Field(gt=0, description="wall time the suite should fit in")
    checks: Checks


def load_suite(name_or_path: str, inventory_dir: Path | None = None) -> Suite:
    candidates = [Path(name_or_path)]
    if inventory_dir is not None:
        candidates.append(inventory_dir / "suites" / f"{name_or_path}.yaml")
    candidates.append(BUILTIN_SUITES_DIR / f"{name_or_path}.yaml")
    path = next((p for p in candidates if p.suffix == ".yaml" and p.is_file()), None)
    if path is None:
        known = ", ".join(sorted(p.stem for p in BUILTIN_SUITES_DIR.glob("*.yaml")))
        raise ProfileError(f"unknown suite {name_or_path!r}; known suites: {known}")
    try:
        data, lines = read_yaml_file(path)
    except yaml.YAMLError as exc:
        line, reason = yaml_error_location(exc)
        raise ProfileError(f"{path}{f':{line}' if line else ''}: {reason}") from exc
    try:
        return Suite.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = tuple(str(p) for p in err["loc"])
        line = lines.get(loc) or lines.get(loc[:-1]) or 1
        raise ProfileError(f"{path}:{line}: {'.'.join(loc)}: {err['msg']}") from exc
