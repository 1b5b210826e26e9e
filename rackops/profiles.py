"""Hardware profiles: what a healthy node of one SKU looks like, as data.

A profile lives in ``validators/profiles/<name>.yaml`` (or in a ``profiles/``
folder beside an inventory, which wins). Every number has units in its key and
a comment in the file saying where it comes from. Loading validates types and
ranges, and refuses floors that no healthy link could reach.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from rackops import data
from rackops.errors import ProfileError
from rackops.yamlpos import LineMap, read_yaml_file, yaml_error_location

BUILTIN_PROFILES_DIR = data.path("profiles")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class GpuSpec(_Strict):
    model: str = Field(min_length=1)
    count: int = Field(ge=1, le=72)
    nvswitch: bool
    nvlink_gbs: float = Field(ge=0, description="NVLink bandwidth per GPU, both directions")
    nvlink_links: int = Field(ge=0)
    pcie_gen: int = Field(ge=1, le=6)
    pcie_width: int = Field(ge=1, le=32)
    memory_mib: int = Field(ge=1)
    nvlink_domain: int = Field(
        default=0,
        ge=0,
        le=576,
        description="GPUs of one multi-node NVLink domain (GB200/GB300 NVL72: 72): every GPU "
        "of it joins one fabric partition (one clique, one cluster UUID); 0: NVLink ends at "
        "the node (HGX)",
    )

    @model_validator(mode="after")
    def _whole_trays(self) -> GpuSpec:
        if self.nvlink_domain and self.nvlink_domain % self.count:
            raise ValueError(
                f"nvlink_domain {self.nvlink_domain} is not a whole number of {self.count}-GPU "
                "nodes (trays)"
            )
        return self


class HcaSpec(_Strict):
    count: int = Field(ge=0, le=32, description="0: a GPU-only node (no RDMA HCA)")
    link_layer: Literal["InfiniBand", "Ethernet"]
    rate_gbps: int = Field(gt=0)
    width: Literal["1X", "2X", "4X", "8X", "12X"]
    active_mtu: Literal[256, 512, 1024, 2048, 4096]


class Thresholds(_Strict):
    ib_write_bw_gbps_min: float = Field(gt=0)
    ib_write_bw_bidir_gbps_min: float = Field(gt=0)
    ib_write_lat_us_max: float = Field(gt=0)
    nccl_single_node_busbw_gbs_min: float = Field(gt=0)
    nccl_multi_node_busbw_gbs_min: float = Field(gt=0)
    ecc_uncorrectable_volatile_max: int = Field(ge=0)
    remapped_rows_pending_max: int = Field(ge=0)
    remapped_rows_failure_max: int = Field(ge=0)
    peer_mad_k: float = Field(gt=0, description="straggler if below median - k * MAD")
    peer_drop_pct_min: float = Field(
        ge=0, le=100, description="and at least this far below the median, in percent"
    )


class PhyThresholds(_Strict):
    """The physical layer: port counters judged on what grew during the run (the delta
    between the snapshot before the pair rounds and the one after), BER and optics."""

    # defaults: the numbers every shipped profile uses, with their sources there
    symbol_error_ber_max: float = Field(
        default=1e-12, gt=0, lt=1, description="uncorrectable symbol errors per line bit"
    )
    raw_ber_max: float = Field(
        default=2.4e-4, gt=0, lt=1, description="pre-FEC BER (what FEC still hides)"
    )
    effective_ber_max: float = Field(default=1e-12, gt=0, lt=1, description="post-FEC BER")
    link_downed_max: int = Field(default=0, ge=0, description="link-down events during the run")
    link_error_recovery_max: int = Field(default=0, ge=0, description="retrains during the run")
    port_errors_max: int = Field(
        default=0, ge=0, description="receive/CRC/integrity/overrun errors grown during the run"
    )
    discard_pct_max: float = Field(default=0.01, ge=0, le=100, description="% of packets")
    pause_time_pct_max: float = Field(
        default=5.0, ge=0, le=100, description="time a lossless priority was paused, % of run"
    )


class LoadThresholds(_Strict):
    """GPUs under load: what every GPU must hold while the run loads it."""

    sm_clock_mhz_min: float = Field(gt=0, description="median SM clock under load")
    gpu_temp_c_max: float = Field(gt=0, le=150, description="hottest GPU sample")
    mem_temp_c_max: float = Field(gt=0, le=150, description="hottest memory (HBM) sample")
    gemm_tflops_min: float = Field(gt=0, description="dcgmproftester -t 1004, FP16 HGEMM")
    hbm_gbs_min: float = Field(gt=0, description="dcgmproftester -t 1005, 10^9 B/s r+w")
    power_limit_w: float | None = Field(
        default=None,
        gt=0,
        le=5000,
        description="the board's power limit: the power cap explains a low clock only at it",
    )


class GoldenFact(_Strict):
    """One fact of the golden node, with the command it was read from."""

    value: str = Field(max_length=256)
    source: str = Field(max_length=128, description="the command that printed it")
    where: str = Field(default="", max_length=128, description="e.g. the bridge's PCI address")


class Golden(_Strict):
    """The facts captured from a node known to be good (``rackops profile capture``): every
    node of the profile is held to them (``rackops/fleet``)."""

    node: str = Field(min_length=1, max_length=128)
    captured_at: str = Field(min_length=1, max_length=64, description="UTC, ISO 8601")
    run: str = Field(default="", max_length=4096, description="the run directory read")
    rackops_version: str = Field(default="", max_length=64)
    # device ("node", "gpu3", "mlx5_2") -> fact name -> fact
    facts: dict[str, dict[str, GoldenFact]] = Field(max_length=4096)

    @field_validator("facts")
    @classmethod
    def _bounded(cls, v: dict[str, dict[str, GoldenFact]]) -> dict[str, dict[str, GoldenFact]]:
        total = sum(len(f) for f in v.values())
        if total > 100_000:
            raise ValueError(f"{total} facts: more than 100000, not a captured node")
        return v


FLOOR_COMPONENTS = (
    "driver",
    "cuda",
    "fabric_manager",
    "nccl",
    "ofed",
    "kernel",
    "bios",
    "hca_firmware",
    "vbios",
)


class Floor(_Strict):
    """A minimum version and why: below it is a FAIL quoting the reason and its source."""

    component: str

    @field_validator("component")
    @classmethod
    def _known(cls, v: str) -> str:
        if v not in FLOOR_COMPONENTS:
            raise ValueError(
                f"not a component with a version; one of {', '.join(FLOOR_COMPONENTS)}"
            )
        return v

    min: str = Field(min_length=1, max_length=64, pattern=r"^[0-9A-Za-z][0-9A-Za-z._+~-]*$")
    branch: str | None = Field(
        default=None,
        max_length=64,
        pattern=r"^[0-9A-Za-z][0-9A-Za-z._+~-]*$",
        description="the leading version fields it applies to: a driver branch 580, a "
        "firmware train 28.43, an OFED release 24.10 (bulletins fix each branch apart)",
    )
    reason: str = Field(min_length=1, max_length=512, description="what is wrong below it")
    source: str = Field(min_length=1, max_length=512, description="bulletin, CVE id, notes URL")

    def applies(self, version: str) -> bool:
        b = self.branch
        return b is None or version == b or version.startswith((b + ".", b + "-"))


class Profile(_Strict):
    name: str
    description: str
    gpu: GpuSpec
    hca: HcaSpec
    thresholds: Thresholds
    phy: PhyThresholds = PhyThresholds()  # a site profile written before the section loads
    load: LoadThresholds | None = None  # none: GPUs under load judged by reasons and peers
    floors: tuple[Floor, ...] = Field(default=(), max_length=256)
    golden: Golden | None = None


@dataclass(frozen=True)
class PeakViolation:
    """A floor that is above what the hardware can physically deliver."""

    key: str
    floor: float
    peak: float
    unit: str
    reason: str

    def message(self) -> str:
        return (
            f"thresholds.{self.key} = {self.floor:g} {self.unit} is above the physical peak "
            f"{self.peak:g} {self.unit} ({self.reason}); no healthy rack could pass it — "
            f"lower the floor (NVIDIA's acceptance criterion is 0.9 × peak)"
        )


def peak_violations(profile: Profile) -> list[PeakViolation]:
    """Every threshold floor that exceeds the physical peak of its link."""
    t, hca, gpu = profile.thresholds, profile.hca, profile.gpu
    rate = hca.rate_gbps
    checks: list[tuple[str, float, float, str, str]] = [
        ("ib_write_bw_gbps_min", t.ib_write_bw_gbps_min, rate, "Gb/s", f"one {rate} Gb/s link"),
        (
            "ib_write_bw_bidir_gbps_min",
            t.ib_write_bw_bidir_gbps_min,
            2 * rate,
            "Gb/s",
            f"both directions of one {rate} Gb/s link",
        ),
    ]
    if gpu.nvlink_domain:  # the trays of one NVLink domain reduce over NVLink (MNNVL)
        checks.append(
            (
                "nccl_multi_node_busbw_gbs_min",
                t.nccl_multi_node_busbw_gbs_min,
                gpu.nvlink_gbs,
                "GB/s",
                f"NVLink {gpu.nvlink_gbs:g} GB/s per GPU across the {gpu.nvlink_domain}-GPU domain",
            )
        )
    elif hca.count:  # a GPU-only node runs no multi-node collective
        checks.append(
            (
                "nccl_multi_node_busbw_gbs_min",
                t.nccl_multi_node_busbw_gbs_min,
                hca.count * rate / 8,
                "GB/s",
                f"{hca.count} HCAs × {rate} Gb/s ÷ 8 bits per byte",
            )
        )
    if gpu.nvlink_gbs > 0:
        checks.append(
            (
                "nccl_single_node_busbw_gbs_min",
                t.nccl_single_node_busbw_gbs_min,
                gpu.nvlink_gbs,
                "GB/s",
                f"NVLink {gpu.nvlink_gbs:g} GB/s per GPU",
            )
        )
    return [
        PeakViolation(key, floor, peak, unit, reason)
        for key, floor, peak, unit, reason in checks
        if floor > peak
    ]


@dataclass(frozen=True)
class LoadedProfile:
    profile: Profile
    path: Path
    lines: LineMap

    def line_of(self, *key: str) -> int | None:
        return self.lines.get(tuple(key))


def profile_search_path(inventory_dir: Path | None = None) -> list[Path]:
    """Where profiles are looked up, first match wins."""
    dirs = []
    if inventory_dir is not None:
        dirs.append(inventory_dir / "profiles")
    dirs.append(BUILTIN_PROFILES_DIR)
    return dirs


def available_profiles(inventory_dir: Path | None = None) -> list[str]:
    names: set[str] = set()
    for d in profile_search_path(inventory_dir):
        if d.is_dir():
            names.update(p.stem for p in d.glob("*.yaml"))
    return sorted(names)


def find_profile(name: str, inventory_dir: Path | None = None) -> Path | None:
    for d in profile_search_path(inventory_dir):
        candidate = d / f"{name}.yaml"
        if candidate.is_file():
            return candidate
    return None


def load_profile_file(path: Path, *, check_peaks: bool = True) -> LoadedProfile:
    """Load and validate one profile file; errors name the file, line and key."""
    try:
        data, lines = read_yaml_file(path)
    except OSError as exc:
        raise ProfileError(f"{path}: cannot read profile: {exc.strerror}") from exc
    except yaml.YAMLError as exc:
        line, reason = yaml_error_location(exc)
        raise ProfileError(f"{path}{f':{line}' if line else ''}: {reason}") from exc
    if not isinstance(data, dict):
        raise ProfileError(f"{path}: a profile is a YAML mapping, found {type(data).__name__}")
    try:
        profile = Profile.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = tuple(str(p) for p in err["loc"])
        line = lines.get(loc) or lines.get(loc[:-1]) or 1
        found = err.get("input")
        raise ProfileError(
            f"{path}:{line}: {'.'.join(loc)}: {err['msg']} (found {found!r})"
        ) from exc
    if profile.name != path.stem:
        raise ProfileError(
            f"{path}:{lines.get(('name',), 1)}: name {profile.name!r} differs from the file "
            f"name {path.stem!r}; make them equal"
        )
    loaded = LoadedProfile(profile, path, lines)
    if check_peaks:
        for v in peak_violations(profile):
            line = loaded.line_of("thresholds", v.key)
            raise ProfileError(f"{path}:{line}: {v.message()}")
    return loaded


def load_profile(
    name: str, inventory_dir: Path | None = None, *, check_peaks: bool = True
) -> LoadedProfile:
    path = find_profile(name, inventory_dir)
    if path is None:
        known = ", ".join(available_profiles(inventory_dir)) or "none"
        raise ProfileError(f"unknown hardware profile {name!r}; known profiles: {known}")
    return load_profile_file(path, check_peaks=check_peaks)
