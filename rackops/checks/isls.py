"""An inter-switch link judged by what its leaf end says of it — up, which switch and port
are at the other end, at what rate — whatever said it: an InfiniBand sweep's net_dump row
(:mod:`rackops.checks.ibfabric`) or a RoCE leaf's own LLDP and interface status
(:mod:`rackops.checks.switchports`). One set of findings for both fabrics, each naming the
link by its leaf end and its designed far end (``Subject.peer``), so a fault seen at either
end, or by counters, is one ``isl`` culprit.
"""

from __future__ import annotations

from dataclasses import dataclass

from rackops.findings import Finding, Status, Subject
from rackops.inventory.model import Switch, Uplink


@dataclass(frozen=True)
class LeafEnd:
    """What the leaf's uplink port says. ``far_port_ok`` None: the far port cannot be told
    (a neighbour that sends a MAC for its port ID)."""

    up: bool
    state: str  # as printed ("ACT", "down", ...)
    far: str | None  # the far switch's short name, None when no neighbour was seen
    far_port: str | None  # the far port as the report names it: "port Ethernet8", "IB port 5"
    far_port_ok: bool | None
    rate_gbps: float | None
    rate_text: str  # how the rate was printed ("4x at 50 Gb/s a lane", "200G")


def subject(leaf: Switch, up: Uplink) -> Subject:
    return Subject(switch=leaf.name, switch_port=up.port, peer=f"{up.spine} port {up.spine_port}")


def where(leaf: Switch, up: Uplink) -> str:
    return f"{leaf.name} port {up.port} ↔ {up.spine} port {up.spine_port}"


def judge_isl(leaf: Switch, up: Uplink, end: LeafEnd | None, far_short: str) -> Finding:
    """The ISL's verdict from its leaf end: down, in another switch or port than designed,
    below its design rate, or up as designed. ``far_short``: the designed spine's short name."""
    subj, here = subject(leaf, up), where(leaf, up)
    if end is None or not end.up:
        state = "not seen" if end is None else end.state
        return Finding(
            "ISL-DOWN",
            Status.FAIL,
            subj,
            f"ISL {here}: the leaf port is {state}",
            remediation=f"reseat or replace the cable from {leaf.name} port {up.port} to "
            f"{up.spine} port {up.spine_port}; check both ports are enabled",
            action="cable",
        )
    if end.far is None:
        return Finding(
            "ISL-UNVERIFIED",
            Status.WARN,
            subj,
            f"ISL {here}: up, but no LLDP neighbour on the leaf port: where its other end "
            "lands is not verified",
            remediation="enable LLDP on both switches (it names each ISL's far end)",
        )
    if end.far != far_short or end.far_port_ok is False:
        return Finding(
            "ISL-MISCABLED",
            Status.FAIL,
            subj,
            f"ISL {here}: the cable from {leaf.name} port {up.port} is in {end.far[:64]} "
            f"{(end.far_port or 'port ?')[:64]}, not {up.spine} port {up.spine_port}",
            remediation=f"move the cable to {up.spine} port {up.spine_port}, as designed",
            observed={"neighbor": end.far[:64], "neighbor_port": (end.far_port or "")[:64]},
            action="cable",
        )
    want = float(leaf.uplink_speed(up))
    if end.rate_gbps is None:
        return Finding(
            "ISL-RATE",
            Status.ERROR,
            subj,
            f"ISL {here}: its rate cannot be read ({end.rate_text[:64]}); not judged",
            action="cable",
        )
    if end.rate_gbps < want:
        return Finding(
            "ISL-RATE",
            Status.FAIL,
            subj,
            f"ISL {here}: trained at {end.rate_gbps:g} Gb/s ({end.rate_text[:64]}), the design "
            f"says {want:g} Gb/s",
            remediation="check the cable and both ports' enabled speeds; replace the cable "
            "(a degraded lane trains a link down)",
            observed={"rate_gbps": end.rate_gbps},
            action="cable",
        )
    if end.far_port_ok is None:
        return Finding(
            "ISL-UNVERIFIED",
            Status.WARN,
            subj,
            f"ISL {here}: up at {end.rate_gbps:g} Gb/s to {up.spine}, whose LLDP port ID "
            f"({(end.far_port or '?')[:64]}) does not name a port: the far port is not verified",
            remediation="set the spine's LLDP port ID to the interface name",
        )
    return Finding("ISL-OK", Status.OK, subj, f"ISL {here}: up at {end.rate_gbps:g} Gb/s")
