"""``lspci -vvv`` (pciutils): PCI devices, their PCIe link, ACS state and bridge bus ranges.

Command: ``lspci -vvv`` as root (``-nn``, ``-D`` and ``-s BDF`` parse too). Each device is
a block: a header line at column 0, ``BDF class: name``, TAB-indented detail lines, and one
blank line after it (lspci indents with TABs, shown here as spaces)::

    21:00.0 Ethernet controller: Mellanox Technologies MT2910 Family [ConnectX-7]
            Capabilities: [60] Express (v2) Endpoint, MSI 00
                    LnkCap: Port #0, Speed 32GT/s, Width x16, ASPM not supported
                    LnkSta: Speed 32GT/s, Width x16
            Capabilities: [230 v1] Access Control Services
                    ACSCap: SrcValid- TransBlk- ReqRedir- CmpltRedir- UpstreamFwd- ...
                    ACSCtl: SrcValid- TransBlk- ReqRedir- CmpltRedir- UpstreamFwd- ...
            Kernel driver in use: mlx5_core

Handled: BDF with or without the domain (``17:00.0`` becomes ``0000:17:00.0``); ``-nn``
class codes (``3D controller [0302]``) and ids (``[10de:20b0]``), the numeric forms
(``Class 0200: Device 8086:10c9``, ``-n``'s ``0200: 8086:10c9``) and unknown devices
(``NVIDIA Corporation Device 2331``); TAB or space indentation (pasted copies); CRLF;
``LnkSta`` with ``(downgraded)``/``(overdriven)`` or nothing after a value (pciutils
3.8+), ``(ok)``/``(downgraded)`` (3.6, 3.7), and the single line with the status flags on
it (before 3.6);
``LnkCap`` wording (``Latency L0`` / ``Exit Latency L0s``); speeds ``2.5``..``128GT/s`` and
``unknown`` (None); ``Width x0`` (a dead link, kept as 0); ``Capabilities: <access denied>``
(lspci not run as root: ``caps_denied``, no link or ACS); ``ACSCap``/``ACSCtl`` read as
generic ``Name+``/``Name-`` tokens (future flags parse); VPD blocks, ``IOMMU group:``,
``<?>`` capabilities and any other indented line are tolerated; ``-xxx`` hex dump lines;
``pcilib:`` warnings (kept in ``errors``).

Only the first ``LnkCap``/``LnkSta`` of a block is read: pciutils prints them only inside
the ``Express`` capability, and a function has one (a device with several link-status
capabilities shows the others under other names, ``LnkCap2``/``LnkSta2``, Physical Layer
capabilities, which are not read). ``port_type`` is that capability's type, ``Endpoint``,
``Legacy Endpoint``, ``Root Port``, ``Upstream Port``, ``Downstream Port`` ... with the
``(Slot+)`` dropped.

``acs_redirects`` is True when ``ACSCtl`` has ``ReqRedir+``, ``CmpltRedir+`` or
``EgressCtrl+``: the bits that send peer-to-peer requests and completions up to the root
complex instead of across the switch (the ones Linux's ``pci=disable_acs_redir`` clears).
``SrcValid+`` (source validation, what NCCL's troubleshooting page greps for) and
``UpstreamFwd+`` redirect nothing on their own and do not count; ``acs_ctl`` keeps every
flag for a check that wants to judge them.

Completeness: lspci ends every block with a blank line. The output is whole when a blank
line follows the last block, or when the last block's last line is ``Kernel modules:``
with its newline (copies in documents often lose the final blank line; lspci prints that
line last in a block). ``Kernel driver in use:`` as the last line is not enough: it is
what a block that lost its ``Kernel modules:`` line looks like, so a copy of a block with
a built-in driver (``pcieport``) needs its blank line. A block lost whole after a blank
line cannot be seen (lspci prints no count and no end marker). Otherwise the result is
``complete=False``, the error naming the last device; so it is for: an elision a human
wrote (``[...]``, ``...``, ``…``, ``<snip>``) anywhere; an ``lspci:`` error line; a
``LnkCap``, ``LnkSta``, ``ACSCap``, ``ACSCtl`` or ``Bus:`` line that does not read (the
value is None, never guessed) or holds a value out of bounds (width 0..32, bus 0..255);
an ``Express`` capability with a link but no ``LnkCap``/``LnkSta`` line, or ``Access
Control Services`` without ``ACSCap``/``ACSCtl`` (cut, elided, or ``lspci -v`` rather than
``-vvv``); a header with no detail lines; a line at column 0 that is not a device header;
a device printed twice. Text with no device header, only headers (plain ``lspci``), lines
before the first header (cut at the start, ``lspci -vvv | grep``) or more than
``MAX_COUNT`` devices raise ParseError.

Topology: ``parent`` is the narrowest bridge (any device with a ``Bus:`` line) of the same
domain whose ``secondary..subordinate`` holds the device's bus; ``path_to_root`` follows
parents with a visited set and at most 256 steps (hostile ranges that loop end there).
``parent``/``path_to_root``/``path_between`` raise KeyError for a BDF the output does not
hold (an empty path would read as "no bridge in the way").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from rackops.parsers._common import MAX_COUNT, ParseError, bounded

# -- public results -----------------------------------------------------------------------


@dataclass(frozen=True)
class PciLink:
    speed_gts: float | None
    width: int | None


# the ACSCtl bits that route peer-to-peer traffic through the root complex
ACS_REDIRECT_FLAGS = ("ReqRedir", "CmpltRedir", "EgressCtrl")


@dataclass(frozen=True)
class PciDevice:
    bdf: str
    cls: str
    cls_code: str | None
    name: str
    vendor_id: str | None
    kind: str
    link_cap: PciLink | None
    link_sta: PciLink | None
    port_type: str | None
    acs_cap: dict[str, bool] | None
    acs_ctl: dict[str, bool] | None
    secondary_bus: int | None
    subordinate_bus: int | None
    caps_denied: bool
    driver: str | None

    @property
    def acs_redirects(self) -> bool | None:
        """ReqRedir+/CmpltRedir+/EgressCtrl+ in ACSCtl (module docstring); None without ACS."""
        if self.acs_ctl is None:
            return None
        return any(self.acs_ctl.get(flag, False) for flag in ACS_REDIRECT_FLAGS)


_MAX_DEPTH = 256  # one bus number per bridge level: no real path is longer


@dataclass(frozen=True)
class Lspci:
    devices: tuple[PciDevice, ...]
    complete: bool
    errors: tuple[str, ...]

    def device(self, bdf: str) -> PciDevice | None:
        key = normalise_bdf(bdf)
        return next((d for d in self.devices if d.bdf == key), None)

    def _known(self, bdf: str) -> PciDevice:
        found = self.device(bdf)
        if found is None:
            raise KeyError(f"no PCI device {bdf!r} in this lspci output")
        return found

    def _parent_of(self, dev: PciDevice) -> PciDevice | None:
        domain, bus = dev.bdf[:-8], int(dev.bdf[-7:-5], 16)
        best: PciDevice | None = None
        for b in self.devices:
            if b is dev or b.secondary_bus is None or b.subordinate_bus is None:
                continue
            if b.bdf[:-8] != domain or not b.secondary_bus <= bus <= b.subordinate_bus:
                continue
            if best is None or _span(b) < _span(best):
                best = b
        return best

    def parent(self, bdf: str) -> PciDevice | None:
        return self._parent_of(self._known(bdf))

    def path_to_root(self, bdf: str) -> tuple[PciDevice, ...]:
        start = self._known(bdf)
        path: list[PciDevice] = []
        seen = {start.bdf}
        node = self._parent_of(start)
        while node is not None and node.bdf not in seen and len(path) < _MAX_DEPTH:
            path.append(node)
            seen.add(node.bdf)
            node = self._parent_of(node)
        return tuple(path)

    def path_between(self, a: str, b: str) -> tuple[PciDevice, ...]:
        """Bridges from a's side up to and including the lowest common bridge, then down to
        b's side (all of both paths when they share none); a and b themselves left out."""
        ends = {self._known(a).bdf, self._known(b).bdf}
        up, down = self.path_to_root(a), self.path_to_root(b)
        down_index = {d.bdf: i for i, d in enumerate(down)}
        for i, bridge in enumerate(up):
            if bridge.bdf in down_index:
                route = [*up[: i + 1], *reversed(down[: down_index[bridge.bdf]])]
                break
        else:
            route = [*up, *reversed(down)]
        out: list[PciDevice] = []
        for bridge in route:
            if bridge.bdf not in ends and all(bridge.bdf != o.bdf for o in out):
                out.append(bridge)
        return tuple(out)


def _span(bridge: PciDevice) -> tuple[int, int]:
    assert bridge.secondary_bus is not None and bridge.subordinate_bus is not None
    return (bridge.subordinate_bus - bridge.secondary_bus, -bridge.secondary_bus)


# -- reading ------------------------------------------------------------------------------

_BDF = re.compile(r"(?:([0-9a-f]{4,8}):)?([0-9a-f]{2}):([0-9a-f]{2})\.([0-7])", re.ASCII)
_IDS = re.compile(r"([0-9a-f]{4}):[0-9a-f]{4}", re.ASCII)
_HEX4 = re.compile(r"[0-9a-f]{4}", re.ASCII)
_SPEED = re.compile(r"Speed (?:([0-9]{1,4}(?:\.[0-9]{1,3})?)GT/s|(unknown))", re.ASCII)
_WIDTH = re.compile(r"Width x([0-9]{1,4})", re.ASCII)
_FLAG = re.compile(r"([A-Za-z][A-Za-z0-9_]*)([+-])", re.ASCII)
_BUS = re.compile(r"[0-9a-f]{1,8}", re.ASCII)
_HEXDUMP = re.compile(r"[0-9a-f]{2,3}:(?: [0-9a-f]{2}){1,16}", re.ASCII)
_ELISION = re.compile(r"[\[(<]?\s*(?:\.{3,}|…+|snip)\s*[\])>]?", re.IGNORECASE)
_ANNOTATIONS = (" (ok)", " (downgraded)", " (overdriven)")
_MAX_WIDTH = 32
_MAX_BUS = 255


def normalise_bdf(text: str) -> str | None:
    """``'17:00.0'`` / ``'0000:17:00.0'`` → ``'0000:17:00.0'``; anything else → None."""
    m = _BDF.fullmatch(text.strip().lower())
    if not m or int(m.group(3), 16) > 0x1F:
        return None
    domain = (m.group(1) or "0000").lstrip("0").rjust(4, "0")
    return f"{domain}:{m.group(2)}:{m.group(3)}.{m.group(4)}"


class _Bad(ValueError):
    """A detail line that does not read as lspci prints it (the message: why, when a value
    read is out of its bounds; empty when the line has the wrong shape)."""


def _annotated(part: str) -> str:
    for note in _ANNOTATIONS:
        if part.endswith(note):
            return part[: -len(note)]
    return part


def _link(value: str, cap: bool) -> PciLink:
    """``Port #0, Speed 16GT/s, Width x16, ASPM L1, ...`` (LnkCap) or ``Speed 2.5GT/s
    (downgraded), Width x16`` (LnkSta; old lspci adds its flags on the same line)."""
    parts = [p.strip() for p in value.split(",")]
    if cap:
        if len(parts) < 4 or not parts[0].startswith("Port #") or not parts[3].startswith("ASPM"):
            raise _Bad("")
        parts = parts[1:]
    if len(parts) < 2:
        raise _Bad("")
    speed = _SPEED.fullmatch(_annotated(parts[0]))
    width = _WIDTH.fullmatch(_annotated(parts[1]))
    if not speed or not width:
        raise _Bad("")
    try:
        lanes = bounded(int(width.group(1)), "link width", _MAX_WIDTH)
    except ParseError as exc:
        raise _Bad(str(exc)) from exc
    return PciLink(None if speed.group(2) else float(speed.group(1)), lanes)


def _flags(value: str) -> dict[str, bool]:
    """``SrcValid+ TransBlk- ...`` → {"SrcValid": True, "TransBlk": False, ...}."""
    out: dict[str, bool] = {}
    for token in value.split():
        m = _FLAG.fullmatch(token)
        if not m:
            raise _Bad("")
        out[m.group(1)] = m.group(2) == "+"
    if not out:
        raise _Bad("")
    return out


def _buses(value: str) -> tuple[int, int]:
    """``primary=00, secondary=01, subordinate=05, sec-latency=0`` → (1, 5)."""
    fields: dict[str, str] = {}
    for part in value.split(","):
        key, _, number = part.strip().partition("=")
        fields[key] = number.lower()
    numbers = []
    for key in ("secondary", "subordinate"):
        text = fields.get(key, "")
        if not _BUS.fullmatch(text):
            raise _Bad("")
        try:
            numbers.append(bounded(int(text, 16), f"{key} bus", _MAX_BUS))
        except ParseError as exc:
            raise _Bad(str(exc)) from exc
    return numbers[0], numbers[1]


def _port_type(rest: str) -> str:
    """``Express (v2) Root Port (Slot+), MSI 00`` → ``Root Port``."""
    text = rest[len("Express") :].strip()
    if text.startswith("(v") and ")" in text:
        text = text[text.index(")") + 1 :].strip()
    text = text.split(",")[0].strip()
    if text.endswith(")") and " (" in text:
        text = text[: text.rindex(" (")]
    return text


def _class_code(cls: str) -> tuple[str, str | None]:
    """``3D controller [0302]`` → (``3D controller``, ``0302``); ``Class 0200`` and
    ``-n``'s bare ``0200`` carry the code too."""
    if cls.endswith("]") and len(cls) >= 6 and cls[-6] == "[" and _HEX4.fullmatch(cls[-5:-1]):
        code, cls = cls[-5:-1], cls[:-6].rstrip()
        return (f"Class {code}" if cls in ("", "Class") else cls), code
    last = cls.rsplit(" ", 1)[-1]
    if _HEX4.fullmatch(last) and cls in (last, f"Class {last}"):
        return cls, last
    return cls, None


def _vendor_id(name: str) -> str | None:
    """``[10de:20b0]`` (-nn), or the numeric ``Device 8086:10c9`` / ``8086:10c9`` (-n)."""
    tokens = name.split()
    for token in reversed(tokens):
        if token.startswith("[") and token.endswith("]"):
            m = _IDS.fullmatch(token[1:-1])
            if m:
                return m.group(1)
    lead = tokens[1] if len(tokens) > 1 and tokens[0] == "Device" else tokens[0]
    m = _IDS.fullmatch(lead)
    return m.group(1) if m else None


_GPU = ({"0300", "0302"}, {"VGA compatible controller", "3D controller"})
_HCA = ({"0200", "0207"}, {"Ethernet controller", "Infiniband controller"})
_NVSWITCH = ({"0680"}, {"Bridge"})
_BRIDGE = ({"0604"}, {"PCI bridge"})


def _kind(cls: str, code: str | None, name: str, vendor: str | None) -> str:
    """By ids when printed (``-nn``), else by names."""

    def of(classes: tuple[set[str], set[str]]) -> bool:
        return code in classes[0] if code is not None else cls in classes[1]

    nvidia = vendor == "10de" if vendor else name.startswith("NVIDIA Corporation")
    mellanox = vendor == "15b3" if vendor else name.startswith("Mellanox Technologies")
    if nvidia and of(_GPU):
        return "gpu"
    if mellanox and of(_HCA) and "Virtual Function" not in name:
        return "hca"
    if nvidia and of(_NVSWITCH):
        return "nvswitch"
    if of(_BRIDGE):
        return "bridge"
    return "other"


def _header(line: str) -> tuple[str, str, str | None, str, str | None] | None:
    """``BDF class: name`` → (bdf, class, class code, name, vendor id); None if not one."""
    token, space, rest = line.partition(" ")
    bdf = normalise_bdf(token) if space else None
    cls, sep, name = rest.partition(": ")
    cls, name = cls.strip(), name.strip()
    if bdf is None or not sep or not cls or not name:
        return None
    cls, code = _class_code(cls)
    return bdf, cls, code, name, _vendor_id(name)


class _Block:
    """One device's block while it is read."""

    def __init__(self, header: tuple[str, str, str | None, str, str | None]) -> None:
        self.bdf, self.cls, self.cls_code, self.name, self.vendor_id = header
        self.details = 0
        self.link_cap: PciLink | None = None
        self.link_sta: PciLink | None = None
        self.seen: set[str] = set()
        self.express = False
        self.express_link = False
        self.port_type: str | None = None
        self.acs = False
        self.acs_cap: dict[str, bool] | None = None
        self.acs_ctl: dict[str, bool] | None = None
        self.buses: tuple[int, int] | None = None
        self.caps_denied = False
        self.driver: str | None = None
        self.problems: list[str] = []

    def capability(self, value: str) -> None:
        if value == "<access denied>":
            self.caps_denied = True
            return
        close = value.find("]") if value.startswith("[") else -1
        rest = value[close + 1 :].strip()
        if (rest == "Express" or rest.startswith("Express ")) and not self.express:
            self.express = True
            self.port_type = _port_type(rest)
            self.express_link = not self.port_type.startswith("Root Complex")
        elif rest.startswith("Access Control Services"):
            self.acs = True

    def detail(self, stripped: str) -> None:
        self.details += 1
        key, colon, value = stripped.partition(":")
        value = value.strip()
        if not colon:
            return
        try:
            if key == "Capabilities":
                self.capability(value)
            elif key in ("LnkCap", "LnkSta"):
                link = _link(value, cap=key == "LnkCap")
                if key not in self.seen:
                    self.link_cap, self.link_sta = (
                        (link, self.link_sta) if key == "LnkCap" else (self.link_cap, link)
                    )
            elif key in ("ACSCap", "ACSCtl"):
                flags = _flags(value)
                if key not in self.seen:
                    if key == "ACSCap":
                        self.acs_cap = flags
                    else:
                        self.acs_ctl = flags
            elif key == "Bus" and value.startswith("primary="):
                self.buses = _buses(value)
            elif key == "Kernel driver in use" and self.driver is None:
                self.driver = value or None
        except _Bad as exc:
            why = f" ({exc})" if str(exc) else ""
            self.problems.append(f"{self.bdf}: unreadable {key} line: {stripped!r}{why}")
        self.seen.add(key)

    def finish(self) -> PciDevice:
        if self.express_link and not self.caps_denied:
            for key in ("LnkCap", "LnkSta"):
                if key not in self.seen:
                    self.problems.append(
                        f"{self.bdf}: Express capability without a {key} line "
                        "(cut or elided, or lspci -v rather than -vvv)"
                    )
        if self.acs and not self.caps_denied:
            for key in ("ACSCap", "ACSCtl"):
                if key not in self.seen:
                    self.problems.append(
                        f"{self.bdf}: Access Control Services without an {key} line "
                        "(cut or elided, or lspci -v rather than -vvv)"
                    )
        return PciDevice(
            bdf=self.bdf,
            cls=self.cls,
            cls_code=self.cls_code,
            name=self.name,
            vendor_id=self.vendor_id,
            kind=_kind(self.cls, self.cls_code, self.name, self.vendor_id),
            link_cap=self.link_cap,
            link_sta=self.link_sta,
            port_type=self.port_type,
            acs_cap=self.acs_cap,
            acs_ctl=self.acs_ctl,
            secondary_bus=self.buses[0] if self.buses else None,
            subordinate_bus=self.buses[1] if self.buses else None,
            caps_denied=self.caps_denied,
            driver=self.driver,
        )


def _ends_whole(text: str) -> bool:
    """A blank line after the last block, or its last line is ``Kernel modules:`` with its
    newline (module docstring)."""
    body = text.rstrip(" \t\n")
    tail = text[len(body) :]
    if tail.count("\n") >= 2:
        return True
    last = body[body.rfind("\n") + 1 :]
    return (
        tail.count("\n") == 1
        and last[:1] in (" ", "\t")
        and last.strip().startswith("Kernel modules:")
    )


def _column0(
    line: str, number: int, block: _Block | None, errors: list[str]
) -> tuple[bool, _Block | None]:
    """A line at column 0 that is not a device header: (still complete?, block)."""
    stripped = line.strip()
    if _ELISION.fullmatch(stripped):
        errors.append(f"line {number}: {stripped!r}: output elided by hand")
        return False, block
    if stripped.startswith("pcilib: "):
        errors.append(stripped)
        return True, block
    if stripped.startswith("lspci: "):
        errors.append(stripped)
        return False, block
    if block is None:
        raise ParseError(
            f"line {number} ({stripped[:80]!r}) comes before any lspci device block "
            "('BB:DD.F class: name'): the output is cut at the start, or is not lspci -vvv"
        )
    if _HEXDUMP.fullmatch(stripped):
        return True, block
    errors.append(f"line {number}: not an lspci line: {stripped[:120]!r}")
    return False, block


def parse_lspci(text: str) -> Lspci:
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    if not any(_header(line) for line in lines if line[:1] not in ("", " ", "\t")):
        raise ParseError(
            "no lspci device block (a line 'BB:DD.F class: name' at column 0) found: "
            "not lspci -vvv output (a grep of it, or lspci -tv?)"
        )
    blocks: list[_Block] = []
    errors: list[str] = []
    complete = True
    block: _Block | None = None
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        if not stripped:
            continue
        if line[:1] in (" ", "\t"):
            if block is None:
                raise ParseError(
                    f"line {number} ({stripped[:80]!r}) comes before any lspci device block: "
                    "the output is cut at the start, or is not lspci -vvv"
                )
            if _ELISION.fullmatch(stripped):
                errors.append(f"line {number}: {stripped!r}: output elided by hand")
                complete = False
            else:
                block.detail(stripped)
            continue
        header = _header(line)
        if header is None:
            whole, block = _column0(line, number, block, errors)
            complete = complete and whole
            continue
        bounded(len(blocks) + 1, "lspci device count", MAX_COUNT)
        block = _Block(header)
        blocks.append(block)
    return _result(text, blocks, errors, complete)


def _result(text: str, blocks: list[_Block], errors: list[str], complete: bool) -> Lspci:
    if not any(b.details for b in blocks):
        raise ParseError(
            "lspci device headers with no detail lines: plain lspci, not lspci -vvv "
            "(or cut right after the first header)"
        )
    devices: list[PciDevice] = []
    seen: set[str] = set()
    for b in blocks:
        device = b.finish()
        errors.extend(b.problems)
        complete = complete and not b.problems and b.details > 0
        if b.details == 0:
            errors.append(f"{b.bdf}: a device header with no detail lines")
        if device.bdf in seen:
            errors.append(f"{device.bdf}: printed twice (joined outputs?): the first kept")
            complete = False
            continue
        seen.add(device.bdf)
        devices.append(device)
    if not _ends_whole(text):
        errors.append(f"output ends inside the block of {blocks[-1].bdf}: cut off?")
        complete = False
    return Lspci(devices=tuple(devices), complete=complete, errors=tuple(errors))


def link_capable(lspci: Any, d: Any) -> tuple[float | None, int | None]:
    """What a device's link can train at: the lower of the card's capability and its
    upstream port's (a Gen5 card in a Gen4 slot trains at Gen4, and that is no fault)."""
    caps = [d.link_cap]
    parent = lspci.parent(d.bdf)
    if parent is not None and not parent.caps_denied:
        caps.append(parent.link_cap)
    speeds = [c.speed_gts for c in caps if c is not None and c.speed_gts is not None]
    widths = [c.width for c in caps if c is not None and c.width is not None]
    return (min(speeds) if speeds else None, min(widths) if widths else None)
