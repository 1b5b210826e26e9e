"""``dmidecode -t bios`` (also ``-t 0``, ``-t bios -t system``, a full ``dmidecode``): the BIOS
(SMBIOS type 0) and the server model (type 1).

Layout (dmidecode 2.11 … 3.6)::

    # dmidecode 3.3
    Getting SMBIOS data from sysfs.
    SMBIOS 3.2.0 present.
    # SMBIOS implementations newer than version 3.5.0 are not      (comment lines, optional)
    67 structures occupying 3473 bytes.                            (full dump only)
    Table at 0x7AB09000.                                           (full dump only)
    <blank>
    Handle 0x0003, DMI type 0, 26 bytes
    BIOS Information
    <TAB>Vendor: HPE
    <TAB>Version: I41
    <TAB>Release Date: 10/02/2018
    <TAB>Characteristics:
    <TAB><TAB>PCI is supported
    <TAB>BIOS Revision: 1.46
    <TAB>Firmware Revision: 1.37                                   (BMC/EC, optional)
    <blank>

Formats handled: TAB indentation or spaces (4 or 8 per level in pasted copies); the BIOS
record found by ``DMI type 0,`` wherever it is (HPE: handle 0x0003; OEM records 193/194/199/
201/218 first in full dumps), the System record by ``DMI type 1,``; every other record is
skipped; ``SMBIOS N.N`` or ``N.N.N``; ``Getting SMBIOS data from sysfs.``, ``Scanning /dev/mem
for entry point.`` and ``#`` comment lines. Serial numbers and UUIDs are never kept.

Completeness. dmidecode ends every record with a blank line (``pr_sep``), so a record is
whole when a blank line (or, in a copy that lost its blank lines, the next ``Handle`` line)
follows it and it holds the lines dmidecode always prints for its type (BIOS: Vendor,
Version, Release Date and a Characteristics list; System: Manufacturer, Product Name,
Version, Serial Number). The result is ``complete=False``, the reason in ``errors``, when
the BIOS or System record is not whole (cut inside it, or right after its last line before
the blank line: a cut there cannot be told from a cut between two of its lines), when a full
dump (the ``Table at`` / ``structures occupying`` lines dmidecode prints only without
``-t``) lacks either record or its End Of Table record (type 127, printed last: what a dump
cut between two whole records lacks), for a line that is not dmidecode's (a hand elision
``...``/``[...]``, ``<TRUNCATED>``, stderr such as ``Wrong DMI structures count``), and when
the text stops without its final newline (the last line is not used). A ``-t bios`` output
is complete with no System record, a ``-t system`` one with no BIOS record. A ``-t`` output
cut between two whole records cannot be told from a whole one (dmidecode prints no trailer
with ``-t``): the records it reports are whole, but ``-t bios -t system`` cut before its
System record reads as ``-t bios`` (``system`` None).

``# No SMBIOS nor DMI entry point found, sorry.`` raises ParseError with that message; text
with neither a BIOS nor a System record (``/dev/mem: Permission denied`` …) raises
ParseError naming the lines that are not records.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from rackops.parsers._common import MAX_COUNT, ParseError, bounded


@dataclass(frozen=True)
class DmiBios:
    vendor: str | None
    version: str | None  # stripped; may contain spaces
    release_date: str | None  # as printed, "05/04/2015"
    bios_revision: str | None  # "BIOS Revision: 1.2"
    firmware_revision: str | None  # "Firmware Revision:" (BMC/EC), optional


@dataclass(frozen=True)
class DmiSystem:
    manufacturer: str | None
    product_name: str | None
    version: str | None
    # never the serial number or the UUID


@dataclass(frozen=True)
class Dmidecode:
    dmidecode_version: str | None  # "# dmidecode 3.3" -> "3.3"
    smbios_version: str | None  # "SMBIOS 3.2.0 present." -> "3.2.0"
    bios: DmiBios | None
    system: DmiSystem | None
    complete: bool
    errors: tuple[str, ...]


NO_SMBIOS = "# No SMBIOS nor DMI entry point found, sorry."

_HANDLE = re.compile(r"^Handle 0x[0-9A-Fa-f]{4}, DMI type (\d{1,3}), \d{1,5} bytes$")
_DMIDECODE = re.compile(r"^# dmidecode (\S+)$")
_SMBIOS = re.compile(r"^SMBIOS (\d{1,3}(?:\.\d{1,3}){1,2}) present\.$")
_FULL_DUMP = (
    re.compile(r"^\d{1,6} structures occupying \d{1,9} bytes\.$"),
    re.compile(r"^Table at 0x[0-9A-Fa-f]{1,16}\.$"),
)
_INFO = (
    re.compile(r"^Getting SMBIOS data from sysfs\.$"),
    re.compile(r"^Failed to get SMBIOS data from sysfs\.$"),
    re.compile(r"^Scanning \S+ for entry point\.$"),
    re.compile(r"^Found SMBIOS entry point in EFI, reading table from \S+\.$"),
    re.compile(r"^Reading SMBIOS/DMI data from file \S+\.$"),
    re.compile(r"^Legacy DMI \d{1,3}\.\d{1,3} present\.$"),
)
_TITLES = {0: "BIOS Information", 1: "System Information"}
_REQUIRED = {
    0: ("Vendor", "Version", "Release Date"),
    1: ("Manufacturer", "Product Name", "Version", "Serial Number"),
}
# the only attributes read from a record: serial numbers and UUIDs are never stored
_KEEP = {
    0: ("Vendor", "Version", "Release Date", "BIOS Revision", "Firmware Revision"),
    1: ("Manufacturer", "Product Name", "Version"),
}


@dataclass
class _Record:
    type: int
    title: str | None = None
    attrs: dict[str, str] = field(default_factory=dict)  # kept attributes only
    seen: set[str] = field(default_factory=set)  # every first-level key, values dropped
    items: dict[str, int] = field(default_factory=dict)  # list name -> its item count
    indent: int | None = None  # width of the first-level indentation
    closed: bool = False  # a blank line (or the next Handle) followed it


def _elision(stripped: str) -> bool:
    """``...``, ``[...]``, ``…``, ``(snip)``: what people put where they cut a paste."""
    bare = stripped.strip(".…[]()<> ").lower()
    return bare in ("", "snip", "cut", "truncated", "output truncated")


class _Reader:
    def __init__(self) -> None:
        self.records: list[_Record] = []
        self.current: _Record | None = None  # the record lines are being read into
        self.list_name: str | None = None  # the list its deeper lines belong to
        self.version: str | None = None
        self.smbios: str | None = None
        self.full_dump = False
        self.errors: list[str] = []
        self.ok = True

    def bad(self, line: str) -> None:
        self.errors.append(line)
        self.ok = False

    def feed(self, line: str) -> None:
        stripped = line.strip()
        if not stripped:
            if self.current is not None:
                self.current.closed = True
                self.current = None
            return
        if m := _HANDLE.match(stripped):
            if self.current is not None:
                self.current.closed = True  # a copy that lost the blank line between records
            kind = bounded(int(m.group(1)), "DMI type", 255)
            bounded(len(self.records) + 1, "DMI records", MAX_COUNT)
            self.current = _Record(kind)
            self.records.append(self.current)
            self.list_name = None
        elif _elision(stripped):
            self.bad(stripped)
        elif self.current is not None and self.current.title is None:
            self.current.title = stripped
        elif self.current is not None and line[:1] in (" ", "\t"):
            self.attribute(self.current, line, stripped)
        elif not self.records:
            self.header(stripped)
        else:
            self.bad(stripped)  # stderr (Wrong DMI structures ...) or a foreign line

    def header(self, stripped: str) -> None:
        if m := _DMIDECODE.match(stripped):
            self.version = m.group(1)
        elif m := _SMBIOS.match(stripped):
            self.smbios = m.group(1)
        elif any(p.match(stripped) for p in _FULL_DUMP):
            self.full_dump = True
        elif stripped.startswith("#") or any(p.match(stripped) for p in _INFO):
            return
        else:
            self.bad(stripped)

    def attribute(self, record: _Record, line: str, stripped: str) -> None:
        width = len(line.expandtabs(8)) - len(line.expandtabs(8).lstrip())
        if record.indent is None:
            record.indent = width
        if width > record.indent:  # a list item (or a sub-attribute) of the line above
            if self.list_name is not None:
                record.items[self.list_name] += 1
            return
        key, colon, value = stripped.partition(":")
        if width != record.indent or not colon:
            self.bad(stripped)  # "<TRUNCATED>", or a line deeper than any list
            return
        key, value = key.strip(), value.strip()
        self.list_name = None
        if not value:
            self.list_name = key
            record.items.setdefault(key, 0)
        record.seen.add(key)
        if key in _KEEP.get(record.type, ()) and key not in record.attrs:
            record.attrs[key] = value


def _whole(record: _Record | None) -> str | None:
    """Why a BIOS/System record is not whole; None when it is."""
    if record is None:
        return None
    what = _TITLES[record.type]
    if record.title != what:
        return f"DMI type {record.type} record titled {record.title!r}, not {what!r}"
    missing = [k for k in _REQUIRED[record.type] if k not in record.seen]
    if record.type == 0 and not record.items.get("Characteristics"):
        missing.append("Characteristics")
    if missing:
        return f"{what} record without {', '.join(missing)}: cut inside it?"
    if not record.closed:
        return f"{what} record not followed by its blank line: the output may be cut inside it"
    return None


def _dump_problems(
    records: list[_Record], bios: _Record | None, system: _Record | None
) -> list[str]:
    """A full dump (no ``-t``) holds both records and its End Of Table record (type 127,
    the last one printed): what a dump cut between two whole records lacks."""
    out = [
        f"a full dmidecode dump (Table at ...) without its {what} Information record: cut?"
        for what, record in (("BIOS", bios), ("System", system))
        if record is None
    ]
    if not any(r.type == 127 and r.title == "End Of Table" for r in records):
        out.append(
            "a full dmidecode dump (Table at ...) without its End Of Table record (type 127): cut?"
        )
    return out


def parse_dmidecode(text: str) -> Dmidecode:
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    if any(line.strip() == NO_SMBIOS for line in lines):
        raise ParseError(f"dmidecode: {NO_SMBIOS[2:]}")
    tail = lines.pop().strip()  # "" when the text ends with its newline
    reader = _Reader()
    for line in lines:
        reader.feed(line.rstrip())
    if tail:
        reader.bad(f"last line has no newline (cut?): {tail}")
    bios_rec = next((r for r in reader.records if r.type == 0), None)
    system_rec = next((r for r in reader.records if r.type == 1), None)
    if bios_rec is None and system_rec is None:
        why = f": {'; '.join(reader.errors)}" if reader.errors else ""
        raise ParseError(f"no BIOS (DMI type 0) or System (DMI type 1) record in dmidecode{why}")
    problems = [p for p in (_whole(bios_rec), _whole(system_rec)) if p is not None]
    if reader.full_dump:
        problems += _dump_problems(reader.records, bios_rec, system_rec)
    bios = system = None
    if bios_rec is not None:
        a = bios_rec.attrs
        bios = DmiBios(
            vendor=a.get("Vendor") or None,
            version=a.get("Version") or None,
            release_date=a.get("Release Date") or None,
            bios_revision=a.get("BIOS Revision") or None,
            firmware_revision=a.get("Firmware Revision") or None,
        )
    if system_rec is not None:
        a = system_rec.attrs
        system = DmiSystem(
            manufacturer=a.get("Manufacturer") or None,
            product_name=a.get("Product Name") or None,
            version=a.get("Version") or None,
        )
    return Dmidecode(
        dmidecode_version=reader.version,
        smbios_version=reader.smbios,
        bios=bios,
        system=system,
        complete=reader.ok and not problems,
        errors=(*reader.errors, *problems),
    )
