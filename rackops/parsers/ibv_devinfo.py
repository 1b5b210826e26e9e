"""``ibv_devinfo [-d dev] [-v]`` (rdma-core libibverbs/examples/devinfo.c).

Sample (rdma-core; MLNX_OFED 4.x uses tabs, both parse)::

    hca_id: mlx5_0
        transport:          InfiniBand (0)
        fw_ver:             28.39.1002
        ...
        phys_port_cnt:          1
                port:   1
                        state:          PORT_ACTIVE (4)
                        max_mtu:        4096 (5)
                        active_mtu:     4096 (5)
                        ...
                        link_layer:     InfiniBand

``No IB devices found`` parses to no HCAs with that message in ``errors``.
RoCE on a 1500-MTU netdev shows ``active_mtu: 1024 (3)``: a configuration
finding for the checks, not a parse problem.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rackops.parsers._common import ParseError, to_int


@dataclass(frozen=True)
class DevinfoPort:
    port: int
    state: str | None
    state_code: int | None
    max_mtu: int | None
    active_mtu: int | None
    sm_lid: int | None
    port_lid: int | None
    link_layer: str | None
    physical_state: str | None
    active_width: str | None
    active_speed: str | None
    gids: tuple[str, ...]


@dataclass(frozen=True)
class DevinfoHca:
    hca_id: str
    transport: str | None
    fw_ver: str | None
    node_guid: str | None
    sys_image_guid: str | None
    vendor_id: str | None
    vendor_part_id: int | None
    board_id: str | None
    phys_port_cnt: int | None
    ports: tuple[DevinfoPort, ...]


@dataclass(frozen=True)
class IbvDevinfo:
    hcas: tuple[DevinfoHca, ...]
    complete: bool
    errors: tuple[str, ...]


_CODE = re.compile(r"^(.*?)\s*\((\d+)\)\s*$")
_GID = re.compile(r"^GID\[\s*(\d+)\]:\s*([^,\s]+)")


def _value_code(value: str | None) -> tuple[str | None, int | None]:
    if value is None:
        return None, None
    m = _CODE.match(value)
    return (m.group(1), int(m.group(2))) if m else (value, None)


def _mtu(value: str | None) -> int | None:
    text, _ = _value_code(value)
    return to_int(text) if text else None


def parse_ibv_devinfo(text: str) -> IbvDevinfo:
    hcas: list[DevinfoHca] = []
    errors: list[str] = []
    cur: dict[str, str] | None = None
    ports: list[tuple[int, dict[str, str], list[str]]] = []
    complete = True

    def close() -> None:
        nonlocal cur, ports, complete
        if cur is None:
            return
        built = []
        for num, kv, gids in ports:
            if "state" not in kv or "link_layer" not in kv:
                complete = False
            state, code = _value_code(kv.get("state"))
            phys, _ = _value_code(kv.get("phys_state"))
            width, _ = _value_code(kv.get("active_width"))
            speed, _ = _value_code(kv.get("active_speed"))
            built.append(
                DevinfoPort(
                    port=num,
                    state=state,
                    state_code=code,
                    max_mtu=_mtu(kv.get("max_mtu")),
                    active_mtu=_mtu(kv.get("active_mtu")),
                    sm_lid=to_int(kv.get("sm_lid")),
                    port_lid=to_int(kv.get("port_lid")),
                    link_layer=kv.get("link_layer"),
                    physical_state=phys,
                    active_width=width,
                    active_speed=speed,
                    gids=tuple(gids),
                )
            )
        declared = to_int(cur.get("phys_port_cnt"))
        if declared is not None and len(built) < declared:
            complete = False
        hcas.append(
            DevinfoHca(
                hca_id=cur["hca_id"],
                transport=cur.get("transport"),
                fw_ver=cur.get("fw_ver"),
                node_guid=cur.get("node_guid"),
                sys_image_guid=cur.get("sys_image_guid"),
                vendor_id=cur.get("vendor_id"),
                vendor_part_id=to_int(cur.get("vendor_part_id")),
                board_id=cur.get("board_id"),
                phys_port_cnt=declared,
                ports=tuple(built),
            )
        )
        cur, ports = None, []

    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if line.lower().startswith(("no ib devices found", "failed to", "couldn't")):
            errors.append(line)
            continue
        if m := _GID.match(line):
            if ports:
                ports[-1][2].append(m.group(2))
            continue
        key, sep, value = line.partition(":")
        if not sep:
            if cur is not None:
                complete = False
                errors.append(line)
            continue
        key, value = key.strip(), value.strip()
        if key == "hca_id":
            close()
            cur = {"hca_id": value}
        elif cur is None:
            continue
        elif key == "port":
            ports.append((int(value), {}, []))
        elif ports:
            ports[-1][1][key] = value
        else:
            cur[key] = value
    close()
    if not hcas and not errors:
        raise ParseError("no 'hca_id:' block: this is not ibv_devinfo output")
    return IbvDevinfo(tuple(hcas), complete, tuple(errors))
