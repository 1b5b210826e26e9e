"""``ethtool -m IF`` (module EEPROM decode): identity, DOM readings and the module's limits.

Command: ``ethtool -m eth2`` (ioctl path, or netlink from ethtool 5.13). Every decoded line
is ``\\t%-41s : value``; mail and ticket copies turn the TAB into spaces, so labels are
matched by name with any indentation and padding. Forms handled::

    Identifier                                : 0x0d (QSFP+)           SFF-8636 (0x0c/0x0d/0x11)
    Rcvr signal avg optical power(Channel 1)  : 0.7682 mW / -1.15 dBm  (no space before "(")
    Identifier                                : 0x18 (QSFP-DD ...)     CMIS (QSFP-DD, OSFP, 0x1e)
    Rcvr signal avg optical power (Channel 1) : 1.1351 mW / 0.55 dBm   (with a space)
    Laser bias current                        : 6.000 mA               SFF-8472 SFP (sfpdiag),
    Receiver signal average optical power     : 0.5000 mW / -3.01 dBm  one lane, no suffix
    Laser rx power low alarm threshold        : 0.0446 mW / -13.51 dBm module-wide limits

Powers come out in dBm (``10*log10(mW)`` when only mW is printed). ``0.0000 mW / -inf dBm``
is no light: the reading is ``None`` and, for rx power, its 1-based lane is in
``dark_lanes``; an unset power threshold (0 mW) is ``None``. A window whose four limits are
all unset or unprinted is ``None``. ``dom`` is false when no lane readings are printed and
temperature and voltage read 0 (a passive DAC prints ``0.00 degrees C`` / ``0.0000 V``);
the printed values are kept.

``Cannot get module EEPROM information: ...`` / ``netlink error: ...`` with no decoded
fields raises ParseError naming the error. Error lines after a decode, a line that is not
``label : value`` (a cut mid-label, an elided `` ...``), an unreadable reading, lanes
missing from one series, a threshold block cut short (all 20 lines, or none; required when
``Alarm/warning flags implemented : Yes``) or text that stops without its final newline
make the result ``complete=False``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from rackops.parsers._common import MAX_LANES, ParseError, bounded, is_na


@dataclass(frozen=True)
class Window:
    """The module's own limits for one quantity (None where not printed or unset)."""

    low_alarm: float | None
    low_warning: float | None
    high_warning: float | None
    high_alarm: float | None


@dataclass(frozen=True)
class Optics:
    identifier: str | None
    vendor: str | None
    part_number: str | None
    serial: str | None
    cable: str | None
    temperature_c: float | None
    voltage_v: float | None
    rx_power_dbm: tuple[float | None, ...]
    tx_power_dbm: tuple[float | None, ...]
    bias_ma: tuple[float | None, ...]
    dark_lanes: tuple[int, ...]
    rx_power_window_dbm: Window | None
    tx_power_window_dbm: Window | None
    temperature_window_c: Window | None
    bias_window_ma: Window | None
    dom: bool


@dataclass(frozen=True)
class EthtoolModule:
    optics: Optics
    flags: tuple[str, ...]
    complete: bool
    errors: tuple[str, ...]


# Lines are split with str methods, not regexes: a label or value of thousands of spaces
# made the former `(.*?)\s*$` patterns quadratic.
_ERRORS = ("Cannot ", "netlink error", "ethtool: ", "Bad command", "No such device")
_NUMBER = r"[-+]?\d+(?:\.\d+)?"
_POWER = re.compile(rf"^({_NUMBER})\s*mW(?:\s*/\s*({_NUMBER}|-inf|inf|nan)\s*dBm)?$")
_TEMP = re.compile(rf"^({_NUMBER})\s*degrees C\b")
_VOLT = re.compile(rf"^({_NUMBER})\s*V$")
_BIAS = re.compile(rf"^({_NUMBER})\s*mA$")
_PAREN = re.compile(r"^0x[0-9a-fA-F]+\s*\((.*)\)$")
_THRESHOLD = re.compile(
    r"^(Laser bias current|Laser output power|Module temperature|Module voltage|Laser rx power)"
    r" (high|low) (alarm|warning) threshold$"
)

_BIAS_LABELS = {"Laser tx bias current", "Laser bias current"}
_TX_LABELS = {"Transmit avg optical power", "Laser output power"}
_RX_LABELS = {
    "Rcvr signal avg optical power",
    "Receiver signal OMA",
    "Receiver signal average optical power",
}
_QUANTITY = {
    "Laser bias current": "bias",
    "Laser output power": "tx",
    "Module temperature": "temp",
    "Module voltage": "volt",
    "Laser rx power": "rx",
}
_THRESHOLD_LINES = 20


class _Bad(ValueError):
    """A value that does not read as its label promises (a cut or a mangled line)."""


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Bad(text)
    return value


def _power(value: str) -> float | None:
    """``'0.7682 mW / -1.15 dBm'`` → -1.15; ``'0.0000 mW / -inf dBm'`` → None."""
    m = _POWER.match(value)
    if not m:
        raise _Bad(value)
    mw, dbm = float(m.group(1)), m.group(2)
    if dbm is not None:
        if dbm == "-inf":
            return None
        return _finite(dbm)
    if mw <= 0:
        return None
    return round(10 * math.log10(mw), 2)


def _unit(pattern: re.Pattern[str], value: str) -> float:
    m = pattern.match(value)
    if not m:
        raise _Bad(value)
    return _finite(m.group(1))


def _kv(raw: str) -> tuple[str, str] | None:
    """``'  Laser bias current (Channel 1)  : 6.750 mA'`` → (label, value); None if no label."""
    label, sep, value = raw.partition(":")
    label = label.strip()
    if not sep or not label or (value and not value[0].isspace()):
        return None
    return label, value.strip()


def _lane(label: str) -> tuple[str, int] | None:
    """``'Laser bias current (Channel 3)'`` → (``'Laser bias current'``, 3), the lane bounded."""
    if not label.endswith(")"):
        return None
    name, _, inner = label[:-1].rpartition("(")
    word, _, number = inner.partition(" ")
    if word not in ("Channel", "Chan") or not number.isascii() or not number.isdigit():
        return None
    return name.rstrip(), bounded(int(number), "lane", MAX_LANES, low=1)


def _series(values: dict[int, float | None]) -> tuple[tuple[float | None, ...], bool]:
    """Channel → reading as a tuple in channel order; False when a channel is missing."""
    if not values:
        return (), True
    top = max(values)
    return tuple(values.get(ch) for ch in range(1, top + 1)), len(values) == top


def _window(limits: dict[tuple[str, str], float | None]) -> Window | None:
    window = Window(
        low_alarm=limits.get(("low", "alarm")),
        low_warning=limits.get(("low", "warning")),
        high_warning=limits.get(("high", "warning")),
        high_alarm=limits.get(("high", "alarm")),
    )
    limits_set = (window.low_alarm, window.low_warning, window.high_warning, window.high_alarm)
    return None if all(v is None for v in limits_set) else window


def parse_ethtool_module(text: str) -> EthtoolModule:
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    r = _Reader()
    for raw in text.split("\n"):
        if raw.strip():
            r.line(raw)
    if not r.decoded:
        if r.tool_errors:
            raise ParseError(f"ethtool -m failed: {'; '.join(r.tool_errors)}")
        raise ParseError("no 'Identifier' line: this is not ethtool -m output")
    return r.result(text)


class _Reader:
    """ethtool -m read line by line: the module's labels, its lanes and its thresholds."""

    def __init__(self) -> None:
        self.kv: dict[str, str] = {}
        self.bias: dict[int, float | None] = {}
        self.tx: dict[int, float | None] = {}
        self.rx: dict[int, float | None] = {}
        self.dark: set[int] = set()
        self.thresholds: dict[str, dict[tuple[str, str], float | None]] = {
            q: {} for q in _QUANTITY.values()
        }
        self.threshold_lines = 0
        self.flags: list[str] = []
        self.errors: list[str] = []
        self.tool_errors: list[str] = []
        self.complete = True
        self.decoded = False
        self.temperature: float | None = None
        self.voltage: float | None = None

    def line(self, raw: str) -> None:
        if raw.strip().startswith(_ERRORS):
            self.tool_errors.append(raw.strip())
            self.errors.append(raw.strip())
            self.complete = False
            return
        kv = _kv(raw)
        if not kv:
            if self.decoded:
                self.errors.append(raw.strip())
                self.complete = False
            return
        label = " ".join(kv[0].split())
        value = kv[1]
        if label == "Identifier":
            self.decoded = True
        if not self.decoded:
            return
        self.kv.setdefault(label, value)
        try:
            if lane := _lane(label):
                self._lane(lane[0], lane[1], label, value)
            elif t := _THRESHOLD.match(label):
                self._threshold(t, value)
            else:
                self._single(label, value)
        except ParseError:
            raise
        except (_Bad, ValueError):
            self.complete = False
            self.errors.append(f"{label}: unreadable value {value!r}")

    def _series_value(self, name: str, channel: int, value: str) -> None:
        """A bias, Tx or Rx power reading of one lane (channel 1 for a single-lane module)."""
        if name in _BIAS_LABELS:
            self.bias[channel] = None if is_na(value) else _unit(_BIAS, value)
        elif name in _TX_LABELS:
            self.tx[channel] = None if is_na(value) else _power(value)
        elif name in _RX_LABELS:
            self.rx[channel] = None if is_na(value) else _power(value)
            if self.rx[channel] is None and not is_na(value):
                self.dark.add(channel)

    def _lane(self, name: str, channel: int, label: str, value: str) -> None:
        if value in ("On", "Off"):
            if value == "On" and ("alarm" in name or "warning" in name):
                self.flags.append(f"{label} : On")
            return
        self._series_value(name, channel, value)

    def _threshold(self, t: re.Match[str], value: str) -> None:
        quantity = _QUANTITY[t.group(1)]
        self.threshold_lines += 1
        if quantity in ("tx", "rx"):
            limit = _power(value)
        elif quantity == "bias":
            limit = _unit(_BIAS, value)
        elif quantity == "temp":
            limit = _unit(_TEMP, value)
        else:
            limit = _unit(_VOLT, value)
        self.thresholds[quantity][(t.group(2), t.group(3))] = limit

    def _single(self, label: str, value: str) -> None:
        if value in ("On", "Off") and ("alarm" in label or "warning" in label):
            if value == "On" and label != "Alarm/warning flags implemented":
                self.flags.append(f"{label} : On")
            return
        if label == "Module temperature":
            self.temperature = _unit(_TEMP, value)
        elif label == "Module voltage":
            self.voltage = _unit(_VOLT, value)
        else:
            self._series_value(label, 1, value)

    def result(self, text: str) -> EthtoolModule:
        bias_t, ok_bias = _series(self.bias)
        tx_t, ok_tx = _series(self.tx)
        rx_t, ok_rx = _series(self.rx)
        lengths = {len(s) for s in (bias_t, tx_t, rx_t) if s}
        complete = self.complete and ok_bias and ok_tx and ok_rx and len(lengths) <= 1
        flags_implemented = self.kv.get("Alarm/warning flags implemented")
        if flags_implemented is not None and not (bias_t and tx_t and rx_t):
            complete = False  # SFF-8636 and SFP print all three series around this line
        if self.kv.get("Optical diagnostics support") == "Yes" and flags_implemented is None:
            complete = False  # SFP: cut before the end of its DOM block
        if self.threshold_lines and self.threshold_lines != _THRESHOLD_LINES:
            complete = False
        if flags_implemented == "Yes" and self.threshold_lines == 0:
            complete = False
        if any(k not in self.kv for k in ("Vendor name", "Vendor PN", "Vendor SN")):
            complete = False  # every decoder (SFP, SFF-8636, CMIS) prints the vendor block
        if not text.endswith("\n"):
            complete = False  # ethtool ends every line; the last one may be cut mid-value
        technology = self.kv.get("Transmitter technology")
        cable = None
        if technology:
            paren = _PAREN.match(technology)
            cable = paren.group(1) if paren else technology
        optics = Optics(
            identifier=self.kv.get("Identifier") or None,
            vendor=self.kv.get("Vendor name") or None,
            part_number=self.kv.get("Vendor PN") or None,
            serial=self.kv.get("Vendor SN") or None,
            cable=cable,
            temperature_c=self.temperature,
            voltage_v=self.voltage,
            rx_power_dbm=rx_t,
            tx_power_dbm=tx_t,
            bias_ma=bias_t,
            dark_lanes=tuple(sorted(self.dark)),
            rx_power_window_dbm=_window(self.thresholds["rx"]),
            tx_power_window_dbm=_window(self.thresholds["tx"]),
            temperature_window_c=_window(self.thresholds["temp"]),
            bias_window_ma=_window(self.thresholds["bias"]),
            dom=bool(bias_t or tx_t or rx_t) or bool(self.temperature) or bool(self.voltage),
        )
        return EthtoolModule(optics, tuple(self.flags), complete, tuple(self.errors))
