"""GPU inventory: count, model, driver, persistence, ECC, row remapping, PCIe, fabric, NVLink.

PCIe generation is read from the *maximum* link: an idle GPU drops to Gen1 to
save power, which is not a degraded link. A narrower current width than the
maximum is a real fault (lanes train at boot whatever the power state).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rackops.findings import Finding, Status, Subject
from rackops.parsers.nvidia_smi import FabricHealth, SmiNvlink, SmiQuery, SmiXml
from rackops.profiles import Profile


@dataclass(frozen=True)
class GpuView:
    index: int
    bus_id: str | None = None
    uuid: str | None = None
    name: str | None = None
    driver: str | None = None
    persistence: str | None = None
    pcie_gen_max: int | None = None
    pcie_width_current: int | None = None
    pcie_width_max: int | None = None
    ecc_uncorrectable_volatile: int | None = None
    remap_pending: bool | None = None
    remap_failure: bool | None = None
    fabric_state: str | None = None
    fabric_status: str | None = None
    fabric_clique: int | None = None
    fabric_cluster: str | None = None
    fabric_health: FabricHealth | None = None


def _flag(value: Any) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    return str(value).strip().lower() in ("yes", "true", "1")


def _views_query(q: SmiQuery) -> list[GpuView]:
    out = []
    for i, g in enumerate(q.gpus):
        out.append(
            GpuView(
                index=int(g.get("index", i)),
                bus_id=g.get("bus_id"),
                uuid=g.get("uuid"),
                name=g.get("name"),
                driver=None if g.get("driver_version") is None else str(g.get("driver_version")),
                persistence=g.get("persistence_mode"),
                pcie_gen_max=g.get("pcie.link.gen.max"),
                pcie_width_current=g.get("pcie.link.width.current"),
                pcie_width_max=g.get("pcie.link.width.max"),
                ecc_uncorrectable_volatile=g.get("ecc.errors.uncorrected.volatile.total"),
                remap_pending=_flag(g.get("remapped_rows.pending")),
                remap_failure=_flag(g.get("remapped_rows.failure")),
            )
        )
    return out


def _views_xml(x: SmiXml) -> list[GpuView]:
    return [
        GpuView(
            index=g.index,
            bus_id=g.bus_id,
            uuid=g.uuid,
            name=g.name,
            driver=x.driver_version,
            persistence=g.persistence_mode,
            pcie_gen_max=g.pcie_gen_max,
            pcie_width_current=g.pcie_width_current,
            pcie_width_max=g.pcie_width_max,
            ecc_uncorrectable_volatile=g.ecc_uncorrectable_volatile,
            remap_pending=g.remapped_rows_pending,
            remap_failure=g.remapped_rows_failure,
            fabric_state=g.fabric_state,
            fabric_status=g.fabric_status,
            fabric_clique=g.fabric_clique_id,
            fabric_cluster=g.fabric_cluster_uuid,
            fabric_health=g.fabric_health,
        )
        for g in x.gpus
    ]


def check_gpu_query(
    parsed: SmiQuery,
    profile: Profile,
    *,
    node: str | None = None,
    driver_version: str | None = None,
) -> list[Finding]:
    return _check(_views_query(parsed), profile, node, driver_version)


def check_gpu_xml(
    parsed: SmiXml,
    profile: Profile,
    *,
    node: str | None = None,
    driver_version: str | None = None,
) -> list[Finding]:
    return _check(_views_xml(parsed), profile, node, driver_version)


def _check(
    gpus: list[GpuView], profile: Profile, node: str | None, driver_version: str | None
) -> list[Finding]:
    out: list[Finding] = []
    out.extend(_count_findings([g.index for g in gpus], profile.gpu.count, profile.name, node))
    for g in gpus:
        subj = Subject(node=node, gpu=g.index, gpu_uuid=g.uuid, bus_id=g.bus_id)
        bad = _identity(g, profile, driver_version, subj) + _health(g, profile, subj)
        out.extend(bad or [Finding("GPU-OK", Status.OK, subj, "healthy")])
    return out


def _fail(
    subj: Subject, code: str, msg: str, obs: Any, exp: Any, fix: str, unit: str | None = None
) -> Finding:
    return Finding(code, Status.FAIL, subj, msg, obs, exp, unit, fix)


def _identity(
    g: GpuView, profile: Profile, driver_version: str | None, subj: Subject
) -> list[Finding]:
    """Is it the GPU the profile describes, on the pinned driver, persistent."""
    spec = profile.gpu
    bad: list[Finding] = []
    if g.name is not None and g.name.lower() != spec.model.lower():
        bad.append(
            _fail(
                subj,
                "GPU-002",
                f"model {g.name!r}, expected {spec.model!r}",
                g.name,
                spec.model,
                "wrong SKU for this profile: fix rackops_profile or the hardware",
            )
        )
    if driver_version and g.driver and g.driver != driver_version:
        bad.append(
            _fail(
                subj,
                "GPU-003",
                f"driver {g.driver}, pinned {driver_version}",
                g.driver,
                driver_version,
                "run the nvidia_driver role to install the pinned version",
            )
        )
    if g.persistence is not None and g.persistence.lower() != "enabled":
        bad.append(
            _fail(
                subj,
                "GPU-004",
                f"persistence mode {g.persistence}, expected Enabled (C-32)",
                g.persistence,
                "Enabled",
                "enable nvidia-persistenced",
            )
        )
    return bad


def _health(g: GpuView, profile: Profile, subj: Subject) -> list[Finding]:
    """Memory errors and remapping, the PCIe link, and the NVSwitch fabric."""
    spec, t = profile.gpu, profile.thresholds
    bad: list[Finding] = []
    if (g.ecc_uncorrectable_volatile or 0) > t.ecc_uncorrectable_volatile_max:
        bad.append(
            _fail(
                subj,
                "GPU-005",
                f"{g.ecc_uncorrectable_volatile} uncorrectable ECC errors "
                f"(volatile) > {t.ecc_uncorrectable_volatile_max} allowed (C-34)",
                g.ecc_uncorrectable_volatile,
                t.ecc_uncorrectable_volatile_max,
                "drain the node and run dcgmi diag -r 3; RMA if it recurs",
                "errors",
            )
        )
    if g.remap_pending and t.remapped_rows_pending_max == 0:
        bad.append(
            _fail(
                subj,
                "GPU-006",
                "row remapping pending (C-34)",
                True,
                False,
                "reset the GPU (nvidia-smi -r) or reboot to apply the remap",
            )
        )
    if g.remap_failure and t.remapped_rows_failure_max == 0:
        bad.append(
            _fail(
                subj,
                "GPU-007",
                "row remapping failed: no spare rows left (C-34)",
                True,
                False,
                "RMA the GPU",
            )
        )
    if g.pcie_gen_max is not None and g.pcie_gen_max < spec.pcie_gen:
        bad.append(
            _fail(
                subj,
                "GPU-008",
                f"PCIe max link Gen{g.pcie_gen_max}, expected Gen{spec.pcie_gen}",
                g.pcie_gen_max,
                spec.pcie_gen,
                "check BIOS PCIe settings and the riser",
            )
        )
    width_max = g.pcie_width_max or spec.pcie_width
    if g.pcie_width_current is not None and g.pcie_width_current < width_max:
        bad.append(
            _fail(
                subj,
                "GPU-008",
                f"PCIe link x{g.pcie_width_current}, expected x{width_max}",
                g.pcie_width_current,
                width_max,
                "lanes lost: reseat the GPU/baseboard cable",
                "lanes",
            )
        )
    return bad + _fabric(g, profile, subj)


ZERO_UUID = "00000000-0000-0000-0000-000000000000"
_HEALTH_FIX = (
    "the GPU's NVLink fabric is degraded: read the NVLink switch trays' fabric (NMX) for this "
    "GPU's links and the first NVLink Xid in this node's kernel log; reset the GPU once the "
    "link is fixed"
)


def _fabric(g: GpuView, profile: Profile, subj: Subject) -> list[Finding]:
    """The NVLink fabric as the GPU sees it: joined (Completed/Success), in the partition of
    a multi-node NVLink domain (a clique and a cluster UUID, never 0 and zeros there), and
    healthy where the driver prints health (R560+). On an HGX node a clique of 0 and a zero
    UUID are what a healthy node-local NVSwitch prints."""
    spec = profile.gpu
    domain = spec.nvlink_domain > 0
    if g.fabric_state is None or not (spec.nvswitch or domain):
        return []
    joined = g.fabric_state == "Completed" and (g.fabric_status or "") == "Success"
    if not joined:
        fix = (
            "the fabric is configured from the NVLink switch trays (NMX / fabric manager) "
            "before the compute trays boot: check the switch trays' fabric for this tray, "
            "then reboot the tray"
            if domain
            else "start nvidia-fabricmanager at the driver's exact version"
        )
        return [
            _fail(
                subj,
                "GPU-009",
                f"fabric state {g.fabric_state}/{g.fabric_status}, expected "
                f"Completed/Success ({'NVLink domain' if domain else 'C-28'})",
                f"{g.fabric_state}/{g.fabric_status}",
                "Completed/Success",
                fix,
            )
        ]
    bad: list[Finding] = []
    if domain and (not g.fabric_clique or g.fabric_cluster in (None, ZERO_UUID)):
        bad.append(
            _fail(
                subj,
                "GPU-011",
                f"in no NVLink partition: clique {g.fabric_clique}, cluster UUID "
                f"{g.fabric_cluster} (profile {profile.name}: a {spec.nvlink_domain}-GPU domain)",
                f"{g.fabric_clique}/{g.fabric_cluster}",
                "a clique and cluster UUID",
                "the tray is not in the domain's NVLink partition: check its partition on the "
                "NVLink switch trays (NMX), then reboot the tray",
                "partition",
            )
        )
    h = g.fabric_health
    if h is None:
        return bad
    wrong = [
        f"summary {h.summary}" if h.summary not in (None, "Healthy") else "",
        f"bandwidth {h.bandwidth}" if h.bandwidth not in (None, "Full") else "",
        "route unhealthy" if h.route_unhealthy else "",
        f"incorrect configuration {h.incorrect_configuration}"
        if h.incorrect_configuration not in (None, "None")
        else "",
    ]
    if any(wrong):
        why = ", ".join(w for w in wrong if w)
        bad.append(
            _fail(subj, "GPU-012", f"NVLink fabric health: {why}", why, "Healthy", _HEALTH_FIX)
        )
    recovering = [
        w
        for w, on in (
            ("route recovery in progress", h.route_recovery_in_progress),
            ("access timeout recovery", h.access_timeout_recovery),
        )
        if on
    ]
    if recovering:
        bad.append(
            Finding(
                "GPU-012",
                Status.WARN,
                subj,
                f"NVLink fabric recovering: {', '.join(recovering)}",
                ", ".join(recovering),
                "none",
                remediation="read nvidia-smi -q Fabric again once it settles; a recovery that "
                "does not end is a link to fix on the NVLink switch trays",
            )
        )
    return bad


def _no_nvlink(profile: Profile, node: str | None) -> list[Finding]:
    """``nvidia-smi nvlink -s`` printed nothing (exit 0): no GPU has an NVLink. OK where the
    profile expects none; else every GPU the profile has FAILs with its links missing."""
    spec = profile.gpu
    if spec.nvlink_links == 0:
        return [
            Finding(
                "GPU-010",
                Status.OK,
                Subject(node=node),
                f"no NVLink, as profile {profile.name} expects (nvidia-smi nvlink lists none)",
                0,
                0,
                "links",
            )
        ]
    return [
        Finding(
            "GPU-010",
            Status.FAIL,
            Subject(node=node, gpu=i),
            f"GPU {i}: no NVLink at all (nvidia-smi nvlink -s lists none), profile "
            f"{profile.name} has {spec.nvlink_links} per GPU",
            0,
            spec.nvlink_links,
            "links",
            "check the fabric manager is running (systemctl status nvidia-fabricmanager) and "
            "the NVSwitch baseboard is seen (nvidia-smi -q | grep -i fabric); reset the GPUs; "
            "if no link comes up, the baseboard needs service",
        )
        for i in range(spec.count)
    ]


def _count_findings(present: list[int], want: int, profile: str, node: str | None) -> list[Finding]:
    """GPU count against the profile; a missing index is named as the subject."""
    if len(present) == want:
        return []
    missing = sorted(set(range(want)) - set(present))
    fix = "a GPU fell off the bus: check dmesg for Xid 79, reseat, or RMA"
    if missing and len(present) + len(missing) == want:
        return [
            Finding(
                "GPU-001",
                Status.FAIL,
                Subject(node=node, gpu=i),
                f"GPU {i} is missing: {len(present)} GPUs visible, profile {profile} has {want}",
                "absent",
                "present",
                None,
                fix,
            )
            for i in missing
        ]
    return [
        Finding(
            "GPU-001",
            Status.FAIL,
            Subject(node=node),
            f"{len(present)} GPUs visible, profile {profile} has {want}",
            len(present),
            want,
            "GPUs",
            fix,
        )
    ]


def check_nvlink(parsed: SmiNvlink, profile: Profile, *, node: str | None = None) -> list[Finding]:
    spec = profile.gpu
    if parsed.no_nvlink:
        return _no_nvlink(profile, node)
    listed = min((len(g.links) for g in parsed.gpus), default=0)
    short = parsed.complete and spec.nvlink_links > 0 and listed < spec.nvlink_links
    if not parsed.complete or short:
        # nvidia-smi lists every link of a GPU, an inactive one as <inactive>: a GPU listing
        # fewer than the profile's links is an output cut or garbled, not links found down
        why = "; ".join(parsed.errors[:2]) or (
            f"each GPU lists {listed} links, profile {profile.name} has {spec.nvlink_links}"
            if short
            else "the GPU and link lines are not the whole listing nvidia-smi prints (cut?)"
        )
        return [
            Finding(
                "GPU-000",
                Status.ERROR,
                Subject(node=node),
                f"nvidia-smi nvlink output is incomplete: {why}",
                None,
                None,
                None,
                "rerun nvidia-smi nvlink -s; check the driver and fabric manager are up",
            )
        ]
    out = _count_findings([g.index for g in parsed.gpus], spec.count, profile.name, node)
    for g in parsed.gpus:
        subj = Subject(node=node, gpu=g.index, gpu_uuid=g.uuid)
        active = [link for link in g.links if link.active]
        if len(active) < spec.nvlink_links:
            down = [str(link.link) for link in g.links if not link.active]
            out.append(
                Finding(
                    "GPU-010",
                    Status.FAIL,
                    subj,
                    f"{len(active)} of {spec.nvlink_links} NVLinks active"
                    + (f" (inactive: {', '.join(down)})" if down else ""),
                    len(active),
                    spec.nvlink_links,
                    "links",
                    "reset the GPU; if links stay down, the baseboard needs service",
                )
            )
        else:
            out.append(Finding("GPU-OK", Status.OK, subj, f"{len(active)} NVLinks active"))
    return out
