"""HCA ports of the compute fabric: state, physical state, rate, width, link layer, MTU.

Only the HCAs the cabling map names belong to the gate; a storage NIC or a
BlueField beside them is not judged. Without a cabling map, the HCAs whose link
layer matches the profile are judged and their count is checked.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rackops.findings import Finding, Status, Subject
from rackops.inventory.model import Hca
from rackops.parsers.ibstat import Ibstat
from rackops.parsers.ibstatus import Ibstatus
from rackops.parsers.ibv_devinfo import IbvDevinfo
from rackops.profiles import Profile

_WIDTH = {"1X": 1, "2X": 2, "4X": 4, "8X": 8, "12X": 12}


@dataclass(frozen=True)
class PortView:
    device: str
    port: int
    state: str | None
    physical_state: str | None
    rate_gbps: float | None
    width: str | None
    link_layer: str | None
    active_mtu: int | None


def _views(parsed: Ibstat | Ibstatus | IbvDevinfo) -> list[PortView]:
    if isinstance(parsed, Ibstat):
        return [
            PortView(
                ca.name or "?",
                p.port,
                p.state,
                p.physical_state,
                p.rate_gbps,
                None,
                p.link_layer,
                None,
            )
            for ca in parsed.cas
            for p in ca.ports
        ]
    if isinstance(parsed, Ibstatus):
        return [
            PortView(
                p.device,
                p.port,
                p.state,
                p.physical_state,
                p.rate_gbps,
                p.width,
                p.link_layer,
                None,
            )
            for p in parsed.ports
        ]
    return [
        PortView(
            h.hca_id,
            p.port,
            p.state,
            p.physical_state,
            None,
            p.active_width,
            p.link_layer,
            p.active_mtu,
        )
        for h in parsed.hcas
        for p in h.ports
    ]


def _active(state: str | None) -> bool:
    return (state or "").upper() in ("ACTIVE", "PORT_ACTIVE")


def _linkup(phys: str | None) -> bool:
    return (phys or "").replace("_", "").upper() == "LINKUP"


def check_hca_ports(
    parsed: Ibstat | Ibstatus | IbvDevinfo,
    profile: Profile,
    *,
    node: str | None = None,
    hcas: Sequence[Hca] | None = None,
) -> list[Finding]:
    tool = type(parsed).__name__.lower()
    findings: list[Finding] = []
    parse_errors: tuple[str, ...] = tuple(
        e for e in getattr(parsed, "errors", ()) if not e.startswith("No IB devices found")
    )  # "no devices" is an observation (zero HCAs), judged below as missing HCAs
    if not parsed.complete or parse_errors:
        errors = "; ".join(parse_errors) or "output cut short"
        findings.append(
            Finding(
                "HCA-000",
                Status.ERROR,
                Subject(node=node),
                f"{tool} output is incomplete ({errors}); the ports it did print are not judged",
                remediation="rerun the tool; check that the driver (openibd) is loaded and "
                "every /sys/class/infiniband device is readable",
            )
        )
        return findings
    views = _views(parsed)
    want = profile.hca
    wanted: list[tuple[str, Hca | None]]
    if hcas is not None:
        wanted = [(h.device, h) for h in hcas]
    else:
        wanted = [(v.device, None) for v in views if v.link_layer == want.link_layer]
        if len(wanted) != want.count:
            findings.append(
                Finding(
                    "HCA-001",
                    Status.FAIL,
                    Subject(node=node),
                    f"{len(wanted)} {want.link_layer} HCA ports found, profile {profile.name} has "
                    f"{want.count}",
                    observed=len(wanted),
                    expected=want.count,
                    unit="ports",
                    remediation="reseat or replace the missing HCA; check 'lspci | grep Mellanox'",
                )
            )
    by_device = {v.device: v for v in views}
    for device, hca in wanted:
        subj = Subject(
            node=node,
            hca=device,
            port=1,
            switch=hca.switch if hca else None,
            switch_port=hca.port if hca else None,
        )
        v = by_device.get(device)
        if v is None:
            findings.append(
                Finding(
                    "HCA-001",
                    Status.FAIL,
                    subj,
                    f"{device} is in the cabling map but not in the {tool} output",
                    observed="absent",
                    expected="present",
                    remediation="check the HCA is seated and its driver bound (lspci, dmesg)",
                )
            )
            continue
        subj = Subject(
            node=node, hca=device, port=v.port, switch=subj.switch, switch_port=subj.switch_port
        )
        problems = _port_problems(v, profile)
        findings.extend(
            Finding(
                code,
                Status.FAIL,
                subj,
                msg,
                observed=obs,
                expected=exp,
                unit=unit,
                remediation=fix,
                action=action,
            )
            for code, msg, obs, exp, unit, fix, action in problems
        )
        if not problems:
            findings.append(
                Finding(
                    "HCA-OK",
                    Status.OK,
                    subj,
                    f"{v.state}/{v.physical_state} {v.rate_gbps or ''} {v.link_layer}".replace(
                        "  ", " "
                    ),
                )
            )
    return findings


def _port_problems(
    v: PortView, profile: Profile
) -> list[tuple[str, str, object, object, str | None, str, str]]:
    """Each problem of a port: code, message, observed, expected, unit, fix, fix group."""
    want = profile.hca
    out: list[tuple[str, str, object, object, str | None, str, str]] = []
    cable = "reseat or replace the cable/transceiver at both ends, then the switch port"
    if not _active(v.state):
        out.append(
            (
                "HCA-002",
                f"port state {v.state}, expected Active",
                v.state,
                "Active",
                None,
                cable
                if not _linkup(v.physical_state)
                else "link is up but not Active: check the subnet manager (sminfo)",
                "cable" if not _linkup(v.physical_state) else "switch",
            )
        )
    if not _linkup(v.physical_state) and v.physical_state is not None:
        out.append(
            (
                "HCA-003",
                f"physical state {v.physical_state}, expected LinkUp",
                v.physical_state,
                "LinkUp",
                None,
                "Disabled: enable the switch port; Polling: no link partner — " + cable,
                "cable",
            )
        )
    if _active(v.state) and v.rate_gbps is not None and v.rate_gbps < want.rate_gbps:
        out.append(
            (
                "HCA-004",
                f"rate {v.rate_gbps:g} Gb/s, expected {want.rate_gbps} Gb/s",
                v.rate_gbps,
                want.rate_gbps,
                "Gb/s",
                "link trained below speed: " + cable + "; check the port speed setting",
                "cable",
            )
        )
    if _active(v.state) and v.width and _WIDTH.get(v.width, 0) < _WIDTH[want.width]:
        out.append(
            (
                "HCA-005",
                f"width {v.width}, expected {want.width}",
                v.width,
                want.width,
                None,
                "lanes lost: " + cable,
                "cable",
            )
        )
    if v.link_layer is not None and v.link_layer != want.link_layer:
        out.append(
            (
                "HCA-006",
                f"link layer {v.link_layer}, expected {want.link_layer}",
                v.link_layer,
                want.link_layer,
                None,
                "set the port type with mlxconfig LINK_TYPE_P1 and reboot",
                "node",
            )
        )
    if _active(v.state) and v.active_mtu is not None and v.active_mtu < want.active_mtu:
        out.append(
            (
                "HCA-007",
                f"active MTU {v.active_mtu}, expected {want.active_mtu}",
                v.active_mtu,
                want.active_mtu,
                "bytes",
                "RoCE: netdev MTU must be >= 4192 (C-23); IB: SM partition mtu=5 (C-24)",
                "node",
            )
        )
    return out
