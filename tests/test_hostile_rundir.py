"""A run directory is untrusted input: what `rackops report`, `resume-nodes` and
`validate --resume` do with one an attacker altered. Every attack ends in exit 3 and one line
on stderr naming the file, the line and the record (never a traceback), or in a report whose
writers escape what they write; nothing is read or written outside the run directory.

The run directory is the recorded lab run the replaying launcher serves
(tests/fixtures/replay/lab-2node/run), copied and altered per test. A fuzz test
(hypothesis) alters it at random and holds the same promises."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shlex
import shutil
import signal
import stat
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rackops import names
from rackops.cli import main
from rackops.scheduler import actions as sched
from rackops.scheduler.slurm import node_states
from rackops.validate import rundir as rundir_mod
from rackops.validate.records import DamagedRunDir
from rackops.validate.replay import Recording
from rackops.validate.report import junit, prometheus
from rackops.validate.rundir import RunDir

REC = Path(__file__).parent / "fixtures" / "replay" / "lab-2node"
FIXTURE = REC / "run"
DAMAGED = "the run directory was altered or is damaged"


# --------------------------------------------------------------------------- helpers
@contextlib.contextmanager
def deadline(seconds: int) -> Iterator[None]:
    """Fail, rather than hang, when a read never ends (/dev/zero, a FIFO)."""

    def alarm(signum: int, frame: Any) -> None:
        raise TimeoutError(f"still running after {seconds} s")

    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def copy_run(tmp: Path) -> Path:
    run = tmp / "run"
    shutil.copytree(FIXTURE, run)
    return run


def read_lines(run: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (run / "results.jsonl").read_text().splitlines()]


def write_lines(run: Path, recs: list[Any]) -> None:
    (run / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))


def cli(*argv: str) -> tuple[int, str, str]:
    """rackops in-process; a traceback escapes as an exception and fails the test."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), deadline(30):
        rc = main(list(argv))
    return rc, out.getvalue(), err.getvalue()


def refused(rc: int, err: str, *needles: str) -> None:
    assert rc == 3, err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
    assert DAMAGED in err or "unreadable" in err, err
    for needle in needles:
        assert needle in err, (needle, err)


def index_of(recs: list[dict[str, Any]], pred: Callable[[dict[str, Any]], bool]) -> int:
    return next(i for i, r in enumerate(recs) if pred(r))


def is_pair(r: dict[str, Any]) -> bool:
    return r["kind"] == "pair" and r["meta"].get("metric") != "lat"


def is_phy_after(r: dict[str, Any]) -> bool:
    return r["id"].endswith("/after")


def is_nccl(r: dict[str, Any]) -> bool:
    return r["tool"] == "nccl-tests"


def is_cabling(r: dict[str, Any]) -> bool:
    return r["kind"] == "cabling"


def _set(rec: dict[str, Any], path: str, value: Any) -> None:
    *parents, last = path.split(".")
    cur: Any = rec
    for p in parents:
        cur = cur[int(p)] if isinstance(cur, list) else cur[p]
    if isinstance(cur, list):
        cur[int(last)] = value
    else:
        cur[last] = value


def _first_port(rec: dict[str, Any]) -> str:
    return next(iter(rec["meta"]["ports"]))


# --------------------------------------------------------------------------- records
FIELD_ATTACKS = [
    # (which record, field path, value, what the message names)
    (is_pair, "meta.bw_gbps", "abc", "meta.bw_gbps is 'abc', not a number"),
    (is_pair, "meta.bw_gbps", True, "meta.bw_gbps is True, not a number"),
    (is_pair, "meta.rail", "1", "meta.rail is '1'"),
    (is_pair, "meta.rail", False, "meta.rail is False"),
    (is_pair, "meta.server", "--all", "meta.server is '--all', not a node name"),
    (is_pair, "meta.client", "node[01-99]", "not a node name"),
    (is_pair, "meta.client", "node01,node02", "not a node name"),
    (is_pair, "meta.client_switch_port", None, "meta.client_switch_port is None"),
    (is_pair, "node", "-A", "node is '-A', not a node name"),
    (is_pair, "node", "node01\nnode02", "not a node name"),
    (is_pair, "findings", "x", "findings is 'x', not a list"),
    (is_pair, "findings.0.status", "PASS", "findings[0].status is 'PASS'"),
    (is_pair, "findings.0.subject.node", "--all", "findings[0].subject.node is '--all'"),
    (is_pair, "findings.0.subject.gpu", "0", "findings[0].subject.gpu is '0'"),
    (is_pair, "findings.0.subject", ["node01"], "findings[0].subject is ['node01']"),
    (is_pair, "findings.0.message", 5, "findings[0].message is 5, not a string"),
    (is_pair, "findings.0.sneaky", 1, "findings[0].sneaky"),
    (is_pair, "stdout", "../../../etc/passwd", "stdout is '../../../etc/passwd'"),
    (is_pair, "stdout", "/etc/passwd", "not a file under raw/"),
    (is_pair, "stderr", 7, "stderr is 7"),
    (is_pair, "argv", "rm -rf /", "argv is 'rm -rf /', not a list"),
    (is_pair, "duration_s", "1s", "duration_s is '1s', not a number"),
    (is_pair, "meta", [], "meta is [], not a map"),
    (is_pair, "tool", "a b", "tool is 'a b', not a name"),
    (is_pair, "id", "pair/../x y", "id is 'pair/../x y'"),
    (is_phy_after, "meta.ports.{port}.delta.crc_errors", "1\nfoo 2", "crc_errors is '1\\nfoo 2'"),
    (is_phy_after, "meta.ports.{port}.raw_ber", "1e-12", "raw_ber is '1e-12', not a number"),
    (is_phy_after, "meta.ports.{port}.rx_power_dbm", "x", "rx_power_dbm is 'x', not a list"),
    (is_nccl, "findings.0.expected", json.loads("[" * 20 + "]" * 20), "nested at most"),
    (is_nccl, "findings.0.subject.node", "node01,--all", "not a node name"),
    (is_cabling, "meta.seen", {"a\nb": ["\ud800"]}, "meta.seen.a?b[0] is '\\ud800'"),
    (is_cabling, "findings.0.observed", {"hcas": [["--all", "mlx5_0"]]}, "hcas[0][0]"),
]


@pytest.mark.parametrize(
    ("pick", "path", "value", "needle"),
    FIELD_ATTACKS,
    ids=[f"{p.__name__}-{f}-{v!r:.20}" for p, f, v, _ in FIELD_ATTACKS],
)
def test_a_record_of_the_wrong_shape_is_refused_naming_file_line_record_and_field(
    tmp_path: Path, pick: Any, path: str, value: Any, needle: str
) -> None:
    run = copy_run(tmp_path)
    recs = read_lines(run)
    i = index_of(recs, pick)
    if "{port}" in path:
        path = path.replace("{port}", _first_port(recs[i]))
    _set(recs[i], path, value)
    write_lines(run, recs)
    rc, _out, err = cli("report", str(run))
    refused(rc, err, f"results.jsonl:{i + 1}:", needle)
    if path != "id":
        assert f"record {recs[i]['id']}:" in err


def test_what_rackops_writes_is_read_as_it_is(tmp_path: Path) -> None:
    """The schema is no stricter than the writers: an MLNX-OS port name has a space."""
    run = copy_run(tmp_path)
    recs = read_lines(run)
    i = index_of(recs, is_pair)
    recs[i]["meta"]["client_switch_port"] = "leaf-r0 ethernet 1/1"
    recs[i]["findings"][0]["subject"]["switch_port"] = "ethernet 1/1"
    write_lines(run, recs)
    assert len(RunDir(run).records()) == len(recs)
    rc, _out, err = cli("report", str(run))
    assert rc == 0 and err == "", err


@pytest.mark.parametrize(
    "number", ["NaN", "Infinity", "-Infinity", "1e999", "9" * 5000, "1" + "0" * 30]
)
def test_a_number_that_is_not_finite_or_too_big_is_refused(tmp_path: Path, number: str) -> None:
    run = copy_run(tmp_path)
    lines = (run / "results.jsonl").read_text().splitlines()
    i = next(n for n, x in enumerate(lines) if '"bw_gbps": ' in x)
    lines[i] = re.sub(r'"bw_gbps": [0-9.e+-]+', f'"bw_gbps": {number}', lines[i])
    (run / "results.jsonl").write_text("\n".join(lines) + "\n")
    rc, _out, err = cli("report", str(run))
    refused(rc, err, f"results.jsonl:{i + 1}:")


def test_a_lone_surrogate_is_refused(tmp_path: Path) -> None:
    run = copy_run(tmp_path)
    recs = read_lines(run)
    recs[0]["findings"][0]["message"] = "\ud800"
    (run / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    rc, _out, err = cli("report", str(run))
    refused(rc, err, "results.jsonl:1:", "message")


# --------------------------------------------------------------------------- files
def _point_stdout(run: Path, make: Callable[[Path], None]) -> None:
    """Replace the NCCL record's raw stdout file (which `report` reads) with something."""
    rec = next(r for r in read_lines(run) if is_nccl(r) and r["kind"] == "nccl")
    target = run / rec["stdout"]
    target.unlink()
    make(target)


@pytest.mark.parametrize(
    "make",
    [
        lambda p: p.symlink_to("/dev/zero"),
        lambda p: os.mkfifo(p),
        lambda p: p.mkdir(),
        lambda p: p.symlink_to(p.parent.parent.parent / "outside" / "secret"),
        lambda p: p.symlink_to("../../outside/secret"),
    ],
    ids=["dev-zero", "fifo", "directory", "abs-symlink-outside", "rel-symlink-outside"],
)
def test_a_raw_output_that_is_not_a_regular_file_of_the_run_is_refused(
    tmp_path: Path, make: Callable[[Path], None]
) -> None:
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret").write_text("secret\n")
    run = copy_run(tmp_path)
    _point_stdout(run, make)
    started = time.monotonic()
    rc, _out, err = cli("report", str(run))
    refused(rc, err, "raw/")
    assert time.monotonic() - started < 10


def test_a_raw_directory_that_leads_outside_is_refused(tmp_path: Path) -> None:
    run = copy_run(tmp_path)
    shutil.move(run / "raw", tmp_path / "elsewhere")
    (run / "raw").symlink_to(tmp_path / "elsewhere")
    rc, _out, err = cli("report", str(run))
    refused(rc, err, "raw")


def test_a_raw_output_over_the_limit_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = copy_run(tmp_path)
    monkeypatch.setattr(rundir_mod, "MAX_RAW_BYTES", 100)
    rc, _out, err = cli("report", str(run))
    refused(rc, err, "bytes, larger than 100")


@pytest.mark.parametrize("what", ["dev-zero", "fifo", "too-big", "long-line", "many-lines"])
def test_results_jsonl_is_read_as_a_bounded_regular_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, what: str
) -> None:
    run = copy_run(tmp_path)
    results = run / "results.jsonl"
    if what == "dev-zero":
        results.unlink()
        results.symlink_to("/dev/zero")
    elif what == "fifo":
        results.unlink()
        os.mkfifo(results)
    elif what == "too-big":
        monkeypatch.setattr(rundir_mod, "MAX_RESULTS_BYTES", 1000)
    elif what == "long-line":
        monkeypatch.setattr(rundir_mod, "MAX_LINE_BYTES", 1000)
    else:
        monkeypatch.setattr(rundir_mod, "MAX_RESULTS_LINES", 10)
    started = time.monotonic()
    rc, _out, err = cli("report", str(run))
    refused(rc, err, "results.jsonl")
    assert time.monotonic() - started < 10


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ('{"scheduler": "slurm\\ntouch /tmp/pwned"}', "scheduler"),
        ('{"scheduler": ["slurm"]}', "scheduler"),
        ('{"suite": 5}', "suite is 5"),
        ('{"slurm_conf": "/etc/x\\u0000"}', "slurm_conf"),
        ('{"started": NaN}', "NaN"),
        ("[1, 2]", "a map"),
        ('{"plan": ', "not JSON"),
    ],
)
def test_a_run_json_that_rackops_never_writes_is_refused(
    tmp_path: Path, content: str, needle: str
) -> None:
    run = copy_run(tmp_path)
    (run / "run.json").write_text(content)
    rc, _out, err = cli("report", str(run))
    refused(rc, err, "run.json", needle)
    assert not Path("/tmp/pwned").exists()


# --------------------------------------------------------------------------- writers
def _outside_bait(tmp_path: Path) -> dict[str, Path]:
    outside = tmp_path / "outside"
    outside.mkdir(exist_ok=True)
    bait = {}
    for name in ("report.json", "junit.xml", "metrics.prom", "report.html", "actions.sh"):
        bait[name] = outside / name
        bait[name].write_text("untouched\n")
    return bait


def test_nothing_is_written_through_a_symlink_planted_in_the_run_directory(
    tmp_path: Path,
) -> None:
    run = copy_run(tmp_path)
    bait = _outside_bait(tmp_path)
    for name, target in bait.items():
        (run / name).unlink(missing_ok=True)
        (run / name).symlink_to(target)
    rc, _out, err = cli("report", str(run))
    assert rc in (0, 1), err
    for name, target in bait.items():
        assert target.read_text() == "untouched\n", name
        assert not (run / name).is_symlink() and (run / name).is_file(), name


def test_a_control_character_in_a_message_leaves_junit_readable_and_the_terminal_clean(
    tmp_path: Path,
) -> None:
    run = copy_run(tmp_path)
    recs = read_lines(run)
    hostile = "bad\x01\x0b\x0c\x1b[31mred\x7f\ufffe\uffff end"
    for r in recs[:3]:
        r["findings"][0]["status"] = "WARN"
        r["findings"][0]["message"] = hostile
    recs[3]["findings"][0]["status"] = "ERROR"
    recs[3]["findings"][0]["message"] = hostile
    write_lines(run, recs)
    rc, out, err = cli("report", str(run))
    assert rc == 3, err  # an ERROR leaves it undecided
    root = ET.parse(run / "junit.xml").getroot()  # raises on an invalid character
    texts = [e.text or "" for e in root.iter()] + [e.get("message") or "" for e in root.iter()]
    assert any("bad\ufffd" in t and "end" in t for t in texts)
    assert not re.search(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]", out), repr(out)


def test_junit_replaces_every_character_xml_forbids() -> None:
    bad = "".join(chr(c) for c in range(0x20) if chr(c) not in "\t\n\r") + "\ud800\ufffe\uffff"
    rec = {
        "kind": "node",
        "tool": "x\x00",
        "duration_s": None,
        "findings": [
            {"code": "C\x01", "status": s, "subject": {"node": "n\x02"}, "message": bad}
            for s in ("FAIL", "ERROR", "WARN", "OK")
        ],
    }
    text = junit({}, [rec])
    ET.fromstring(text.encode("utf-8", errors="strict"))


def test_metrics_prom_writes_numbers_only_and_escapes_labels() -> None:
    from prometheus_client.parser import text_string_to_metric_families

    from rackops.validate.firstscreen import ACTIONS

    evil = 'a"b\\c\nrackops_culprits 999'

    def pair(bw: Any) -> dict[str, Any]:
        return {"server": evil, "client": "n2", "rail": 0, "bw_gbps": bw, "lat_us": None}

    report = {
        "exit_code": 0,
        "nodes": {evil: {"ibstat": "OK", "bogus": "PASS"}},
        "pairs": [pair(x) for x in ("1\nrackops_culprits 999", True, float("nan"), 1e999, 5)],
        "ports": [
            {"node": evil, "hca": "mlx5_0", "delta": {"crc": "x\ny 1", "sym": 3}, "raw_ber": "1"}
        ],
        "culprits": [],
    }
    text = prometheus(report)
    samples = [x for x in text.splitlines() if x and not x.startswith("#")]
    families = list(text_string_to_metric_families(text))
    parsed = [s for f in families for s in f.samples]
    # verdict, one check, bw 5, crc sym 3, culprits; and a count per fix group (all 0)
    assert len(parsed) == len(samples) == 5 + len(ACTIONS)
    assert {s.name for s in parsed if s.value == 999} == set()
    bw = [s for s in parsed if s.name == "rackops_link_bandwidth_gbps"]
    assert [(s.labels["server"], s.value) for s in bw] == [(evil, 5)]


def test_report_html_escapes_what_the_run_directory_says(tmp_path: Path) -> None:
    run = copy_run(tmp_path)
    recs = read_lines(run)
    i = index_of(recs, lambda r: r["kind"] == "node" and r["tool"] == "ibstat")
    recs[i]["findings"][0]["status"] = "FAIL"
    recs[i]["findings"][0]["message"] = '<script>alert("x")</script><img src=x onerror=1>'
    recs[i]["findings"][0]["remediation"] = "</td><script>2</script>"
    write_lines(run, recs)
    (run / "run.json").write_text(json.dumps({"suite": "<b>lab</b>", "plan": "<i>p</i>"}))
    rc, _out, err = cli("report", str(run))
    assert rc == 2, err
    page = (run / "report.html").read_text()
    assert "<script>alert" not in page and "<script>2" not in page and "<img src=x" not in page
    assert "&lt;script&gt;alert" in page and "<b>lab</b>" not in page


def test_actions_sh_quotes_every_word_a_message_brings(tmp_path: Path) -> None:
    run = copy_run(tmp_path)
    recs = read_lines(run)
    i = index_of(recs, lambda r: r["kind"] == "node" and r["tool"] == "ibstat")
    node = recs[i]["node"]
    msg = "gone'; touch /tmp/pwned; echo '$(id) `id`\nrm -rf / #"
    recs[i]["findings"][0]["status"] = "FAIL"
    recs[i]["findings"][0]["message"] = msg
    write_lines(run, recs)
    meta = json.loads((run / "run.json").read_text())
    (run / "run.json").write_text(json.dumps({**meta, "scheduler": "slurm"}))
    rc, _out, err = cli("report", str(run))
    assert rc == 2, err
    lines = (run / "actions.sh").read_text().splitlines()
    cmds = [shlex.split(x) for x in lines if not x.startswith("#")]
    assert len(cmds) == 1
    assert cmds[0][:4] == ["scontrol", "update", f"nodename={node}", "state=drain"]
    assert len(cmds[0]) == 5 and cmds[0][4].startswith("reason=rackops: ")


# --------------------------------------------------------------------------- resume-nodes
def _fake_tools(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """kubectl, scontrol and sinfo that only log their argv."""
    log = tmp / "calls.log"
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    for tool in ("kubectl", "scontrol", "sinfo"):
        path = bin_dir / tool
        path.write_text(f'#!/bin/sh\necho "{tool} $*" >> {log}\necho "{{\\"items\\": []}}"\n')
        path.chmod(path.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    return log


HOSTILE_NAMES = ["--all", "-A", "node[01-99]", "n1,n2", "n 1", "n1\n", "", "n1;id", 5, None]


@pytest.mark.parametrize("scheduler", ["kubernetes", "slurm"])
@pytest.mark.parametrize("where", ["nodes", "culprits"])
@pytest.mark.parametrize("node", HOSTILE_NAMES, ids=[repr(n) for n in HOSTILE_NAMES])
def test_resume_nodes_never_puts_a_name_that_is_not_a_name_on_a_command_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scheduler: str, where: str, node: Any
) -> None:
    log = _fake_tools(tmp_path, monkeypatch)
    run = tmp_path / "run"
    run.mkdir()
    report: dict[str, Any] = {"culprits": [], "errors": [], "nodes": {"node01": {"x": "OK"}}}
    if where == "nodes":
        if not isinstance(node, str):
            pytest.skip("a JSON key is a string")
        report["nodes"][node] = {"ibstat": "OK"}
    else:
        report["culprits"].append({"node": node, "kind": "node", "message": "m", "where": "w"})
        if node is None:
            pytest.skip("a culprit without a node is a rack-level culprit")
    (run / "report.json").write_text(json.dumps(report))
    (run / "run.json").write_text(json.dumps({"scheduler": scheduler}))
    rc, _out, err = cli("resume-nodes", str(run))
    refused(rc, err, "report.json")
    assert not log.exists(), log.read_text()


@pytest.mark.parametrize(
    "report",
    [
        {"culprits": "x", "errors": [], "nodes": {}},
        {"culprits": [], "errors": [5], "nodes": {}},
        {"culprits": [], "errors": [{"subject": "n1"}], "nodes": {}},
        {"culprits": [], "errors": [], "nodes": []},
        {"culprits": [], "errors": [], "nodes": {"n1": {"ibstat": "PASS"}}},
        {"culprits": [], "errors": [], "nodes": {"n1": ["OK"]}},
        {"culprits": [{"node": "n1", "kind": 3, "message": "m"}], "errors": [], "nodes": {}},
    ],
)
def test_a_report_json_of_the_wrong_shape_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, report: dict[str, Any]
) -> None:
    log = _fake_tools(tmp_path, monkeypatch)
    run = tmp_path / "run"
    run.mkdir()
    (run / "report.json").write_text(json.dumps(report))
    (run / "run.json").write_text(json.dumps({"scheduler": "kubernetes"}))
    rc, _out, err = cli("resume-nodes", str(run))
    refused(rc, err, "report.json")
    assert not log.exists()


@pytest.mark.parametrize("what", ["dev-zero", "fifo", "nan"])
def test_a_report_json_that_is_not_a_bounded_regular_file_is_refused(
    tmp_path: Path, what: str
) -> None:
    run = tmp_path / "run"
    run.mkdir()
    if what == "dev-zero":
        (run / "report.json").symlink_to("/dev/zero")
    elif what == "fifo":
        os.mkfifo(run / "report.json")
    else:
        (run / "report.json").write_text('{"culprits": [], "errors": [], "nodes": NaN}')
    rc, _out, err = cli("resume-nodes", str(run))
    assert rc == 3 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize("node", ["--all", "-x", "node[01-02]", "a,b", "a b", "a\nb", ""])
def test_the_command_builders_refuse_a_name_that_is_not_a_name(
    node: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    log = _fake_tools(tmp_path, monkeypatch)
    with pytest.raises(names.UnsafeName):
        sched.slurm_drain(node, "why")
    with pytest.raises(names.UnsafeName):
        sched.slurm_resume(node)
    culprit = {"node": node, "kind": "node", "where": node, "message": "m"}
    for scheduler in ("slurm", "kubernetes"):
        if not node:  # a culprit without a node is the rack's: nothing to drain
            assert sched.drain_commands({"culprits": [culprit]}, scheduler) == []
            continue
        with pytest.raises(names.UnsafeName):
            sched.drain_commands({"culprits": [culprit]}, scheduler)
    with pytest.raises(names.UnsafeName):
        node_states(["node01", node], dict(os.environ))
    assert not log.exists()


def test_a_drain_reason_is_one_line() -> None:
    argv = sched.slurm_drain("node01", "a\nb\rc\x00d")
    assert not re.search(r"[\x00-\x1f]", argv[-1])


# --------------------------------------------------------------------------- --resume
def test_resume_reads_a_tampered_run_as_damaged(tmp_path: Path) -> None:
    run = copy_run(tmp_path)
    recs = read_lines(run)
    recs[5]["node"] = "--all"
    write_lines(run, recs)
    with pytest.raises(DamagedRunDir, match=r"results\.jsonl:6: record .*: node is '--all'"):
        RunDir(run).done_ids()
    with pytest.raises(DamagedRunDir):
        RunDir(run).compact()


def test_the_replay_recording_reads_raw_outputs_inside_the_run_only(tmp_path: Path) -> None:
    run = copy_run(tmp_path)
    _point_stdout(run, lambda p: p.symlink_to("/dev/zero"))
    with deadline(10), pytest.raises(DamagedRunDir, match="symlink"):
        Recording.from_rundir(run)


def test_resume_never_writes_through_a_planted_symlink(tmp_path: Path) -> None:
    run = copy_run(tmp_path)
    recs = read_lines(run)
    bait = tmp_path / "outside.txt"
    bait.write_text("untouched\n")
    (run / "results.jsonl").rename(tmp_path / "results.jsonl")
    (run / "results.jsonl").symlink_to(bait)
    rundir = RunDir(run)
    with pytest.raises(DamagedRunDir):
        rundir.append(recs[0])
    (run / "perftest-port-blocks.json").symlink_to(bait)
    rundir.write_json("perftest-port-blocks.json", [1, 2])
    assert bait.read_text() == "untouched\n"
    assert json.loads((run / "perftest-port-blocks.json").read_text()) == [1, 2]
    shutil.rmtree(run / "raw")
    (run / "raw").symlink_to(tmp_path)
    with pytest.raises(DamagedRunDir, match="raw"):
        RunDir(run)


@pytest.mark.parametrize("content", ['["a", 1]', "[true]", '{"a": 1}', "[1e999]"])
def test_the_port_blocks_file_is_checked_on_resume(tmp_path: Path, content: str) -> None:
    run = copy_run(tmp_path)
    (run / "perftest-port-blocks.json").write_text(content)
    with pytest.raises(DamagedRunDir, match=r"perftest-port-blocks\.json"):
        RunDir(run).read_json("perftest-port-blocks.json")


def test_validate_resume_on_a_tampered_run_exits_3_before_connecting(tmp_path: Path) -> None:
    run = copy_run(tmp_path)
    recs = read_lines(run)
    recs[0]["findings"][0]["subject"]["hca"] = "mlx5_0 --all"
    write_lines(run, recs)
    rc, _out, err = cli(
        "validate", "-i", str(REC / "inventory"), "--suite", "lab", "--resume", str(run)
    )
    # ansible-core may warn that it cannot patch a captured stderr: the last line is ours
    last = err.strip().splitlines()[-1]
    refused(rc, last, "results.jsonl:1:", "subject.hca is 'mlx5_0 --all', not a name")
    assert "Traceback" not in err


def test_duplicate_ids_and_a_cut_line_are_reported_not_a_crash(tmp_path: Path) -> None:
    run = copy_run(tmp_path)
    text = (run / "results.jsonl").read_text()
    (run / "results.jsonl").write_text(text + text + text[:200])
    rc, out, err = cli("report", str(run))
    assert rc == 3 and "RUN-001" in out and "Traceback" not in err


# --------------------------------------------------------------------------- fuzz
FUZZ_VALUES = [
    None, True, False, 0, -1, 2**70, 1e308, "abc", "", "--all", "node[01-99]", "n1,n2",
    "../../../etc/passwd", "/dev/zero", "raw/../../x", "a\x00b\x1b[31m\n", "\ud800",
    "<script>x</script>", [], {}, [1, "x"], {"a": None}, "raw/", "raw/nope.out", "OK", "FAIL",
]  # fmt: skip
TEXT_SUBS = [
    (r"\d+\.\d+", "NaN"),
    (r"\d+\.\d+", "Infinity"),
    (r"\d+\.\d+", "1e999"),
    (r"\d+\.\d+", "9" * 5000),
    (r'"schema": 2', '"schema": 3'),
    (r'"schema": 2', '"schema": "2"'),
    (r'"node01"', '"--all"'),
    (r'"kind": "\w+"', '"kind": "pair"'),
    (r"true|false", '"yes"'),
    (r"\[\]", "{}"),
    (r"\{\}", "[]"),
    (r'"raw/', '"raw/../../'),
]
ALTERATIONS = [
    "record", "text", "truncate", "duplicate", "delete-raw", "link-raw", "raw-garbage",
    "run.json", "report.json", "link-out", "delete-run.json",
]  # fmt: skip


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value[:3]):
            yield from _paths(v, (*prefix, i))


def _mutate_json(data: Any, rnd: Any) -> Any:
    """One value somewhere in the JSON replaced by a hostile one, or its key deleted."""
    paths = [p for p in _paths(data) if p]
    if not paths:
        return rnd.choice(FUZZ_VALUES)
    path = rnd.choice(paths)
    parent = data
    for p in path[:-1]:
        parent = parent[p]
    if rnd.random() < 0.2 and isinstance(parent, dict):
        del parent[path[-1]]
    else:
        parent[path[-1]] = rnd.choice(FUZZ_VALUES)
    return data


def _alter_results(lines: list[str], what: str, rnd: Any) -> list[str]:
    i = rnd.randrange(len(lines))
    if what == "record":
        with contextlib.suppress(ValueError):
            lines[i] = json.dumps(_mutate_json(json.loads(lines[i]), rnd))
    elif what == "text":
        pat, sub = rnd.choice(TEXT_SUBS)
        lines[i] = re.sub(pat, sub, lines[i], count=1)
    elif what == "truncate":
        lines = [*lines[:i], lines[i][: rnd.randrange(len(lines[i]) + 1)]]
    elif what == "duplicate":
        lines += rnd.sample(lines, min(3, len(lines)))
    return lines


def _alter_files(run: Path, outside: Path, what: str, rnd: Any) -> None:
    raws = sorted((run / "raw").iterdir())
    if what in ("delete-raw", "link-raw", "raw-garbage") and raws:
        f = rnd.choice(raws)
        f.unlink()
        if what == "link-raw":
            f.symlink_to(rnd.choice(["/dev/zero", str(outside / "secret"), "../../outside"]))
        elif what == "raw-garbage":
            f.write_bytes(bytes(rnd.randrange(256) for _ in range(rnd.randrange(200))))
    elif what in ("run.json", "report.json"):
        path = run / what
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            data = {}
        path.unlink(missing_ok=True)
        path.write_text(json.dumps(_mutate_json(data, rnd)))
    elif what == "link-out":
        name = rnd.choice(["report.json", "junit.xml", "metrics.prom", "report.html", "run.json"])
        (run / name).unlink(missing_ok=True)
        (run / name).symlink_to(outside / "secret")
    elif what == "delete-run.json":
        (run / "run.json").unlink(missing_ok=True)


def _alter(run: Path, outside: Path, what: str, rnd: Any) -> None:
    results = run / "results.jsonl"
    if what in ("record", "text", "truncate", "duplicate"):
        lines = results.read_text(errors="surrogateescape").splitlines()
        if lines:
            lines = _alter_results(lines, what, rnd)
        results.write_text("".join(x + "\n" for x in lines), errors="surrogateescape")
    else:
        _alter_files(run, outside, what, rnd)


def _snapshot(root: Path) -> dict[str, tuple[int, bytes]]:
    return {
        str(p.relative_to(root)): (p.lstat().st_mode, p.read_bytes() if p.is_file() else b"")
        for p in root.rglob("*")
        if not p.is_symlink()
    }


@settings(
    max_examples=40,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    st.lists(st.sampled_from(ALTERATIONS), min_size=1, max_size=4),
    st.randoms(use_true_random=False),
)
def test_fuzz_report_on_an_altered_run_directory(alterations: list[str], rnd: Any) -> None:
    """`rackops report` on a run directory altered at random: exit 0 to 3 (64 when
    results.jsonl is gone: not a run directory), one line on stderr, no traceback, in
    bounded time, and nothing outside the run directory read-through or written."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        outside = root / "outside"
        outside.mkdir()
        (outside / "secret").write_text("secret\n")
        run = copy_run(root)
        cli("report", str(run))  # a report.json, to alter too
        for what in alterations:
            _alter(run, outside, what, rnd)
        before = _snapshot(outside)
        started = time.monotonic()
        rc, out, err = cli("report", str(run))  # an escaping exception fails here
        assert time.monotonic() - started < 20
        assert "Traceback" not in err + out
        gone = not (run / "results.jsonl").is_file()
        assert rc in ((3, 64) if gone else (0, 1, 2, 3)), (rc, err)
        assert len(err.strip().splitlines()) <= 1, err
        assert sorted(p.name for p in root.iterdir()) == ["outside", "run"]
        assert _snapshot(outside) == before


def test_resume_nodes_never_takes_the_slurm_conf_from_the_run_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A slurm.conf names plugins (code): which one Slurm's commands read is the operator's
    choice (--slurm-conf, $SLURM_CONF), never what a run directory says."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    seen = tmp_path / "conf.log"
    for tool in ("scontrol", "sinfo"):
        path = bin_dir / tool
        path.write_text(f'#!/bin/sh\necho "$SLURM_CONF" >> {seen}\n')
        path.chmod(path.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.delenv("SLURM_CONF", raising=False)
    run = tmp_path / "run"
    run.mkdir()
    report = {"culprits": [], "errors": [], "nodes": {"node01": {"ibstat": "OK"}}}
    (run / "report.json").write_text(json.dumps(report))
    planted = str(tmp_path / "attacker" / "slurm.conf")
    (run / "run.json").write_text(json.dumps({"scheduler": "slurm", "slurm_conf": planted}))
    rc, out, err = cli("resume-nodes", str(run))
    assert rc == 0 and "Traceback" not in err, err
    assert seen.exists() and planted not in seen.read_text(), seen.read_text()
    assert "--slurm-conf" in out  # says which conf the run used, and how to choose it
    mine = str(tmp_path / "mine.conf")
    seen.unlink()
    rc, out, err = cli("resume-nodes", str(run), "--slurm-conf", mine)
    assert rc == 0 and set(seen.read_text().split()) == {mine}, seen.read_text()


def test_a_record_the_reader_would_refuse_is_written_as_that_steps_error(tmp_path: Path) -> None:
    """A stage that records what a garbled tool printed (None, a control character, NaN)
    must not lose the run: the step is written as its node's ERROR, and every record of the
    run is read back."""
    from rackops.validate.records import Record
    from rackops.validate.rundir import RunDir

    run = RunDir(tmp_path / "run")
    ok = {"code": "PHY-001", "status": "OK", "subject": {"node": "node02"}, "message": "fine"}
    run.append(Record("phy/node02/before", "snapshot", "node02", "phy", [ok], {"t": 1.0}))
    for i, meta in enumerate(
        [
            {"states": {"mlx5_3": "Act\x00\x1b[?%$#@!"}},  # a garbled state
            {"t": float("nan")},
            {"ports": {"mlx5_0": {"family": "ib", "counters": {"x": "5000.0"}}}},
        ]
    ):
        run.append(Record(f"phy/node0{i + 3}/before", "snapshot", f"node0{i + 3}", "phy", [], meta))
    pair = {"server": "node01"}  # a pair record missing its required fields
    run.append(Record("pair/node01-node09/rail0", "pair", "node01", "ib_write_bw", [], pair))
    recs = {r["id"]: r for r in run.records()}
    assert run.unreadable == [] and len(recs) == 5
    assert recs["phy/node02/before"]["findings"][0]["status"] == "OK"
    for rid in ("phy/node03/before", "phy/node04/before", "phy/node05/before"):
        (f,) = recs[rid]["findings"]
        assert f["status"] == "ERROR" and f["code"] == "RUN-002", f
        assert f["subject"]["node"] == rid.split("/")[1]
    assert "not a one-line label" in recs["phy/node03/before"]["findings"][0]["message"]
    assert recs["pair/node01-node09/rail0"]["kind"] == "node"  # no pair meta to index
