"""``nvidia-smi`` machine formats: ``--query-gpu … --format=csv``, ``-q -x``,
``topo -m`` and ``nvlink -s``.

``--query-gpu`` (header needed, or pass ``fields`` for ``noheader``)::

    index, name, uuid, pci.bus_id, driver_version, memory.total [MiB]
    0, NVIDIA H100 80GB HBM3, GPU-1c0d…, 00000000:18:00.0, 580.95.05, 81559 MiB

Field names become keys (``pci.bus_id`` → ``bus_id``, ``memory.total [MiB]`` →
``memory.total_mib``); units are stripped whether or not ``nounits`` was used;
``[N/A]``/``[Not Supported]`` become None; Enabled/Disabled/Yes/No stay text.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import Any

from rackops.parsers._common import (
    MAX_COUNT,
    MAX_GPUS,
    MAX_NVLINKS,
    ParseError,
    bounded,
    is_na,
    num,
)

_ALIASES = {
    "pci.bus_id": "bus_id",
    "gpu_bus_id": "bus_id",
    "gpu_name": "name",
    "gpu_uuid": "uuid",
}
_UNIT = re.compile(r"^(.*?)\s*\[([^\]]+)\]$")
_NUMERIC = re.compile(r"^[-+]?\d+(\.\d+)?(\s+[A-Za-z%/]+)?$")


@dataclass(frozen=True)
class SmiQuery:
    fields: tuple[str, ...]
    gpus: tuple[dict[str, Any], ...]


def _key(field: str) -> str:
    field = field.strip()
    m = _UNIT.match(field)
    if m:
        unit = m.group(2).lower().replace("/", "_per_").replace(" ", "").replace("%", "pct")
        base = m.group(1).strip()
        return f"{_ALIASES.get(base, base)}_{unit}"
    return _ALIASES.get(field, field)


def _value(text: str) -> Any:
    t = text.strip()
    if is_na(t):
        return None
    if t in ("Yes", "No"):
        return t == "Yes"
    if _NUMERIC.match(t):
        n = num(t)
        assert n is not None
        return int(n) if n.is_integer() and "." not in t.split()[0] else n
    return t


# Fields nvidia-smi prints as numbers (or N/A): text there is a mangled value, not a reading.
_NUMERIC_FIELDS = (
    "index",
    "pcie.link.",
    "ecc.errors.",
    "memory.",
    "temperature.",
    "clocks.",
    "power.",
    "utilization.",
    "remapped_rows.correctable",
    "remapped_rows.uncorrectable",
    "fan.speed",
)


def _typed(gpu: dict[str, Any], fields: list[str]) -> dict[str, Any]:
    for field, (key, value) in zip(fields, gpu.items(), strict=True):
        base = _UNIT.sub(r"\1", field.strip())
        if value is None or not base.startswith(_NUMERIC_FIELDS):
            continue
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ParseError(f"{field}: expected a number, found {value!r}")
        if key == "index" and not isinstance(value, int):
            raise ParseError(f"GPU index {value!r} is not an integer")
    if isinstance(gpu.get("index"), int):
        bounded(gpu["index"], "GPU index", MAX_COUNT)
    return gpu


# a --query-gpu/--query-remapped-rows header field: "index", "pci.bus_id",
# "memory.total [MiB]", "clocks_event_reasons.active" (with units, or not: nounits)
_FIELD = re.compile(r"[a-z][a-z0-9_.]*(?: \[[^\]\n]{1,16}\])?")


def parse_query_gpu(text: str, fields: list[str] | None = None) -> SmiQuery:
    stripped = text.strip()
    first_line = stripped.splitlines()[0] if stripped else ""
    if first_line.startswith(("NVIDIA-SMI has failed", "Failed to initialize NVML")):
        raise ParseError(f"nvidia-smi could not run: {first_line}")
    if first_line.startswith("No devices were found"):
        return SmiQuery(tuple(_key(f) for f in fields or ()), ())
    rows = [r for r in csv.reader(io.StringIO(stripped), skipinitialspace=True) if r]
    if not rows:
        raise ParseError("empty nvidia-smi output")
    first = [c.strip() for c in rows[0]]
    if fields is None:
        if any(c and c[0].isdigit() for c in first[:1]) and not any(
            "." in c or "_" in c for c in first[:1]
        ):
            raise ParseError("CSV without a header: pass the --query-gpu field names")
        odd = [c for c in first if not _FIELD.fullmatch(c)]
        if odd:
            raise ParseError(
                f"not an nvidia-smi --query CSV header: {odd[0][:60]!r} is no query field"
            )
        fields, rows = first, rows[1:]
    keys = tuple(_key(f) for f in fields)
    gpus = []
    for r in rows:
        if len(r) != len(keys):
            raise ParseError(f"row has {len(r)} values for {len(keys)} fields: {r}")
        gpus.append(_typed({k: _value(v) for k, v in zip(keys, r, strict=True)}, list(fields)))
    if len(gpus) > len({g.get("index", i) for i, g in enumerate(gpus)}):
        raise ParseError("a GPU index is listed twice: not one nvidia-smi output")
    if not gpus:
        raise ParseError("nvidia-smi CSV has a header but no GPU rows")
    return SmiQuery(keys, tuple(gpus))


# ---------------------------------------------------------------- -q -x


@dataclass(frozen=True)
class SmiGpu:
    index: int
    bus_id: str | None
    name: str | None
    uuid: str | None
    serial: str | None
    persistence_mode: str | None
    pcie_gen_max: int | None
    pcie_gen_current: int | None
    pcie_width_max: int | None
    pcie_width_current: int | None
    memory_total_mib: int | None
    ecc_mode: str | None
    ecc_uncorrectable_volatile: int | None
    ecc_uncorrectable_aggregate: int | None
    remapped_rows_correctable: int | None
    remapped_rows_uncorrectable: int | None
    remapped_rows_pending: bool | None
    remapped_rows_failure: bool | None
    fabric_state: str | None
    fabric_status: str | None
    temperature_c: int | None
    # the settings a fleet compares (issue 23); None where this driver does not print them
    vbios_version: str | None = None
    power_limit_w: float | None = None  # in force: current_power_limit (R535+) or enforced
    default_power_limit_w: float | None = None
    app_clock_graphics_mhz: int | None = None  # applications clocks (nvidia-smi -ac)
    app_clock_memory_mhz: int | None = None
    mig_mode: str | None = None  # current_mig: Enabled | Disabled
    compute_mode: str | None = None  # Default | Exclusive_Process | Prohibited
    # the NVLink fabric beyond the node (R550+; GB200/GB300 NVL72 compute trays): the
    # partition's clique and cluster, and the fabric's health (R560+; fields per driver build)
    fabric_clique_id: int | None = None  # 0 on a node-local NVSwitch (HGX) and on a failure
    fabric_cluster_uuid: str | None = None  # all zeros likewise
    fabric_health: FabricHealth | None = None


@dataclass(frozen=True)
class FabricHealth:
    """``<fabric><health>``: each field as printed, None where this driver does not print
    it or prints N/A (570.148 has no summary; partition_assigned is 580.159+)."""

    summary: str | None  # Healthy | Unhealthy | Limited Capacity
    bandwidth: str | None  # Full | Degraded
    route_recovery_in_progress: bool | None
    route_unhealthy: bool | None
    access_timeout_recovery: bool | None
    incorrect_configuration: str | None  # None (GB300) | N/A (GB200) | what is wrong
    partition_assigned: bool | None


@dataclass(frozen=True)
class SmiXml:
    driver_version: str | None
    cuda_version: str | None
    attached_gpus: int | None
    gpus: tuple[SmiGpu, ...]


def _t(node: ET.Element | None, path: str) -> str | None:
    if node is None:
        return None
    found = node.find(path)
    if found is None or found.text is None:
        return None
    text = found.text.strip()
    return None if is_na(text) else text


def _n(node: ET.Element | None, path: str) -> int | None:
    value = _t(node, path)
    if value is None:
        return None
    n = num(value.replace("x", ""))
    return None if n is None else int(n)


def _yes(value: str | None) -> bool | None:
    if value is None:
        return None
    return value.lower() in ("yes", "true", "1")


def _watts(gpu: ET.Element, *tags: str) -> float | None:
    """A power limit in W: ``gpu_power_readings`` (R535+) or ``power_readings`` (older,
    where ``enforced_power_limit`` is the one in force)."""
    for block in ("gpu_power_readings", "power_readings"):
        for tag in tags:
            value = _t(gpu, f"{block}/{tag}")
            if value is not None:
                return num(value)
    return None


def _ecc_sum(gpu: ET.Element, scope: str) -> int | None:
    node = gpu.find(f"ecc_errors/{scope}")
    if node is None:
        return None
    total, seen = 0, False
    for child in node.iter():
        if "uncorrectable" in child.tag:
            n = num(child.text or "")
            if n is not None:
                total, seen = total + int(n), True
        elif child.tag == "double_bit":
            n = num(_t(child, "total") or "")
            if n is not None:
                total, seen = total + int(n), True
    return total if seen else None


def _fabric_health(node: ET.Element | None) -> FabricHealth | None:
    if node is None:
        return None
    health = FabricHealth(
        _t(node, "summary"),
        _t(node, "bandwidth"),
        _true_false(_t(node, "route_recovery_in_progress")),
        _true_false(_t(node, "route_unhealthy")),
        _true_false(_t(node, "access_timeout_recovery")),
        _t(node, "incorrect_configuration"),
        _true_false(_t(node, "partition_assigned")),
    )
    return None if all(v is None for v in dataclasses.astuple(health)) else health


def _true_false(value: str | None) -> bool | None:
    """``True``/``False`` as nvidia-smi prints a health flag; anything else is not a flag."""
    if value is None:
        return None
    if value not in ("True", "False"):
        raise ParseError(f"a fabric health flag is {value!r}, not True or False")
    return value == "True"


def parse_smi_xml(text: str) -> SmiXml:
    try:
        root = ET.fromstring(text.strip())
    except ET.ParseError as exc:
        raise ParseError(f"nvidia-smi XML is unreadable (cut short?): {exc}") from exc
    if root.tag != "nvidia_smi_log":
        raise ParseError(f"root element is <{root.tag}>, expected <nvidia_smi_log>")
    gpus = []
    for i, g in enumerate(root.findall("gpu")):
        rr = g.find("remapped_rows")
        gpus.append(
            SmiGpu(
                index=next((n for n in (_n(g, "minor_number"),) if n is not None), i),
                bus_id=g.get("id"),
                name=_t(g, "product_name"),
                uuid=_t(g, "uuid"),
                serial=_t(g, "serial"),
                persistence_mode=_t(g, "persistence_mode"),
                pcie_gen_max=_n(g, "pci/pci_gpu_link_info/pcie_gen/max_link_gen"),
                pcie_gen_current=_n(g, "pci/pci_gpu_link_info/pcie_gen/current_link_gen"),
                pcie_width_max=_n(g, "pci/pci_gpu_link_info/link_widths/max_link_width"),
                pcie_width_current=_n(g, "pci/pci_gpu_link_info/link_widths/current_link_width"),
                memory_total_mib=_n(g, "fb_memory_usage/total"),
                ecc_mode=_t(g, "ecc_mode/current_ecc"),
                ecc_uncorrectable_volatile=_ecc_sum(g, "volatile"),
                ecc_uncorrectable_aggregate=_ecc_sum(g, "aggregate"),
                remapped_rows_correctable=_n(rr, "remapped_row_corr"),
                remapped_rows_uncorrectable=_n(rr, "remapped_row_unc"),
                remapped_rows_pending=_yes(_t(rr, "remapped_row_pending")),
                remapped_rows_failure=_yes(_t(rr, "remapped_row_failure")),
                fabric_state=_t(g, "fabric/state"),
                fabric_status=_t(g, "fabric/status"),
                temperature_c=_n(g, "temperature/gpu_temp"),
                vbios_version=_t(g, "vbios_version"),
                power_limit_w=_watts(g, "current_power_limit", "enforced_power_limit"),
                default_power_limit_w=_watts(g, "default_power_limit"),
                app_clock_graphics_mhz=_n(g, "applications_clocks/graphics_clock"),
                app_clock_memory_mhz=_n(g, "applications_clocks/mem_clock"),
                mig_mode=_t(g, "mig_mode/current_mig"),
                compute_mode=_t(g, "compute_mode"),
                fabric_clique_id=_n(g, "fabric/cliqueId"),
                fabric_cluster_uuid=_t(g, "fabric/clusterUuid"),
                fabric_health=_fabric_health(g.find("fabric/health")),
            )
        )
    attached = _n(root, "attached_gpus")
    if attached is not None and attached != len(gpus):
        raise ParseError(f"attached_gpus says {attached} but {len(gpus)} <gpu> elements")
    return SmiXml(_t(root, "driver_version"), _t(root, "cuda_version"), attached, tuple(gpus))


# ---------------------------------------------------------------- topo -m


@dataclass(frozen=True)
class SmiTopo:
    devices: tuple[str, ...]
    matrix: dict[str, dict[str, str]]
    cpu_affinity: dict[str, str | None]
    numa_affinity: dict[str, str | None]
    nic_names: dict[str, str]

    def link(self, a: str, b: str) -> str | None:
        return self.matrix.get(a, {}).get(b)


_LEGEND = re.compile(r"^\s*(NIC\d+):\s*(\S+)\s*$")


def parse_smi_topo(text: str) -> SmiTopo:
    lines = [ln.rstrip() for ln in text.splitlines()]
    head = next(
        (
            i
            for i, ln in enumerate(lines)
            if ln.split()[:1] == ["GPU0"] and ln.split()[1:2] != ["X"]
        ),
        None,
    )
    if head is None:
        raise ParseError("no GPU0 header row: this is not 'nvidia-smi topo -m' output")
    header = lines[head]
    cols = [c.strip() for c in re.split(r"\t+|\s{2,}", header.strip()) if c.strip()]
    devices = [c for c in cols if re.match(r"^(GPU|NIC|mlx)\w*\d+$", c)]
    extra = cols[len(devices) :]
    matrix: dict[str, dict[str, str]] = {}
    cpu: dict[str, str | None] = {}
    numa: dict[str, str | None] = {}
    nic_names: dict[str, str] = {}
    for ln in lines[head + 1 :]:
        if m := _LEGEND.match(ln):
            nic_names[m.group(1)] = m.group(2)
            continue
        cells = [c.strip() for c in re.split(r"\t+", ln.strip())] if "\t" in ln else ln.split()
        if not cells or cells[0] not in devices:
            continue
        values = cells[1:]
        if len(values) < len(devices):
            raise ParseError(
                f"topology row {cells[0]} has {len(values)} cells for {len(devices)} devices"
            )
        matrix[cells[0]] = dict(zip(devices, values[: len(devices)], strict=True))
        rest = dict(zip(extra, values[len(devices) :], strict=False))
        cpu[cells[0]] = rest.get("CPU Affinity") or None
        numa[cells[0]] = rest.get("NUMA Affinity") or None
    missing = [d for d in devices if d not in matrix]
    if missing:
        raise ParseError(f"topology matrix lacks rows for {', '.join(missing)} (cut short?)")
    return SmiTopo(tuple(devices), matrix, cpu, numa, nic_names)


# ------------------------------------------------------------- nvlink -s


@dataclass(frozen=True)
class NvLink:
    link: int
    active: bool
    gbs: float | None


@dataclass(frozen=True)
class NvlinkGpu:
    index: int
    name: str | None
    uuid: str | None
    links: tuple[NvLink, ...]


@dataclass(frozen=True)
class SmiNvlink:
    gpus: tuple[NvlinkGpu, ...]
    errors: tuple[str, ...] = ()
    # every GPU lists as many links as the others and no error line: a cut output (the last
    # GPU's links missing) or an NVML error is never complete
    complete: bool = True
    no_nvlink: bool = False  # the tool printed nothing, exit 0: no GPU has an NVLink


_INDEX = re.compile(r"\d{1,9}")


def _nv_gpu(line: str) -> tuple[int, str | None, str | None] | None:
    """``GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-…)`` → (0, name, uuid), split with str
    methods (a lazy-regex reading of a long line was quadratic)."""
    head, colon, rest = line.partition(":")
    word, _, index = head.partition(" ")
    if not colon or word != "GPU" or not _INDEX.fullmatch(index.strip()):
        return None
    rest = rest.strip()
    uuid = None
    if rest.endswith(")") and "(UUID:" in rest:
        rest, _, inside = rest[:-1].rpartition("(UUID:")
        uuid = inside.strip() or None
        rest = rest.strip()
    return bounded(int(index), "GPU index", MAX_GPUS), rest or None, uuid


def _nv_link(line: str) -> tuple[int, str] | None:
    head, colon, rest = line.partition(":")
    word, _, index = head.partition(" ")
    if not colon or word != "Link" or not _INDEX.fullmatch(index.strip()):
        return None
    return bounded(int(index), "NVLink number", MAX_NVLINKS), rest.strip()


_NV_ERROR = re.compile(
    r"(fail|error|unable|not supported|unknown|no devices were found|insufficient)", re.I
)


_NV_SPEED = re.compile(r"(\d+(?:\.\d+)?)\s*GB/s", re.I)  # an active link's speed


def parse_smi_nvlink(text: str) -> SmiNvlink:
    gpus: list[list[Any]] = []
    errors: list[str] = []
    orphan_links = False  # link lines before any GPU line: the output starts mid-block
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if g := _nv_gpu(line):
            gpus.append([g[0], g[1], g[2], []])
        elif link := _nv_link(line):
            if not gpus:
                orphan_links = True
                continue
            status = link[1]
            inactive = "inactive" in status.lower() or is_na(status)
            speed = None if inactive else _NV_SPEED.fullmatch(status.strip())
            if not inactive and speed is None:  # "nan GB/s", "inf GB/s", a cut figure
                raise ParseError(
                    f"GPU {gpus[-1][0]} link {link[0]}: {status.strip()[:40]!r} is not a "
                    "finite number of GB/s: a garbled output"
                )
            gbs = None if speed is None else float(speed.group(1))
            gpus[-1][3].append(NvLink(link[0], not inactive, gbs))
        elif _NV_ERROR.search(line):
            errors.append(line)
        elif gpus:
            raise ParseError(f"unexpected line in nvlink output: {line!r}")
    if not gpus:
        if errors:
            return SmiNvlink((), tuple(errors), False)
        raise ParseError("no 'GPU n:' line: this is not 'nvidia-smi nvlink -s' output")
    return SmiNvlink(
        tuple(NvlinkGpu(g[0], g[1], g[2], tuple(g[3])) for g in gpus),
        tuple(errors),
        not errors and not orphan_links and _nvlink_whole(gpus),
    )


def _nvlink_whole(gpus: list[list[Any]]) -> bool:
    """What nvidia-smi always prints: GPUs 0, 1, 2, … in order, each with the same number of
    links numbered 0, 1, 2, … in order. A block cut short, a GPU or link line dropped or
    repeated, or a fragment starting inside the listing breaks one of these."""
    counts = {len(g[3]) for g in gpus}
    if len(counts) != 1 or counts == {0}:
        return False
    if [g[0] for g in gpus] != list(range(len(gpus))):
        return False
    return all([link.link for link in g[3]] == list(range(len(g[3]))) for g in gpus)
