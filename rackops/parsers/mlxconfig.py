"""``mlxconfig -d DEV q`` / ``mstconfig -d DEV q`` (also ``-e q``): an HCA's firmware
configuration (NVCONFIG), one block per device.

Layout (MFT 4.30 and current mstflint; older mstflint pads the labels to 16 and indents the
rows by 9)::

    <blank>
    Device #1:
    ----------
    <blank>
    Device type:        ConnectX7
    Name:               MCX755106AS-HEA_Ax
    Description:        NVIDIA ConnectX-7 HHHL Adapter Card; 200GbE ...
    Device:             05:00.0
    <blank>
    Configurations:                                          Next Boot
            NUM_OF_VFS                                  16
            LINK_TYPE_P1                                IB(1)
    *        ROCE_CONTROL                       ROCE_ENABLE(2)  DEVICE_DEFAULT(0) ROCE_ENABLE(2)
    The '*' shows parameters with next value different from default/current value.

Formats handled:

* column headers ``Next Boot`` (``q``), ``Default Current Next Boot`` (``-e q``), ``Current``
  (old mstconfig), ``Default`` alone, and ``Next Boot New`` (the table ``set`` prints before its
  prompt). The column count comes from the header words, never from character offsets: the
  header labels are not aligned with the value columns, and a value longer than its column
  overflows it (``DEVICE_DEFAULT(0) DEVICE_DEFAULT(0)``), so rows are split on whitespace
  (values never hold a space);
* ``*`` (next value differs from default/current) and ``RO`` (read-only) row prefixes;
* ``%-20s`` and old ``%-16s`` header labels, ``PCI device:`` (old) or ``Device:``, devices with
  no ``Name``/``Description`` (ConnectX-3), header fields printed before ``Device 1:`` (old);
* several ``Device #N:`` blocks (``mlxconfig q`` with no ``-d`` queries every device);
* trailing spaces or none, ``\\r\\n`` line ends, 8- or 9-space row indentation.

Values are kept as printed (``True(1)``, ``per_mkey(0)``, ``255``, ``Array[0..7]``, ``N/A``);
:func:`canonical` gives the form to compare (``True(1)`` → ``1``).

Completeness. mlxconfig prints no trailer after a table, so an output cut exactly at a line
end cannot be told from a whole one: checks must name the keys they need and say when one is
missing. What *is* detected makes the result ``complete=False`` with the reason in
``errors``: ``-E-`` lines (with their continuation lines), a row whose value count differs
from the header's column count or whose value is cut (unbalanced brackets), a stray line (an
elision such as ``(...)``), text that stops without its final newline (the last line is not
used), a device block without its ``Device #N:``, ``Device type:`` or ``Device:`` line, its
``Configurations:`` header or its rows, ``*`` rows without the footer mlxconfig prints after
them, and a ``Next Boot New`` table. ``KEY VALUE`` lines with no header at all (``mlxconfig
q | grep KEY``) parse into one device (columns ``Next Boot``, or ``Default Current Next
Boot`` for three values; device fields None) with the error "no Device/Configurations
header: filtered output": a filtered query is not a whole one.

``-E-`` with no table raises ParseError naming the message; so does the interactive ``set``
output (`` Apply new Configuration? (y/n) [n] : y``), which is not a query.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from rackops.parsers._common import MAX_COUNT, ParseError, bounded, is_na


@dataclass(frozen=True)
class MlxconfigDevice:
    device: str | None  # "Device:" / "PCI device:" value as printed (the -d argument)
    device_type: str | None  # "ConnectX7"
    name: str | None  # part number "MCX755106AS-HEA_Ax"
    description: str | None
    columns: tuple[str, ...]  # ("Next Boot",) | ("Default", "Current", "Next Boot") | ...
    params: dict[str, tuple[str, ...]]  # KEY -> one value per column, as printed
    modified: tuple[str, ...]  # keys flagged "*" in the row prefix

    def value(self, key: str) -> str | None:
        """The value in force now: the ``Current`` column if printed, else ``Next Boot``,
        else the first column; None when the key is absent."""
        values = self.params.get(key)
        if values is None:
            return None
        for column in ("Current", "Next Boot"):
            if column in self.columns:
                return values[self.columns.index(column)]
        return values[0]

    def next_boot(self, key: str) -> str | None:
        values = self.params.get(key)
        if values is None or "Next Boot" not in self.columns:
            return None
        return values[self.columns.index("Next Boot")]


@dataclass(frozen=True)
class Mlxconfig:
    devices: tuple[MlxconfigDevice, ...]
    complete: bool
    errors: tuple[str, ...]  # "-E- ..." lines, unreadable lines, what makes it incomplete


_ENUM = re.compile(r"^[^\s()]*\((\d+)\)$")


def canonical(value: str) -> str:
    """The form to compare: ``True(1)`` → ``1``, ``ETH(2)`` → ``2``, ``per_mkey(0)`` → ``0``,
    ``255`` → ``255``; any other value lowercased (``N/A`` → ``n/a``)."""
    cleaned = value.strip()
    m = _ENUM.match(cleaned)
    return m.group(1) if m else cleaned.lower()


_DEVICE = re.compile(r"^Device #?(\d{1,9}):$")
_DASHES = re.compile(r"^-+$")
_FIELD = re.compile(r"^(Device type|Name|Description|Device|PCI device):(.*)$")
_FIELD_NAMES = {
    "Device type": "device_type",
    "Name": "name",
    "Description": "description",
    "Device": "device",
    "PCI device": "device",
}
_KEY = re.compile(r"^[A-Za-z][A-Za-z0-9_]*(?:\[\d{1,9}\])?$")
_PREFIXES = ("*", "RO", "*RO")
_STAR_FOOTER = "The '*' shows"
_KNOWN_NOTES = ("The 'RO' shows", "Device Firmware does not support reading ")
_SET_MARKERS = ("Apply new Configuration?", "Applying... ")
_BY_COUNT = {1: ("Next Boot",), 3: ("Default", "Current", "Next Boot")}
_CONFIGURATIONS = "Configurations:"


@dataclass
class _Block:
    """One device while it is read."""

    fields: dict[str, str] = field(default_factory=dict)
    numbered: bool = False  # its "Device #N:" line was seen
    columns: tuple[str, ...] | None = None  # None: no Configurations header yet
    params: dict[str, tuple[str, ...]] = field(default_factory=dict)
    modified: list[str] = field(default_factory=list)
    star_footer: bool = False
    filtered: bool = False  # rows with no header at all (grep output)

    def started_table(self) -> bool:
        return self.columns is not None or bool(self.params)


def _columns(words: list[str]) -> tuple[str, ...] | None:
    """``['Default', 'Current', 'Next', 'Boot']`` → the column names; None if unknown."""
    out: list[str] = []
    i = 0
    while i < len(words):
        if words[i] == "Next" and i + 1 < len(words) and words[i + 1] == "Boot":
            out.append("Next Boot")
            i += 2
        elif words[i] in ("Default", "Current", "New"):
            out.append(words[i])
            i += 1
        else:
            return None
    if not out or len(set(out)) != len(out):
        return None
    return tuple(out)


def _whole_value(value: str) -> bool:
    """False for a value cut inside its brackets (``False(``, ``Array[0..``)."""
    for opening, closing in (("(", ")"), ("[", "]")):
        count = value.count(opening)
        if count != value.count(closing) or count > 1 or (count and not value.endswith(closing)):
            return False
    return True


def _split_row(stripped: str, ncols: int | None) -> tuple[str, str, tuple[str, ...]] | None:
    """``*  KEY  v1 v2 v3`` → (prefix, KEY, values); ``ncols`` None infers the count from the
    row (a filtered output with no header). None when the line is not such a row."""
    tokens = stripped.split()
    prefix = ""
    wanted = len(tokens) >= 3 if ncols is None else len(tokens) == ncols + 2
    if tokens and tokens[0] in _PREFIXES and wanted:
        prefix = tokens.pop(0)
    if len(tokens) < 2 or (ncols is not None and len(tokens) != ncols + 1):
        return None
    if not _KEY.match(tokens[0]) or not all(_whole_value(v) for v in tokens[1:]):
        return None
    return prefix, tokens[0], tuple(tokens[1:])


class _Reader:
    def __init__(self) -> None:
        self.blocks: list[_Block] = []
        self.errors: list[str] = []
        self.ok = True
        self.in_error = False  # the lines after a "-E-" line belong to its message
        self.message: dict[int, list[str]] = {}  # error index -> those lines
        self.after_device_line = False

    @property
    def cur(self) -> _Block | None:
        return self.blocks[-1] if self.blocks else None

    def new(self) -> _Block:
        bounded(len(self.blocks) + 1, "devices", MAX_COUNT)
        self.blocks.append(_Block())
        return self.blocks[-1]

    def bad(self, message: str) -> None:
        self.errors.append(message)
        self.ok = False

    def messages(self) -> list[str]:
        """The errors, each ``-E-`` line joined with the lines of its message."""
        return [" ".join((e, *self.message.get(i, ()))) for i, e in enumerate(self.errors)]

    def feed(self, stripped: str) -> None:
        if not stripped:
            self.in_error = False
            return
        if stripped.startswith(_SET_MARKERS):
            raise ParseError(
                f"this is mlxconfig set output, not a query ({stripped!r}): run mlxconfig -d DEV q"
            )
        if stripped.startswith("-E-"):
            self.bad(stripped)
            self.in_error = True
            return
        if self.in_error and not _DEVICE.match(stripped):
            self.message.setdefault(len(self.errors) - 1, []).append(stripped)
            return
        self.in_error = False
        after_device, self.after_device_line = self.after_device_line, False
        if stripped.startswith(("-I-", "-W-")):
            return
        if m := _DEVICE.match(stripped):
            self.device_line(int(m.group(1)))
        elif _DASHES.match(stripped) and after_device:
            return  # the underline of "Device #N:"
        elif m := _FIELD.match(stripped):
            self.field(_FIELD_NAMES[m.group(1)], m.group(2).strip())
        elif stripped.startswith(_CONFIGURATIONS):
            self.header(stripped)
        elif stripped.startswith(_STAR_FOOTER) and self.cur is not None:
            self.cur.star_footer = True
        elif stripped.startswith(_KNOWN_NOTES) and self.cur is not None:
            return
        else:
            self.row(stripped)

    def device_line(self, number: int) -> None:
        bounded(number, "device number", MAX_COUNT)
        cur = self.cur
        if cur is not None and not cur.numbered and not cur.started_table() and not cur.filtered:
            cur.numbered = True  # old layout: the header fields come before "Device 1:"
        else:
            self.new().numbered = True
        self.after_device_line = True

    def field(self, name: str, value: str) -> None:
        cur = self.cur
        if cur is None or cur.started_table() or name in cur.fields or cur.filtered:
            cur = self.new()
        cur.fields[name] = value

    def header(self, stripped: str) -> None:
        cur = self.cur
        if cur is None or cur.started_table() or cur.filtered:
            cur = self.new()
        columns = _columns(stripped[len(_CONFIGURATIONS) :].split())
        if columns is None:
            self.bad(f"unknown Configurations columns: {stripped}")
            columns = ()
        cur.columns = columns

    def row(self, stripped: str) -> None:
        cur = self.cur
        if cur is None:  # KEY VALUE lines with no header: a grep of the query
            split = _split_row(stripped, None)
            if split is None or len(split[2]) not in _BY_COUNT:
                self.bad(stripped)
                return
            cur = self.new()
            cur.filtered = True
            cur.columns = _BY_COUNT[len(split[2])]
        if not cur.columns:
            self.bad(stripped)  # a row with no (readable) Configurations header above it
            return
        split = _split_row(stripped, len(cur.columns))
        if split is None or split[1] in cur.params:
            self.bad(stripped)
            return
        prefix, key, values = split
        bounded(len(cur.params) + 1, "parameters of one device", MAX_COUNT)
        cur.params[key] = values
        if "*" in prefix:
            cur.modified.append(key)


def _problems(block: _Block, index: int) -> list[str]:
    """Why a device block is not a whole query (empty when it is)."""
    if block.filtered:
        return ["no Device/Configurations header: filtered output"]
    who = block.fields.get("device") or f"device {index}"
    out = []
    if not block.numbered:
        out.append(f"{who}: no 'Device #N:' line (filtered or cut output)")
    for name, label in (("device_type", "Device type:"), ("device", "Device:")):
        if name not in block.fields:
            out.append(f"{who}: no '{label}' line")
    if block.columns is None:
        out.append(f"{who}: no Configurations table")
    elif "New" in block.columns:
        out.append(f"{who}: a 'Next Boot New' table is mlxconfig set's, not a query")
    if block.columns is not None and not block.params:
        out.append(f"{who}: Configurations table with no rows")
    if block.modified and not block.star_footer:
        out.append(f"{who}: rows flagged '*' but no \"The '*' shows ...\" line after them")
    return out


def _device(block: _Block) -> MlxconfigDevice:
    def text(name: str) -> str | None:
        value = block.fields.get(name)
        return None if is_na(value) else value

    return MlxconfigDevice(
        device=block.fields.get("device") or None,
        device_type=text("device_type"),
        name=text("name"),
        description=text("description"),
        columns=block.columns or (),
        params=dict(block.params),
        modified=tuple(block.modified),
    )


def parse_mlxconfig(text: str) -> Mlxconfig:
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    tail = lines.pop()  # "" when the text ends with its newline
    reader = _Reader()
    for line in lines:
        reader.feed(line.strip())
    if tail.strip():
        last = tail.strip()
        if last.startswith((*_SET_MARKERS, "-E-")):
            reader.feed(last)
        else:
            reader.bad(f"last line has no newline (cut?): {last}")
    blocks = reader.blocks
    errors = reader.messages()
    if not any(b.started_table() for b in blocks):
        failures = [e for e in errors if e.startswith("-E-")]
        if failures:
            raise ParseError(f"mlxconfig failed: {'; '.join(failures)}")
        if not any(b.fields for b in blocks):
            raise ParseError(
                "no mlxconfig query output: no 'Device #N:' block, Configurations table "
                "or KEY VALUE row"
            )
    problems = [p for i, b in enumerate(blocks, start=1) for p in _problems(b, i)]
    return Mlxconfig(
        devices=tuple(_device(b) for b in blocks),
        complete=reader.ok and not problems,
        errors=(*errors, *problems),
    )
