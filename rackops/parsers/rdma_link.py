"""``rdma link show`` (iproute2): every RDMA port's state, and its netdev on RoCE.

Forms::

    link mlx5_0/1 state ACTIVE physical_state LINK_UP netdev p1p1            (RoCE, iproute2 ≥ 5.5)
    link mlx5_7/1 subnet_prefix fe80:0000:0000:0000 lid 3403 sm_lid 1 lmc 0 state ACTIVE
        physical_state LINK_UP                                                  (InfiniBand)
    1/1: mlx5_0/1: state ACTIVE physical_state LINK_UP netdev ens1f0           (iproute2 4.13–5.4)
    [{"ifindex":0,"ifname":"mlx5_0","port":1,"state":"ACTIVE",...}]           (rdma -j link)

Every field is ``key value`` and each line ends in a space. A line cut before or inside its
``physical_state`` (a state name the kernel does not have) makes the result ``complete: false``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from rackops.docload import load_json
from rackops.parsers._common import ParseError, to_int


@dataclass(frozen=True)
class RdmaLink:
    device: str
    port: int
    state: str | None  # ACTIVE | DOWN | INIT | ARMED
    physical_state: str | None  # LINK_UP | POLLING | DISABLED | ...
    netdev: str | None
    lid: int | None
    sm_lid: int | None


@dataclass(frozen=True)
class RdmaLinks:
    links: tuple[RdmaLink, ...]
    complete: bool
    errors: tuple[str, ...]


STATES = {"NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER"}
PHYS_STATES = {
    "NOP",
    "SLEEP",
    "POLLING",
    "DISABLED",
    "PORT_CONFIGURATION_TRAINING",
    "LINK_UP",
    "LINK_ERROR_RECOVERY",
    "PHY_TEST",
}
_HEAD = re.compile(r"^(?:link\s+|\d+/\d+:\s+)(\S+?)/(\d+):?\s*(.*)$")


def parse_rdma_link(text: str) -> RdmaLinks:
    stripped = text.strip()
    if stripped.startswith("["):
        return _json(stripped)
    links: list[RdmaLink] = []
    complete = True
    errors: list[str] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        m = _HEAD.match(line)
        if not m:
            if links or "error" in line.lower() or "failed" in line.lower():
                errors.append(line)
                continue
            raise ParseError(f"not rdma link output: {line!r}")
        words = m.group(3).split()
        kv = dict(zip(words[::2], words[1::2], strict=False))
        if (
            len(words) % 2
            or kv.get("state") not in STATES
            or kv.get("physical_state") not in PHYS_STATES
        ):
            complete = False  # cut before or inside the states
        links.append(
            RdmaLink(
                m.group(1),
                int(m.group(2)),
                kv.get("state"),
                kv.get("physical_state"),
                kv.get("netdev"),
                to_int(kv["lid"]) if "lid" in kv else None,
                to_int(kv["sm_lid"]) if "sm_lid" in kv else None,
            )
        )
    if not links:
        raise ParseError("no 'link DEV/PORT' lines" + (f": {errors[-1]}" if errors else ""))
    return RdmaLinks(tuple(links), complete, tuple(errors))


def _json(text: str) -> RdmaLinks:
    try:
        doc: Any = load_json(text)
    except ValueError as exc:
        raise ParseError(f"rdma -j link JSON does not parse (cut off?): {exc}") from exc
    if not isinstance(doc, list):
        raise ParseError("rdma -j link: expected a JSON array")
    out = []
    for e in doc:
        if not isinstance(e, dict) or "ifname" not in e:
            raise ParseError("rdma -j link: an entry has no ifname")
        name = str(e["ifname"])
        dev, _, port = name.partition("/")  # before iproute2 5.5: "mlx5_0/1"
        out.append(
            RdmaLink(
                dev,
                int(e.get("port") or port or 1),
                e.get("state"),
                e.get("physical_state"),
                e.get("netdev"),
                e.get("lid"),
                e.get("sm_lid"),
            )
        )
    return RdmaLinks(tuple(out), True, ())
