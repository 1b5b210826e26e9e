"""``dcgmproftester{11,12,13} --no-dcgm-validation -t 1004[,1005] -d SECONDS``: the per-GPU
figures of DCGM's CUDA load generator (research: docs/research/issue-24-gemm-hbm.md §1, §6).

One line per worker (one per GPU, one per MIG slice) per report interval (1 s)::

    Worker 0:0[1004]: TensorEngineActive: generated ???, dcgm 0.000 (250362.2 gflops)    2.1
    Worker 0:0[1004]: TensorEngineActive: generated ???, dcgm 0.000 (250362.2 gflops).   2.2.6–3.1.8
    Worker 0:0 [1004]: TensorEngineActive:  generated ???, dcgm 0 (1.89e+05 gflops).     3.2.5–4.6
    Worker 0:1[1004]: … dcgm { GPU: 0.000, GI: 0.000, CI: 0.000 } (102659.5 gflops)      MIG, ≤3.1.8
    Worker 0:1 [1004]: … dcgm M:{ GPU: 0, GI: 0, CI: 0 } (1.03e+05 gflops).              MIG, ≥3.2.5
    Worker 0:0[1005]: DramUtil generated 0.123/0.456, dcgm 0.100 (1234.5 GiB/sec)        2.1
    … (1234.5 GiB/sec), bandwidthDivisor 1.125.                                          2.2.6–3.1.8
    Worker 0/1/0:0[1005]: DramUtil generated 0.123/0.456, dcgm M:0.1 (1.23e+03 GiB/sec).
        bandwidthDivisor 1.00                           (one line) 3.2.5–4.6; ``/gi/ci``: MIG

(``dcgmproftester/PhysicalGpu.cpp`` of NVIDIA/DCGM at each release; whitespace is read
loosely: one or more spaces, a space or none before ``[``, any indentation.) ``-t 1006``/
``1007``/``1008`` print the 1004 line with their own header (``Fp32EngineActive``) only with
``--cublas`` (DCGM ≥ 3.3.1); without it they print ``target max, dcgm 0`` and no figure.

* ``gpu`` is the Worker's first number: the **DCGM GPU id** (``dcgmi discovery -l``), not the
  CUDA index; ``bus_ids`` maps it to the PCI address from the worker's ``Message: Bus ID
  00000000:0A:00.0 mapped to cuda device ID 0`` line (printed once per worker, usually after
  its readings, followed by the worker's ``CU_DEVICE_ATTRIBUTE_*`` block).
* ``worker`` is the second number (the MIG slice's worker on that GPU; 0 without MIG),
  ``instance`` the ``gi/ci`` pair DCGM ≥ 3.2.5 prints for MIG in the 1005 line.
* 1004 (and 1006–1008 with ``--cublas``) values are **gflops** (cuBLAS HGEMM, 8192³, FP16).
  1005 values are printed as ``GiB/sec`` but are bytes copied × 2 (read + write) / 10⁹ per
  second (``DistributedCudaContext.cpp``): kept as the same number with unit ``GB/s``.
* The first 1005 line of a worker is always 0 (it prints the previous interval) and a slow
  GPU may print 0 before its first GEMM ends: a 0 is a reading (a GPU that stalls to 0 must
  pull its figure down, not vanish). A value that is negative, NaN, infinite or above
  ``MAX_FIGURE`` is an error entry, never a reading.
* :meth:`ProfTester.figure` is the steady figure: the median of the last half of each
  worker's readings (the first ones ramp up), summed over the GPU's workers (MIG slices run
  at once; without MIG there is one worker).

``complete`` is False when: the text stops without its final newline (cut mid-line); a
reading-shaped line does not read to the end of its format (``(1.89e+0``); a hand elision
(``.``, ``...``, ``snip``) was left in; the tool printed an error (``Worker N:W[F]: Error: …``,
``A test for fieldId N has not been implemented yet.``, ``GPU N, TestField F test FAILED.``,
``CacheManager Init Failed. Error: -29`` (not root), ``Error 0 from RunTests(). Exiting.``,
``Received signal 15``, ``cuInit returned …``, …); a DCGM 2.0 line without the ``Worker``
prefix (its GPU is not printed); a GPU with a ``Bus ID`` message but no reading; or no reading
at all (``-t 1007`` without ``--cublas``). plog-formatted lines (``2023-04-18 03:46:10.915
ERROR [pid:tid] … [file:line] [function]``, as printed on the console and in ``--log-file``)
are read through their prefix and suffix. Empty input, and text with no line dcgmproftester
prints, raise ParseError.

No end marker is required: DCGM ≥ 2.3.4 ends a run with ``GPU N, TestField F test PASSED.``
and ``All Tests Passed.``, but none of the real captures found has them (they are read when
present), so a capture cut between two whole lines still reads as complete; the run's
duration (``-d``) bounds how many readings a worker should print.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from statistics import median

from rackops.parsers._common import MAX_COUNT, MAX_GPUS, ParseError, bounded, check_limits

__all__ = ["MAX_FIGURE", "ProfReading", "ProfTester", "parse_dcgmproftester"]

# A figure above this is not a GPU's: 10⁹ gflops is an exaflop per GPU (B200 dense FP16 is
# ~2.25·10⁶), 10⁹ GB/s an exabyte per second (B200 HBM is ~8·10³).
MAX_FIGURE = 1e9
MAX_ERRORS = 100
UNITS = {"gflops": "gflops", "GiB/sec": "GB/s"}


@dataclass(frozen=True)
class ProfReading:
    test: int  # the field id after -t: 1004, 1005, ...
    gpu: int  # the Worker's first number (DCGM GPU id)
    instance: str | None  # "gi/ci" for a MIG 1005 line of DCGM ≥ 3.2.5, else None
    value: float  # gflops (1004, 1006-1008 with --cublas); 10⁹ B/s read+write (1005)
    unit: str  # "gflops" | "GB/s"
    line: int
    worker: int = 0  # the Worker's second number: the MIG slice's worker, 0 without MIG


@dataclass(frozen=True)
class ProfTester:
    readings: tuple[ProfReading, ...]
    bus_ids: dict[int, str]  # DCGM GPU id -> "00000000:0A:00.0"
    complete: bool
    errors: tuple[str, ...]

    def values(self, test: int, gpu: int) -> tuple[float, ...]:
        """Every reading of ``test`` on ``gpu``, in printed order (all its workers)."""
        return tuple(r.value for r in self.readings if r.test == test and r.gpu == gpu)

    def figure(self, test: int, gpu: int) -> float | None:
        """The GPU's steady figure: the median of the last half of its readings (the first
        ones ramp up), per worker, summed over its workers (MIG slices run at once); None
        with no reading."""
        groups: dict[tuple[int, str | None], list[float]] = {}
        for r in self.readings:
            if r.test == test and r.gpu == gpu:
                groups.setdefault((r.worker, r.instance), []).append(r.value)
        if not groups:
            return None
        return float(sum(median(v[len(v) // 2 :]) for v in groups.values()))

    def gpus(self, test: int) -> tuple[int, ...]:
        """The GPUs with at least one reading of ``test``, in id order."""
        return tuple(sorted({r.gpu for r in self.readings if r.test == test}))


_NUM = r"(?:[-+]?(?:\d{1,40}(?:\.\d{0,40})?|\.\d{1,40})(?:[eE][-+]?\d{1,5})?|[-+]?(?i:inf|nan))"
_PREFIX = re.compile(
    r"Worker\s+(?P<gpu>\d{1,9})(?:/(?P<gi>\d{1,9})/(?P<ci>\d{1,9}))?:(?P<worker>\d{1,9})"
    r"\s*\[(?P<test>\d{1,9})\]:\s*"
)
# the DCGM value(s): "0", "0.000", "<unknown>", "{ GPU: 0.000, GI: 0.000, CI: 0.000 }", "M:{…}"
_DCGM = r"(?:M:)?(?:\{[^{}()]{0,1024}\}|[^\s(){}]{1,64})"
_GEMM = re.compile(
    r"(?P<header>[A-Za-z][A-Za-z0-9]{0,63}):\s+generated\s+\?\?\?,\s+dcgm\s+"
    + _DCGM
    + rf"\s+\((?P<value>{_NUM})\s+(?P<unit>gflops)\)\.?"
)
_DRAM = re.compile(
    rf"DramUtil\s+generated\s+{_NUM}/{_NUM},\s+dcgm\s+"
    + _DCGM
    + rf"\s+\((?P<value>{_NUM})\s+(?P<unit>GiB/sec)\)(?:[.,]\s*bandwidthDivisor\s+{_NUM}\.?)?"
)
# what makes a Worker line a reading that has to read to its end
_READING_HINT = re.compile(r"generated\s+\?\?\?|^DramUtil\b|gflops|GiB/sec")
# DCGM 2.0.x printed the reading without the Worker prefix (no GPU id)
_LEGACY = re.compile(r"(?:[A-Za-z]\w{0,63}:\s+generated\s+\?\?\?|DramUtil\s+generated\s)")
_BUS = re.compile(
    r"Bus ID\s+(?P<bus>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])"
    r"\s+mapped to cuda device ID\s+\d{1,9}"
)
# the lines dcgmproftester prints besides readings (PhysicalGpu.cpp, DcgmProfTester.cpp,
# DistributedCudaContext.cpp: the worker's message block)
_BENIGN = re.compile(
    r"Skipping\s+\w{1,64}\(\)\s+since DCGM validation is disabled"
    r"|CU_DEVICE_ATTRIBUTE_\w{1,80}:|CUDA_VISIBLE_DEVICES:|Max Memory bandwidth:"
    r"|(?:DCGM\s+)?Cuda\s?(?:Context\s+)?Init completed successfully"
    r"|DCGM Cuda Context already initialized|Overriding CUDA_VISIBLE_DEVICES"
    r"|Bus ID\s+\S{1,32}\s+mapped to cuda device ID"
    r"|GPU\s+\d{1,9},\s+TestField\s+\d{1,9}\s+test\s+PASSED\.|All Tests Passed\."
    r"|&&&& (?:RUNNING|PASSED)\b|Running version\s+\d"
    r"|Field\s+\d{1,9}\s+@\s+\S{1,40}\s+Validation (?:Pass|Retry):"
    r"|Ignored a validation failure after last activity level success"
)
_ERROR = re.compile(
    r"\b(?:errors?|fail(?:ed|s|ure)?|fatal|unable|cannot|can not|could not|exception"
    r"|exiting|abort(?:ed)?|received signal|wrong version|unexpected|no cuda-capable"
    r"|out of memory|segmentation fault|core dumped|killed|drops support|skipping test"
    r"|not (?:been |yet )?implemented|not supported|unsupported|returned)\b",
    re.I,
)
_ELISION = re.compile(r"(?:[.…]+|\[\.\.\.\]|\(\.\.\.\)|(?i:snip\b.*)|(?i:etc\.*))")
_LOG_PREFIX = re.compile(
    r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?\s+(?P<sev>[A-Z]{4,7})\s+"
    r"\[\d{1,12}:\d{1,12}\]\s+"
)
_LOG_FILE = re.compile(r"\[[^\[\]]{1,512}:\d{1,9}\]")
_LOG_FUNCTION = re.compile(r"\[[^\[\]]{0,512}\]")


class _Run:
    """What one pass over the lines gathers."""

    def __init__(self) -> None:
        self.readings: list[ProfReading] = []
        self.bus_ids: dict[int, str] = {}
        self.errors: list[str] = []
        self.dropped = 0
        self.known = False  # a line only dcgmproftester prints was seen
        self.legacy: list[int] = []
        self.no_figure_tests: set[int] = set()

    def error(self, message: str) -> None:
        if len(self.errors) < MAX_ERRORS:
            self.errors.append(message)
        else:
            self.dropped += 1

    def reading(self, n: int, worker: re.Match[str], m: re.Match[str]) -> None:
        gpu = bounded(int(worker["gpu"]), "DCGM GPU id", MAX_GPUS)
        test = bounded(int(worker["test"]), "field id", MAX_COUNT)
        index = bounded(int(worker["worker"]), "worker index", MAX_GPUS)
        instance = None
        if worker["gi"] is not None:
            gi = bounded(int(worker["gi"]), "GPU instance id", MAX_COUNT)
            instance = f"{gi}/{bounded(int(worker['ci']), 'compute instance id', MAX_COUNT)}"
        value = float(m["value"])
        if not math.isfinite(value) or not 0 <= value <= MAX_FIGURE:
            self.error(f"line {n}: GPU {gpu} printed {m['value']} {m['unit']}: not a figure")
            return
        self.readings.append(ProfReading(test, gpu, instance, value, UNITS[m["unit"]], n, index))
        bounded(len(self.readings), "readings", MAX_COUNT * 16)

    def message(self, n: int, worker: re.Match[str], rest: str) -> None:
        bus = _BUS.search(rest)
        if bus is None:
            return
        gpu = bounded(int(worker["gpu"]), "DCGM GPU id", MAX_GPUS)
        seen = self.bus_ids.setdefault(gpu, bus["bus"])
        if seen != bus["bus"]:
            self.error(f"line {n}: GPU {gpu} mapped to {bus['bus']} and {seen}: two runs joined?")


def _unlog(line: str) -> tuple[str, str | None]:
    """A plog line (``2023-04-18 03:46:10.915 ERROR [1:1] text [file.cpp:56] [fn]``) → its
    text and severity; any other line as it is."""
    m = _LOG_PREFIX.match(line)
    if m is None:
        return line, None
    body = line[m.end() :]
    function = body.rfind(" [")  # found from the end: no regex scans the whole line
    where = body.rfind(" [", 0, max(function, 0))
    if (
        where >= 0
        and _LOG_FUNCTION.fullmatch(body[function + 1 :])
        and _LOG_FILE.fullmatch(body[where + 1 : function].strip())
    ):
        body = body[:where]
    return body.strip(), m["sev"]


def _worker_line(run: _Run, n: int, line: str, w: re.Match[str]) -> None:
    rest = line[w.end() :]
    m = _GEMM.fullmatch(rest) or _DRAM.fullmatch(rest)
    if m is not None:
        run.reading(n, w, m)
    elif _READING_HINT.search(rest):
        run.error(f"line {n}: a reading that does not read to its end (cut?): {line[:100]!r}")
    elif re.match(r"Message:", rest):
        run.message(n, w, rest)
    elif re.match(r"Error:", rest) or _ERROR.search(rest):
        run.error(f"line {n}: {line[:200]}")
    elif (test := bounded(int(w["test"]), "field id", MAX_COUNT)) in (1004, 1005):
        # a 1004/1005 worker prints readings, Message: and Error: lines only
        run.error(f"line {n}: a {test} line that is no reading: {line[:100]!r}")
    else:  # GrActivity/SmActivity/… lines, "target max, dcgm 0" (1006-1008 without --cublas)
        run.no_figure_tests.add(test)


def _line(run: _Run, n: int, raw: str, cut: bool) -> None:
    line, severity = _unlog(raw.strip())
    if not line:
        return
    w = _PREFIX.match(line)
    if w is not None or _BENIGN.match(line) or _LEGACY.match(line):
        run.known = True
    if cut:
        run.error(f"line {n}: the output stops mid-line (no final newline): {line[:100]!r}")
    elif w is not None:
        _worker_line(run, n, line, w)
    elif _LEGACY.match(line):
        run.legacy.append(n)
    elif _ELISION.fullmatch(line):
        run.error(f"line {n}: {line!r}: lines were left out by hand (not a whole output)")
    elif severity in ("ERROR", "FATAL") or (not _BENIGN.match(line) and _ERROR.search(line)):
        run.known = True
        run.error(f"line {n}: {line[:200]}")
    # any other line (a shell prompt, a fence, a kubectl line) is not the tool's: ignored


def _finish(run: _Run) -> list[str]:
    """The errors only the whole output shows."""
    out: list[str] = []
    if run.legacy:
        out.append(
            f"lines {run.legacy[0]}-{run.legacy[-1]}: {len(run.legacy)} readings without the "
            "'Worker G:W[F]:' prefix (DCGM 2.0 layout): the GPU is not printed, not read"
        )
    with_reading = {r.gpu for r in run.readings}
    for gpu, bus in sorted(run.bus_ids.items()):
        if gpu not in with_reading:
            out.append(f"GPU {gpu} ({bus}) started a worker but printed no reading")
    if not run.readings:
        why = "no '(… gflops)' or '(… GiB/sec)' reading"
        if run.no_figure_tests & {1006, 1007, 1008}:
            why += ": -t 1006/1007/1008 print gflops only with --cublas (DCGM ≥ 3.3.1)"
        out.append(why)
    if run.dropped:
        out.append(f"… and {run.dropped} more error lines")
    return out


def parse_dcgmproftester(text: str) -> ProfTester:
    check_limits(text)
    if not text.strip():
        raise ParseError("the output is empty")
    text = text.replace("\r\n", "\n")
    lines = text.split("\n")
    cut = not text.endswith("\n")
    if not cut:
        lines.pop()  # the empty string after the final newline
    run = _Run()
    for n, raw in enumerate(lines, 1):
        _line(run, n, raw, cut and n == len(lines))
    if not run.known and not run.readings:
        raise ParseError(
            "no line dcgmproftester prints (no 'Worker G:W[F]: …' line, no 'Skipping … since "
            "DCGM validation is disabled', no CU_DEVICE_ATTRIBUTE_ line): not its output"
        )
    errors = run.errors + _finish(run)
    return ProfTester(tuple(run.readings), dict(run.bus_ids), not errors, tuple(errors))
