"""One NVLink fault and the GPUs that followed it (issue 42): the NVLink5 Xid body read from
real lines, the first fatal link named once, its followers folded into it — never 72 GPUs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rackops.checks.gpuload import judge_kernel_log
from rackops.checks.nvlcascade import TrayLog, follows_nvlink, judge_cascade
from rackops.findings import Status
from rackops.parsers.kernel_xid import parse_kernel_xid

XID = Path(__file__).parent / "fixtures" / "kernel-xid"
# a GB200 tray's four GPUs by their PCI domains (the real tray's lines: 0008/0009/0018/0019)
TRAY = {"0008:01:00.0": 0, "0009:01:00.0": 1, "0018:01:00.0": 2, "0019:01:00.0": 3}


def _events(text: str) -> Any:
    return list(parse_kernel_xid(text).events)


def test_the_nvlink5_body_names_unit_severity_and_link() -> None:
    tray = _events((XID / "dmesg-gb200-xid149-154-tray.txt").read_text())
    first = tray[0].nvlink
    assert first is not None and (first.unit, first.fatal, first.link) == (
        "NETIR_LINK_EVT",
        True,
        1,
    )
    assert tray[1].code == 154 and tray[1].nvlink is None  # not an NVLink5 unit's line
    units = _events((XID / "kernel-gb200-nvlink5-units.txt").read_text())
    seen = {(e.code, e.nvlink.unit, e.nvlink.fatal, e.nvlink.link) for e in units if e.nvlink}
    assert (145, "RLW_RXPIPE", False, 13) in seen  # after pid=…, name=…
    assert (149, "NETIR", True, None) in seen  # Link -1: the unit, no link
    assert (149, "NETIR_BER_EVENT", False, 3) in seen
    assert all(e.nvlink is not None for e in units), [e.message for e in units if not e.nvlink]


@pytest.mark.parametrize(
    ("body", "link"),
    [
        ("NETIR_LINK_EVT Fatal XC 1 i 2 Link 01 [0x0000000a]", 1),  # a claimed pre-R575 form
        ("TLW_RX/TLW_RX_PIPE0 Fatal XC0 i0 Link 17 (0x0 0x0)", 17),
        ("MSE_WATCHDOG Fatal XC0 i0 Link 00 (0x00000000 0x00000000)", 0),
    ],
)
def test_each_nvlink5_body_form_reads(body: str, link: int) -> None:
    (e,) = _events(f"NVRM: Xid (PCI:0008:01:00): 149, {body}\n")
    assert e.nvlink is not None and e.nvlink.fatal and e.nvlink.link == link


@pytest.mark.parametrize(
    "body",
    [
        "NETIR_LINK_EVT Fatal XC0 i0 Link 9999 (0x0)",  # no GPU has that link
        "NETIR_LINK_EVT Fatal",  # cut after the severity
        "NETIR_LINK_EVT Fatal XC0 i0 Link",
        "simulated Xid",
    ],
)
def test_an_nvlink5_body_that_does_not_read_names_no_link(body: str) -> None:
    (e,) = _events(f"NVRM: Xid (PCI:0008:01:00): 149, {body}\n")
    assert e.code == 149 and (e.nvlink is None or e.nvlink.link is None)


def test_a_nonfatal_nvlink5_event_warns_a_fatal_one_fails_naming_its_link() -> None:
    events = _events((XID / "kernel-gb200-nvlink5-units.txt").read_text())
    found = judge_kernel_log(events, TRAY, "tray01", before_run=False)
    for e, f in zip(events, found, strict=True):
        assert e.nvlink is not None
        assert f.status is (Status.FAIL if e.nvlink.fatal else Status.WARN), f.message
    assert "link 13 during the run" in found[1].message, found[1].message


def _cascade(*trays: tuple[str, str]) -> tuple[Any, dict[str, Any]]:
    return judge_cascade("nvl72-a", [TrayLog(n, TRAY, _events(t)) for n, t in trays])


# a peer of a failed link, as the public B200 experiment saw each peer: one RLW error, its
# channels killed with the cause named, its recovery action changed
ZEROS = " ".join(["0x00000000"] * 4)
PEER = (
    "[  930.100000] NVRM: Xid (PCI:{dom}:01:00): 145, RLW_SRC_TRACK Nonfatal XC1 i0 Link 12 "
    f"(0x040988e2 0x00000008 {ZEROS})\n"
    "[  930.383000] NVRM: Xid (PCI:{dom}:01:00): 45, pid=4101, name=all_reduce_perf, "
    "Ch 00000001 caused by previous Xid 149\n"
    "[  930.404000] NVRM: Xid (PCI:{dom}:01:00): 149, NETIR Fatal XC0 i0 Link -1 "
    f"(0x000fe406 0x00000000 {ZEROS})\n"
    "[  930.505000] NVRM: Xid (PCI:{dom}:01:00): 154, GPU recovery action changed from 0x0 "
    "(None) to 0x1 (GPU Reset Required)\n"
)


def _peers(*doms: str) -> str:
    return "".join(PEER.format(dom=d) for d in doms)


def test_the_real_tray_sequence_names_its_first_link() -> None:
    """gpud's GB200 tray: 0009 link 01 fatal first, then 0008 link 01, then more links."""
    found, view = _cascade(("tray03", (XID / "dmesg-gb200-xid149-154-tray.txt").read_text()))
    assert [(f.code, f.status, f.subject.node, f.subject.gpu, f.subject.port) for f in found] == [
        ("NVX-001", Status.FAIL, "tray03", 1, 1)
    ]
    assert found[0].action == "cable" and "link 1 of tray03 GPU 1" in found[0].message
    (origin,) = view["origins"]
    assert (origin["unit"], origin["xid"]) == ("NETIR_LINK_EVT", 149)
    followed = {(f["node"], f["gpu"]) for f in origin["followed"]}
    assert followed == {("tray03", 0), ("tray03", 2), ("tray03", 3)}


def test_one_link_across_the_domain_is_one_finding_not_every_gpu() -> None:
    origin = (
        "[ 1200.000100] NVRM: Xid (PCI:0018:01:00): 149, NETIR_LINK_EVT  Fatal   XC0 i0 Link 07 "
        "(0x021425c6 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)\n"
    ) + _peers("0008", "0009", "0019")
    trays = [("tray01", origin)] + [(f"tray{s:02d}", _peers(*TRAY_DOMS)) for s in range(2, 19)]
    found, view = _cascade(*trays)
    assert [(f.code, f.subject.node, f.subject.gpu, f.subject.port) for f in found] == [
        ("NVX-001", "tray01", 2, 7)
    ]
    assert "71 other GPUs on 18 trays followed it" in found[0].message, found[0].message
    assert len(view["origins"][0]["followed"]) == 71


TRAY_DOMS = ("0008", "0009", "0018", "0019")


def test_followers_alone_name_no_link() -> None:
    found, view = _cascade(("tray01", _peers(*TRAY_DOMS)), ("tray02", _peers("0008")))
    assert [(f.code, f.status) for f in found] == [("NVX-000", Status.OK)]
    assert "none a link-named fatal event" in found[0].message and view["origins"] == []


def test_a_quiet_domain_is_ok_and_an_unread_tray_is_no_evidence() -> None:
    found, _ = judge_cascade(
        "nvl72-a", [TrayLog("tray01", TRAY, []), TrayLog("tray02", TRAY, None)]
    )
    assert [(f.code, f.status) for f in found] == [("NVX-000", Status.OK)]


def test_first_links_on_two_trays_are_each_named() -> None:
    """Two kernels' clocks are not one clock: neither tray's first fatal link is put first."""
    a = "[ 50.0] NVRM: Xid (PCI:0008:01:00): 149, NETIR_LINK_EVT Fatal XC0 i0 Link 02 (0x1 0x0)\n"
    b = "[ 10.0] NVRM: Xid (PCI:0019:01:00): 149, NETIR_LINK_EVT Fatal XC0 i0 Link 05 (0x1 0x0)\n"
    found, _ = _cascade(("tray01", a), ("tray02", b))
    assert [(f.subject.node, f.subject.gpu, f.subject.port) for f in found] == [
        ("tray01", 0, 2),
        ("tray02", 3, 5),
    ]
    assert all("each is named" in f.message for f in found)


def test_xid_45_follows_only_an_nvlink_cause() -> None:
    (nvl, other, bare) = _events(
        "NVRM: Xid (PCI:0000:dc:00): 45, pid=1, name=p, Ch 00000001 caused by previous Xid 149\n"
        "NVRM: Xid (PCI:0000:dc:00): 45, pid=1, name=p, Ch 00000001 caused by previous Xid 13\n"
        "NVRM: Xid (PCI:0000:dc:00): 45, pid=1, name=p, Ch 00000001\n"
    )
    assert [follows_nvlink(e) for e in (nvl, other, bare)] == [True, False, False]


# --- through a run: the kernel logs as the load stage records them, and the localiser ------


def _run(tmp_path: Path, logs: dict[str, str]) -> dict[str, Any]:
    """The example NVL72 rack's trays with these kernel logs after the run (none before),
    judged by the load stage and the NVLink groups, and the report's culprits."""
    from rackops.inventory import load_inventory
    from rackops.profiles import load_profile
    from rackops.suites import load_suite
    from rackops.validate.executor import CommandResult
    from rackops.validate.plan import make_plan
    from rackops.validate.report import write_reports
    from rackops.validate.rundir import RunDir
    from rackops.validate.runner import Runner

    inv = Path(__file__).resolve().parent.parent / "inventories" / "example-gb200-nvl72"
    cluster = load_inventory(inv).raise_for_errors()
    suite = load_suite("acceptance")
    profiles = {"gb200-nvl72": load_profile("gb200-nvl72").profile}
    no_executor: Any = None  # nothing here runs a command
    r = Runner(cluster, suite, profiles, {}, no_executor, RunDir(tmp_path), progress=print)
    r._steps, r._bus_index, r._loaded_now = {}, {}, set()
    for node in cluster.nodes:
        r._bus_index[node.name] = dict(TRAY)
        before = CommandResult(node.name, ("dmesg",), 0, "[ 1.0] Linux version\n", "", 0.1)
        r._record(f"node/{node.name}/kernel-before", "node", node.name, "kernel-xid", before, [])
        r._steps[(node.name, "kernel-before")] = next(
            x for x in r.rundir.records() if x["id"] == f"node/{node.name}/kernel-before"
        )
        text = "[ 1.0] Linux version\n" + logs.get(node.name, "")
        after = CommandResult(node.name, ("dmesg",), 0, text, "", 0.1)
        found = r._judge_kernel(node.name, text)
        r._record(f"node/{node.name}/kernel-after", "node", node.name, "kernel-xid", after, found)
    xml = (
        Path(__file__).parent / "fixtures" / "nvidia-smi-xml" / "gb200x4-580-real.txt"
    ).read_text()
    for node in cluster.nodes:  # the domain's own stage, from the real tray's inventory
        result = CommandResult(node.name, ("nvidia-smi", "-q", "-x"), 0, xml, "", 0.5)
        r._record(
            f"node/{node.name}/nvidia-smi-xml", "node", node.name, "nvidia-smi-xml", result, []
        )
    plan = make_plan(cluster, suite)
    r.nvl_domain_stage(plan, set(), set())
    r._nvlink_groups(plan, set(), set())
    report, _, _ = write_reports(RunDir(tmp_path))
    return report


def test_a_run_names_the_link_and_folds_the_domain_into_it(tmp_path: Path) -> None:
    origin = (
        "[ 930.000100] NVRM: Xid (PCI:0009:01:00): 149, NETIR_LINK_EVT  Fatal   XC0 i0 Link 04 "
        "(0x021425c6 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)\n"
    ) + _peers("0008", "0018", "0019")
    logs = {"tray05": origin} | {f"tray{s:02d}": _peers(*TRAY_DOMS) for s in range(1, 19) if s != 5}
    report = _run(tmp_path / "cascade", logs)
    assert [(c["where"], c["action"]) for c in report["culprits"]] == [("tray05 GPU 1", "cable")]
    culprit = report["culprits"][0]
    assert "NVLink link 4 of tray05 GPU 1 failed first" in culprit["message"]
    assert len({(e["subject"]["node"], e["subject"].get("gpu")) for e in culprit["evidence"]}) == 72
    assert not [w for w in report["warnings"] if str(w["code"]).startswith("XID-")]
    (first,) = [link for d in report["nvlink_domains"] for link in d["first_links"]]
    assert first == {
        "node": "tray05",
        "gpu": 1,
        "link": 4,
        "xid": 149,
        "unit": "NETIR_LINK_EVT",
        "followed": 71,
    }
    html = (tmp_path / "cascade" / "report.html").read_text()
    assert "tray05 GPU 1 link 4 (Xid 149 NETIR_LINK_EVT; 71 GPUs followed)" in html


def test_a_run_with_no_nvlink_xid_records_the_domain_ok(tmp_path: Path) -> None:
    from rackops.validate.rundir import RunDir

    report = _run(tmp_path / "quiet", {})
    assert report["culprits"] == []
    recs = [r for r in RunDir(tmp_path / "quiet").records() if r["id"].startswith("nvlxid/")]
    assert [(r["id"], [f["code"] for f in r["findings"]]) for r in recs] == [
        ("nvlxid/nvl72-a", ["NVX-000"])
    ]


def test_a_gpu_with_its_own_fault_is_not_folded_into_the_link(tmp_path: Path) -> None:
    """A follower that also has a fault of its own (a double-bit ECC error) stays a culprit."""
    origin = (
        "[ 930.0] NVRM: Xid (PCI:0009:01:00): 149, NETIR_LINK_EVT Fatal XC0 i0 Link 04 (0x1 0x0)\n"
    )
    ecc = _peers("0008") + (
        "[ 931.0] NVRM: Xid (PCI:0008:01:00): 48, pid='<unknown>', name=<unknown>, An "
        "uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer\n"
    )
    report = _run(tmp_path / "ecc", {"tray05": origin, "tray06": ecc})
    where = sorted(c["where"] for c in report["culprits"])
    assert where == ["tray05 GPU 1", "tray06 GPU 0"], where


# --- the simulator: what a domain's trays print after one fatal link -----------------------


def test_hwsim_prints_one_fatal_link_and_its_domain_following(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An ``xid`` fault of code 149 on one tray's GPU: that GPU logs the real tray's
    ``NETIR_LINK_EVT  Fatal`` line for its link, every other loaded GPU of the domain the
    followers' lines; read back and judged, the link is the one finding."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "rackops" / "lab"))
    from hwsim import kmsg
    from hwsim.node import BUS, Node

    boot = 1_000_000.0
    monkeypatch.setattr(kmsg, "_boot", lambda node: boot)
    monkeypatch.setattr(kmsg, "loads", lambda node: [(boot + 130, boot + 131, {0, 1, 2, 3}, "x")])
    fault = {"kind": "xid", "gpu": 2, "code": 149, "link": 7}
    scenario = {
        "hardware": {"gpus": 4, "nvlink_domain": "nvl-a"},
        "nodes": {"t1": {"faults": [fault]}, "t2": {}, "t3": {"hardware": {"nvlink_domain": "b"}}},
    }
    text = {
        n: "".join(
            f"{kmsg._stamp(t, boot, 'raw')} {m}\n" for t, m in kmsg._events(Node(scenario, n))
        )
        for n in ("t1", "t2", "t3")
    }
    assert "NETIR_LINK_EVT  Fatal   XC0 i0 Link 07 (0x021425c6" in text["t1"]
    assert "caused by previous Xid 149" in text["t2"] and "Xid" not in text["t3"]
    gpus = {f"0000:{BUS[g].lower()}:00.0": g for g in range(4)}
    logs = [TrayLog(n, gpus, list(parse_kernel_xid(text[n]).events)) for n in ("t1", "t2")]
    found, view = judge_cascade("nvl-a", logs)
    assert [(f.code, f.subject.node, f.subject.gpu, f.subject.port) for f in found] == [
        ("NVX-001", "t1", 2, 7)
    ]
    assert len(view["origins"][0]["followed"]) == 7


def test_an_origin_on_gpu_0_is_not_its_own_follower() -> None:
    alone = (
        "[ 9.0] NVRM: Xid (PCI:0008:01:00): 149, NETIR_LINK_EVT Fatal XC0 i0 Link 02 (0x1 0x0)\n"
    )
    found, view = _cascade(("tray01", alone))
    assert found[0].subject.gpu == 0 and "no other GPU followed it" in found[0].message
    assert view["origins"][0]["followed"] == []


def test_no_kernel_log_read_is_not_a_quiet_domain() -> None:
    found, view = judge_cascade("d", [TrayLog("t1", TRAY, None), TrayLog("t2", TRAY, None)])
    assert [(f.code, f.status) for f in found] == [("NVX-000", Status.WARN)]
    assert view["unread"] == ["t1", "t2"]


def test_first_links_on_two_trays_still_fold_the_domain(tmp_path: Path) -> None:
    """Two trays each log a link-named fatal first: both links stand, and every other GPU's
    NVLink Xids fold into its own tray's first link, or the first one named — never 68
    culprits."""
    a = "[ 50.0] NVRM: Xid (PCI:0008:01:00): 149, NETIR_LINK_EVT Fatal XC0 i0 Link 02 (0x1 0x0)\n"
    b = "[ 10.0] NVRM: Xid (PCI:0019:01:00): 149, NETIR_LINK_EVT Fatal XC0 i0 Link 05 (0x1 0x0)\n"
    logs = {"tray03": a + _peers("0009", "0018", "0019"), "tray11": b + _peers("0008")}
    logs |= {f"tray{s:02d}": _peers(*TRAY_DOMS) for s in range(1, 19) if s not in (3, 11)}
    report = _run(tmp_path / "two", logs)
    where = [(c["where"], c["action"]) for c in report["culprits"]]
    assert where == [("tray03 GPU 0", "cable"), ("tray11 GPU 3", "cable")], where
    held = [
        len({(e["subject"]["node"], e["subject"].get("gpu")) for e in c["evidence"]})
        for c in report["culprits"]
    ]
    # tray11's peer (its GPU 0) is its own first link's; tray11's GPUs 1-2 logged nothing
    assert held == [68, 2], held
