"""``mlxlink`` (MFT / mstflint ``mstlink``): link state, FEC, BER counters and module DOM.

Command: ``mlxlink -d DEV [-p 1] [-m|--show_module] [-c]``. Sections are a title over a
dashed underline, then ``key<padding>: value`` records (parsed by key, never by column or
position: field order differs between MFT versions)::

    Operational Info
    ----------------
    State                              : Active
    Speed                              : IB-NDR
    ...
    Module Info                                      (-m)
    -----------
    Rx Power Current [dBm]             : 1.886,1.989,2.281,1.976 [-10.41..6]
    ...
    Physical Counters and BER Info                   (-c)
    ------------------------------
    Effective Physical BER             : 15E-255
    Raw Physical Errors Per Lane       : 0,0,0,0

Handled: InfiniBand (``Symbol Errors``/``Symbol BER``, link-down counters after ``Raw
Physical BER``) and Ethernet (counters before it) label sets, 28nm (EDR) and 16nm+ order,
``Raw Physical BER Per Lane`` (7nm+, 2025), with or without ``amBER Version``, trailing
spaces (MFT 4.35) and ANSI colour codes (terminal captures). BER prints as
``<coef>E-<magnitude>``: ``15E-255`` is 15e-255 (the firmware's "nothing measured").

Module Info DOM lines are ``value [low..high]``, per-lane values comma-separated; the
inline range is the *alarm* window (mlxlink prints no warning limits). Voltage is printed
in mV and comes out in V. mlxlink prints ``-40`` dBm for 0 µW (``getPower``), so an rx lane
at -40 dBm or ``-inf`` is ``None`` and listed in ``dark_lanes``. ``dom`` is false for
``Digital Diagnostic Monitoring : No``, all-N/A DOM lines, or all readings and ranges 0
(a passive DAC prints ``0 [0..0]``); the printed values are kept.

``-E-`` lines (and the lines of a message that follows one) go to ``errors`` and make the
result ``complete=False``; ``-E-`` with no section raises ParseError naming it. A section
cut short (its key fields missing, an IB counter block without its link-down counters, the
base sections without ``Tool Information``, an empty body), an unreadable line or value,
or text that stops without its final newline (a line cut mid-value) make it
``complete=False``. Text with no mlxlink section raises ParseError.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace

from rackops.parsers._common import ParseError, is_na
from rackops.parsers.ethtool_module import Optics, Window


@dataclass(frozen=True)
class MlxLink:
    state: str | None
    physical_state: str | None
    speed: str | None
    width: str | None
    fec: str | None
    status_opcode: int | None
    recommendation: str | None
    time_since_clear_min: float | None
    effective_errors: int | None
    effective_ber: float | None
    raw_errors_per_lane: tuple[int, ...]
    raw_ber: float | None
    raw_ber_per_lane: tuple[float, ...]
    symbol_errors: int | None
    symbol_ber: float | None
    link_down_counter: int | None
    link_error_recovery_counter: int | None
    optics: Optics | None
    complete: bool
    errors: tuple[str, ...]


OPERATIONAL = "Operational Info"
SUPPORTED = "Supported Info"
TROUBLESHOOTING = "Troubleshooting Info"
TOOL = "Tool Information"
MODULE = "Module Info"
BER = "Physical Counters and BER Info"
_CORE = (OPERATIONAL, SUPPORTED, TROUBLESHOOTING, TOOL, MODULE, BER)
_BASE = (OPERATIONAL, SUPPORTED, TROUBLESHOOTING, TOOL)

_REQUIRED: dict[str, tuple[str, ...]] = {
    OPERATIONAL: ("State", "Physical state", "Speed", "Width", "FEC"),
    TROUBLESHOOTING: ("Status Opcode", "Recommendation"),
    TOOL: ("Firmware Version",),
    MODULE: (
        "Temperature [C]",
        "Voltage [mV]",
        "Bias Current [mA]",
        "Rx Power Current [dBm]",
        "Tx Power Current [dBm]",
        "Identifier",
        "Vendor Name",
        "Vendor Part Number",
        "Vendor Serial Number",
    ),
    BER: (
        "Time Since Last Clear [Min]",
        "Effective Physical Errors",
        "Effective Physical BER",
        "Raw Physical Errors Per Lane",
        "Raw Physical BER",
    ),
}
_IB_AFTER_RAW_BER = ("Link Down Counter", "Link Error Recovery Counter")

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_DASHES = re.compile(r"^-+$")
_RECORD = re.compile(r"^([^:]*?\S)\s*:(?: (.*))?$")
_FLOAT = re.compile(r"^[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?$", re.ASCII)
_INT = re.compile(r"^\d+$", re.ASCII)
_DOM = re.compile(r"^(.*?)\s*\[([^\[\]]*)\.\.([^\[\]]*)\]$")
_DARK_DBM = -40.0  # mlxlink's getPower() result for a 0 µW reading


class _Bad(ValueError):
    """A value that does not read as its label promises (a cut or a mangled line)."""


def _float(text: str) -> float:
    cleaned = text.strip()
    if not _FLOAT.match(cleaned):
        raise _Bad(text)
    value = float(cleaned)
    if not math.isfinite(value):
        raise _Bad(text)
    return value


def _int(text: str) -> int:
    cleaned = text.strip()
    if not _INT.match(cleaned):
        raise _Bad(text)
    return int(cleaned)


def _lane(text: str) -> float | None:
    """One comma-separated DOM reading: N/A → None, ``-inf`` → -inf (no light)."""
    if is_na(text):
        return None
    if text.strip() == "-inf":
        return -math.inf
    return _float(text)


def _finite(lanes: tuple[float | None, ...]) -> tuple[float | None, ...]:
    return tuple(v if v is not None and math.isfinite(v) else None for v in lanes)


class _Reader:
    """Typed access to one section's records; unreadable values are noted, not raised."""

    def __init__(self, records: dict[str, str], errors: list[str]) -> None:
        self.records = records
        self.errors = errors
        self.ok = True

    def _bad(self, key: str, value: str) -> None:
        self.ok = False
        self.errors.append(f"{key}: unreadable value {value!r}")

    def text(self, key: str) -> str | None:
        value = self.records.get(key)
        return None if is_na(value) else value

    def number(self, key: str) -> float | None:
        value = self.text(key)
        if value is None:
            return None
        try:
            return _float(value)
        except _Bad:
            self._bad(key, value)
            return None

    def count(self, key: str) -> int | None:
        value = self.text(key)
        if value is None:
            return None
        try:
            return _int(value)
        except _Bad:
            self._bad(key, value)
            return None

    def counts(self, key: str) -> tuple[int, ...]:
        value = self.text(key)
        if value is None:
            return ()
        try:
            return tuple(_int(v) for v in value.split(","))
        except _Bad:
            self._bad(key, value)
            return ()

    def numbers(self, key: str) -> tuple[float, ...]:
        value = self.text(key)
        if value is None:
            return ()
        try:
            return tuple(_float(v) for v in value.split(","))
        except _Bad:
            self._bad(key, value)
            return ()

    def dom(self, key: str) -> tuple[tuple[float | None, ...], Window | None, bool]:
        """``'1.8,2.0 [-10.41..6]'`` → ((1.8, 2.0), alarm window, printed-as-data)."""
        value = self.text(key)
        if value is None:
            return (), None, False
        m = _DOM.match(value)
        try:
            if not m:
                raise _Bad(value)
            lanes = tuple(_lane(v) for v in m.group(1).split(","))
            low = None if is_na(m.group(2)) else _float(m.group(2))
            high = None if is_na(m.group(3)) else _float(m.group(3))
        except _Bad:
            self._bad(key, value)
            return (), None, False
        window = None if low is None and high is None else Window(low, None, None, high)
        return lanes, window, True


def _optics(module: _Reader) -> Optics:
    temps, temp_window, temp_printed = module.dom("Temperature [C]")
    volts, _volt_window, volt_printed = module.dom("Voltage [mV]")
    bias, bias_window, bias_printed = module.dom("Bias Current [mA]")
    rx, rx_window, rx_printed = module.dom("Rx Power Current [dBm]")
    tx, tx_window, tx_printed = module.dom("Tx Power Current [dBm]")
    dark = tuple(i for i, v in enumerate(rx, start=1) if v is not None and v <= _DARK_DBM)
    rx = tuple(None if v is None or v <= _DARK_DBM else v for v in rx)
    temps, volts, bias, tx = (_finite(s) for s in (temps, volts, bias, tx))
    numbers: list[float] = [v for v in (*temps, *volts, *bias, *rx, *tx) if v is not None]
    for window in (temp_window, bias_window, rx_window, tx_window):
        if window is not None:
            numbers += [v for v in (window.low_alarm, window.high_alarm) if v is not None]
    printed = temp_printed or volt_printed or bias_printed or rx_printed or tx_printed
    dom = (
        module.text("Digital Diagnostic Monitoring") != "No"
        and printed
        and (bool(dark) or any(v != 0 for v in numbers))
    )
    voltage_mv = volts[0] if len(volts) == 1 else None
    return Optics(
        identifier=module.text("Identifier"),
        vendor=module.text("Vendor Name"),
        part_number=module.text("Vendor Part Number"),
        serial=module.text("Vendor Serial Number"),
        cable=module.text("Cable Type"),
        temperature_c=temps[0] if len(temps) == 1 else None,
        voltage_v=None if voltage_mv is None else round(voltage_mv / 1000, 6),
        rx_power_dbm=rx,
        tx_power_dbm=tx,
        bias_ma=bias,
        dark_lanes=dark,
        rx_power_window_dbm=rx_window,
        tx_power_window_dbm=tx_window,
        temperature_window_c=temp_window,
        bias_window_ma=bias_window,
        dom=dom,
    )


def _sections_complete(sections: dict[str, dict[str, str]], order: list[str]) -> bool:
    """Every section has its records, and the base sections end with the tool's version
    line: what a cut output lacks."""
    for title in order:
        records = sections[title]
        if not records:
            return False
        if any(key not in records for key in _REQUIRED.get(title, ())):
            return False
    if SUPPORTED in sections:
        keys = sections[SUPPORTED]
        for prefix in ("Enabled Link Speed", "Supported Cable Speed"):
            if not any(k.startswith(prefix) for k in keys):
                return False
    if any(title in sections for title in _BASE):
        tool = sections.get(TOOL, {})
        if not any(
            k.endswith(" Version") and k not in ("Firmware Version", "amBER Version") for k in tool
        ):
            return False  # "MFT Version" / "mstflint Version" closes the base sections
    return True


def parse_mlxlink(text: str) -> MlxLink:
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = [_ANSI.sub("", raw).rstrip() for raw in text.split("\n")]
    sections: dict[str, dict[str, str]] = {}
    order: list[str] = []
    errors: list[str] = []
    complete = True
    current: str | None = None
    in_error = False
    skip_next = False

    for i, line in enumerate(lines):
        if skip_next:  # the dashed underline of a title
            skip_next = False
            continue
        stripped = line.strip()
        if not stripped:
            continue
        nxt = lines[i + 1].strip() if i + 1 < len(lines) else ""
        if _DASHES.match(nxt) and not stripped.startswith("-"):
            current, in_error, skip_next = stripped, False, True
            if current not in sections:
                sections[current] = {}
                order.append(current)
            continue
        if stripped.startswith("-E-"):
            errors.append(stripped)
            complete, in_error = False, True
            continue
        if stripped.startswith(("-W-", "-I-")):
            in_error = False
            continue
        if in_error:  # mlxlink prints collected section errors one per line after a -E-
            if errors[-1].endswith(":"):
                errors[-1] = f"{errors[-1]} {stripped}"
            else:
                errors.append(stripped)
            continue
        if current is None:
            continue  # a prompt or banner before the first section
        m = _RECORD.match(stripped)
        if m:
            sections[current].setdefault(m.group(1), (m.group(2) or "").strip())
        else:
            errors.append(stripped)
            complete = False

    if not any(title in sections for title in _CORE):
        if errors:
            raise ParseError(f"mlxlink failed: {'; '.join(errors)}")
        raise ParseError("no mlxlink section (Operational Info, Module Info, ...) found")

    if not _sections_complete(sections, order):
        complete = False
    operational = _Reader(sections.get(OPERATIONAL, {}), errors)
    speed = operational.text("Speed")
    ber = _Reader(sections.get(BER, {}), errors)
    is_ib = (speed or "").startswith("IB-") or "Symbol Errors" in ber.records
    if BER in sections and is_ib and any(k not in ber.records for k in _IB_AFTER_RAW_BER):
        complete = False
    if not text.endswith("\n"):
        complete = False  # mlxlink ends every line; the last one may be cut mid-value

    troubleshooting = _Reader(sections.get(TROUBLESHOOTING, {}), errors)
    module = _Reader(sections[MODULE], errors) if MODULE in sections else None
    optics = _optics(module) if module is not None else None
    result = MlxLink(
        state=operational.text("State"),
        physical_state=operational.text("Physical state"),
        speed=speed,
        width=operational.text("Width"),
        fec=operational.text("FEC"),
        status_opcode=troubleshooting.count("Status Opcode"),
        recommendation=troubleshooting.text("Recommendation"),
        time_since_clear_min=ber.number("Time Since Last Clear [Min]"),
        effective_errors=ber.count("Effective Physical Errors"),
        effective_ber=ber.number("Effective Physical BER"),
        raw_errors_per_lane=ber.counts("Raw Physical Errors Per Lane"),
        raw_ber=ber.number("Raw Physical BER"),
        raw_ber_per_lane=ber.numbers("Raw Physical BER Per Lane"),
        symbol_errors=ber.count("Symbol Errors"),
        symbol_ber=ber.number("Symbol BER"),
        link_down_counter=ber.count("Link Down Counter"),
        link_error_recovery_counter=ber.count("Link Error Recovery Counter"),
        optics=optics,
        complete=complete,
        errors=tuple(errors),
    )
    readers = (operational, troubleshooting, ber, *((module,) if module else ()))
    if not all(r.ok for r in readers):
        result = replace(result, complete=False)
    return result
