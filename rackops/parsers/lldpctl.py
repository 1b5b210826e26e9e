"""``lldpctl`` (lldpd): the LLDP neighbour of each interface, in every output form.

Forms read (all print the same facts):

* ``-f json`` (lldpd ≥ 0.9): ``{"lldp": {"interface": {IF: {...}}}}`` for one interface and
  ``{"lldp": {"interface": [{IF: {...}}, ...]}}`` for several; ``chassis`` is keyed by the
  system name (``{"leaf-r1": {"id": ...}}``) or, when the neighbour sends none, holds
  ``id``/``descr`` directly; ``{"lldp": {}}`` with no neighbours;
* ``-f json0`` (stable since 0.9.8): every value wrapped in ``[{"value": ...}]``;
* ``-f keyvalue``: ``lldp.IF.chassis.name=leaf-r1``, ``lldp.IF.port.ifname=Ethernet16``;
* the default text (``Interface: IF, via: LLDP, ...`` / ``SysName:`` / ``PortID: ifname X``);
* ``unable to connect to socket`` / ``Unable to connect to lldpd daemon`` → ParseError
  (the daemon is not running: nothing is known, which is not "no neighbours").

A JSON document that does not close (cut off) raises ParseError; a text listing whose last
block has no closing dashes is ``complete: false``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from rackops.docload import load_json
from rackops.parsers._common import ParseError


@dataclass(frozen=True)
class Neighbour:
    interface: str  # the local interface that hears it
    chassis_name: str | None  # SysName: the switch
    chassis_id: str | None
    port_id: str | None  # PortID value: the switch port (ifname, local name, or a MAC)
    port_id_type: str | None  # ifname | local | mac | ...
    port_descr: str | None
    via: str | None  # LLDP | CDPv2 | ...


@dataclass(frozen=True)
class Lldp:
    neighbours: tuple[Neighbour, ...]
    complete: bool
    errors: tuple[str, ...]

    def of(self, interface: str) -> list[Neighbour]:
        return [n for n in self.neighbours if n.interface == interface]


_DOWN = re.compile(r"unable to connect to (?:socket|lldpd daemon)", re.IGNORECASE)


def parse_lldpctl(text: str) -> Lldp:
    down = [line.strip() for line in text.splitlines() if _DOWN.search(line)]
    if down:
        raise ParseError(f"lldpd is not running: {down[-1]}")
    stripped = text.strip()
    if stripped.startswith("{"):
        try:
            doc = load_json(stripped)
        except ValueError as exc:
            raise ParseError(f"lldpctl JSON does not parse (cut off?): {exc}") from exc
        return _json(doc)
    if re.match(r"^lldp\.\S+?\.", stripped):
        return _keyvalue(stripped)
    if "LLDP neighbors:" in text or re.search(r"^Interface:\s", text, re.MULTILINE):
        return _text(text)
    raise ParseError("not lldpctl output (no JSON, key=value or 'LLDP neighbors:' listing)")


def _result(out: list[Neighbour], closed: bool = True, errors: tuple[str, ...] = ()) -> Lldp:
    """lldpd prints a chassis id and a port id for every neighbour (both TLVs are mandatory
    in LLDP, and lldpd drops a frame without them): a neighbour lacking either is a cut or
    garbled capture, never a complete one."""
    missing = [
        f"{n.interface}: no {'chassis id' if not n.chassis_id else 'port id'}"
        for n in out
        if not n.chassis_id or not n.port_id
    ]
    return Lldp(tuple(out), closed and not missing, errors + tuple(missing))


# ---------------------------------------------------------------------------- JSON


def _unwrap(v: Any) -> Any:
    """json0 wraps every value: ``[{"value": x}]`` → x; ``[{...}]`` → {...}."""
    while isinstance(v, list) and len(v) == 1:
        v = v[0]
    if isinstance(v, dict) and set(v) == {"value"}:
        return v["value"]
    return v


def _id(v: Any) -> tuple[str | None, str | None]:
    v = _unwrap(v)
    if isinstance(v, dict):
        value = _unwrap(v.get("value"))
        return (str(value) if value is not None else None), v.get("type")
    return (str(v) if v is not None else None), None


def _interfaces(lldp: Any) -> list[tuple[str, dict[str, Any]]]:
    lldp = _unwrap(lldp)
    if lldp in ({}, [], None, ""):
        return []
    if not isinstance(lldp, dict) or "interface" not in lldp:
        raise ParseError("lldpctl JSON has no 'interface' list under 'lldp'")
    ifs = lldp["interface"]
    items = ifs if isinstance(ifs, list) else [ifs]
    out = []
    for item in items:
        if not isinstance(item, dict):
            raise ParseError("lldpctl JSON: an interface entry is not an object")
        if "name" in item:  # json0: {"name": IF, ...}
            out.append((str(_unwrap(item["name"])), item))
        else:  # json: {IF: {...}} (one key per interface)
            out += [(str(k), v) for k, v in item.items() if isinstance(v, dict)]
    return out


def _chassis(ch: Any) -> tuple[str | None, str | None]:
    ch = _unwrap(ch)
    if not isinstance(ch, dict):
        return None, None
    if "id" in ch or "name" in ch or "descr" in ch:  # no system name, or json0
        name = _unwrap(ch.get("name"))
        return (str(name) if name is not None else None), _id(ch.get("id"))[0]
    if len(ch) == 1:  # keyed by the system name
        ((name, body),) = ch.items()
        return str(name), _id(_unwrap(body).get("id") if isinstance(body, dict) else None)[0]
    raise ParseError("lldpctl JSON: chassis is neither keyed by a name nor has an id")


def _json(doc: Any) -> Lldp:
    if not isinstance(doc, dict) or "lldp" not in doc:
        raise ParseError("lldpctl JSON has no top-level 'lldp'")
    out = []
    for ifname, body in _interfaces(doc["lldp"]):
        name, cid = _chassis(body.get("chassis"))
        port = _unwrap(body.get("port")) or {}
        pid, ptype = _id(port.get("id")) if isinstance(port, dict) else (None, None)
        descr = _unwrap(port.get("descr")) if isinstance(port, dict) else None
        via = _unwrap(body.get("via"))
        out.append(
            Neighbour(
                ifname,
                name,
                cid,
                pid,
                ptype,
                str(descr) if descr is not None else None,
                str(via) if via is not None else None,
            )
        )
    return _result(out)


# ---------------------------------------------------------------------------- keyvalue

_KV = re.compile(r"^lldp\.([^.=]+)\.(.+?)=(.*)$")
_ID_TYPES = ("mac", "local", "ip", "ifname", "ifalias")  # lldpd's chassis/port id subtypes


def _keyvalue(text: str) -> Lldp:
    per: dict[str, dict[str, str]] = {}
    for line in text.splitlines():
        m = _KV.match(line.strip())
        if not m:
            if line.strip():
                raise ParseError(f"lldpctl keyvalue: unexpected line {line.strip()!r}")
            continue
        per.setdefault(m.group(1), {})[m.group(2)] = m.group(3)
    out = []
    for ifname, kv in per.items():
        ptype = next(
            (
                k.split(".", 1)[1]
                for k in kv
                if k.startswith("port.") and k.split(".", 1)[1] in _ID_TYPES
            ),
            None,
        )
        out.append(
            Neighbour(
                ifname,
                kv.get("chassis.name"),
                next(
                    (
                        v
                        for k, v in kv.items()
                        if k.startswith("chassis.") and k.split(".")[1] in _ID_TYPES
                    ),
                    None,
                ),
                kv.get(f"port.{ptype}") if ptype else None,
                ptype,
                kv.get("port.descr"),
                kv.get("via"),
            )
        )
    return _result(out)


# ---------------------------------------------------------------------------- text

_IFACE = re.compile(r"^Interface:\s+([^,\s]+),\s*via:\s*([^,\s]+)")
_DASHES = re.compile(r"^-{20,}\s*$")


def _text(text: str) -> Lldp:
    out: list[Neighbour] = []
    cur: dict[str, str | None] | None = None
    closed = True

    def flush() -> None:
        if cur is not None:
            out.append(
                Neighbour(
                    str(cur["if"]),
                    cur.get("name"),
                    cur.get("cid"),
                    cur.get("pid"),
                    cur.get("ptype"),
                    cur.get("pdescr"),
                    cur.get("via"),
                )
            )

    for raw in text.splitlines():
        line = raw.strip()
        if m := _IFACE.match(line):
            flush()
            cur, closed = {"if": m.group(1), "via": m.group(2)}, False
        elif _DASHES.match(line):
            if cur is not None:
                flush()
                cur = None
            closed = True
        elif cur is not None and ":" in line:
            key, _, value = line.partition(":")
            value = value.strip()
            if key == "SysName":
                cur["name"] = value
            elif key == "ChassisID":
                cur["cid"] = value.split(None, 1)[-1] if value else None
            elif key == "PortID":
                parts = value.split(None, 1)
                cur["ptype"], cur["pid"] = (
                    (parts[0], parts[1]) if len(parts) == 2 else (None, value)
                )
            elif key == "PortDescr":
                cur["pdescr"] = value
    flush()
    return _result(out, closed, () if closed else ("output ends inside a neighbour block",))
