"""GB200 / GB300 NVL72 (issue 42): a compute tray's GPUs judged on the NVLink fabric they
join — state and status, the partition (clique and cluster UUID) of a multi-node domain, and
the fabric's health — from real `nvidia-smi -q -x` captures and outputs derived from them
with the values public reports show (tests/fixtures/nvidia-smi-xml/SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import Rack

from rackops.checks import check_gpu_xml
from rackops.diagnostics import Level
from rackops.errors import ProfileError
from rackops.findings import Finding, Status
from rackops.inventory import load_inventory
from rackops.parsers import ParseError
from rackops.profiles import load_profile, load_profile_file
from rackops.tools import parse

XML = Path(__file__).parent / "fixtures" / "nvidia-smi-xml"
FABRIC = {"GPU-009", "GPU-011", "GPU-012"}


def _judge(fixture: str, profile: str, edit: tuple[str, str] | None = None) -> list[Finding]:
    text = (XML / f"{fixture}.txt").read_text()
    if edit is not None:
        assert edit[0] in text
        text = text.replace(*edit, 1)  # GPU 0's block
    found = check_gpu_xml(parse("nvidia-smi-xml", text), load_profile(profile).profile, node="t1")
    return [f for f in found if f.code in FABRIC]


@pytest.mark.parametrize(
    ("fixture", "profile"),
    [
        ("gb200x4-580-real", "gb200-nvl72"),
        ("gb300x4-580-real", "gb300-nvl72"),
        ("h100x8-580-real", "h100-sxm-ndr"),  # clique 0 and a zero UUID: a node-local NVSwitch
        ("b200x8-580-real", "h100-sxm-ndr"),
    ],
)
def test_a_real_healthy_fabric_is_ok(fixture: str, profile: str) -> None:
    assert _judge(fixture, profile) == []


@pytest.mark.parametrize(
    ("fixture", "gpu", "code", "words"),
    [
        ("gb200x4-gpu2-insufficient-resources", 2, "GPU-009", "Completed/Insufficient Resources"),
        ("gb200x4-gpu0-in-progress", 0, "GPU-009", "In Progress"),
        ("gb200x4-gpu1-health-unhealthy", 1, "GPU-012", "summary Unhealthy"),
    ],
)
def test_a_gpu_off_the_fabric_is_named_alone(fixture: str, gpu: int, code: str, words: str) -> None:
    found = _judge(fixture, "gb200-nvl72")
    assert [(f.code, f.status, f.subject.gpu) for f in found] == [(code, Status.FAIL, gpu)]
    assert words in found[0].message and "switch trays" in (found[0].remediation or "")


def test_completed_success_without_a_partition_is_no_domain() -> None:
    """A GPU that says Completed/Success with clique 0 and a zero UUID joined no partition:
    healthy on an HGX node, a tray outside its domain on an NVL72 one."""
    first = "<cliqueId>2</cliqueId>\n\t\t\t<clusterUuid>00000001-0000-0000-0000-000000000001"
    edit = (
        first,
        "<cliqueId>0</cliqueId>\n\t\t\t<clusterUuid>00000000-0000-0000-0000-000000000000",
    )
    found = _judge("gb200x4-580-real", "gb200-nvl72", edit)
    assert [(f.code, f.subject.gpu) for f in found] == [("GPU-011", 0)]
    assert "in no NVLink partition" in found[0].message


@pytest.mark.parametrize(
    ("edit", "status", "words"),
    [
        (
            ("<bandwidth>Full</bandwidth>", "<bandwidth>Degraded</bandwidth>"),
            Status.FAIL,
            "bandwidth",
        ),
        (
            ("<route_unhealthy>False</route_unhealthy>", "<route_unhealthy>True</route_unhealthy>"),
            Status.FAIL,
            "route unhealthy",
        ),
        (
            (
                "<route_recovery_in_progress>False</route_recovery_in_progress>",
                "<route_recovery_in_progress>True</route_recovery_in_progress>",
            ),
            Status.WARN,
            "route recovery in progress",
        ),
        (
            (
                "<incorrect_configuration>None</incorrect_configuration>",
                "<incorrect_configuration>Incompatible GPU Firmware</incorrect_configuration>",
            ),
            Status.FAIL,
            "Incompatible GPU Firmware",
        ),
    ],
    ids=["bandwidth-degraded", "route-unhealthy", "route-recovery", "incorrect-configuration"],
)
def test_each_health_field_is_judged(edit: tuple[str, str], status: Status, words: str) -> None:
    found = _judge("gb300x4-580-real", "gb300-nvl72", edit)
    assert [(f.code, f.status, f.subject.gpu) for f in found] == [("GPU-012", status, 0)]
    assert words in found[0].message


def test_a_garbled_health_flag_is_an_unreadable_output() -> None:
    text = (XML / "gb200x4-580-real.txt").read_text()
    text = text.replace("<route_unhealthy>False<", "<route_unhealthy>Fa1se<", 1)
    with pytest.raises(ParseError, match="not True or False"):
        parse("nvidia-smi-xml", text)


def test_a_domain_that_is_not_whole_trays_is_refused(tmp_path: Path) -> None:
    text = (
        (Path(load_profile("gb200-nvl72").path))
        .read_text()
        .replace("nvlink_domain: 72", "nvlink_domain: 70")
    )
    (tmp_path / "p.yaml").write_text(text)
    with pytest.raises(ProfileError, match="not a whole number of 4-GPU"):
        load_profile_file(tmp_path / "p.yaml")


# --- the domain in the design: lint says whether it is whole -------------------------------


def _nvl(r: Rack, host: str, value: object) -> None:
    """Set tray ``host``'s rackops_nvlink in hosts.yml (where the example sets it)."""
    text = (r.path / "hosts.yml").read_text()
    start = text.index(f"        {host}: ")
    end = text.index("\n", start)
    addr = text[start:end].split("ansible_host: ")[1].split(",")[0]
    line = f"        {host}: {{ansible_host: {addr}"
    line += "}" if value is None else f", rackops_nvlink: {value}}}"
    (r.path / "hosts.yml").write_text(text[:start] + line + text[end:])


def _codes(r: Rack) -> list[tuple[str, str | None, str]]:
    return [(d.code, d.subject, d.message) for d in r.lint().diagnostics if d.code == "NVL001"]


def test_the_example_domain_is_whole(nvl72: Rack) -> None:
    report = nvl72.lint()
    assert [d for d in report.diagnostics if d.level is Level.ERROR] == []
    cluster = load_inventory(nvl72.path).raise_for_errors()
    assert {n.nvlink.domain for n in cluster.nodes if n.nvlink} == {"nvl72-a"}
    assert sum(n.gpus for n in cluster.nodes) == 72


@pytest.mark.parametrize(
    ("host", "value", "words"),
    [
        ("tray07", None, "tray07: profile gb200-nvl72 is a tray of a 72-GPU NVLink domain"),
        ("tray07", "{domain: nvl72-a, slot: 3}", "slot 3 is tray03's and tray07's"),
        ("tray07", "{domain: nvl72-a, slot: 19}", "tray07: slot 19 is past the 18 trays"),
        ("tray07", "{domain: nvl72-b, slot: 7}", "domain nvl72-a: 17 trays, 68 GPUs"),
        ("tray07", "{domain: 'nvl72-a;reboot', slot: 7}", "rackops_nvlink"),
    ],
    ids=["no-domain", "slot-twice", "slot-past", "split-domain", "bad-name"],
)
def test_a_domain_that_is_not_whole_is_an_error_naming_the_tray(
    nvl72: Rack, host: str, value: object, words: str
) -> None:
    _nvl(nvl72, host, value)
    errors = [
        d
        for d in nvl72.lint().diagnostics
        if d.level is Level.ERROR and d.code in ("NVL001", "INV001")
    ]
    assert any(words in d.message for d in errors), [d.message for d in errors]


def test_a_domain_on_an_hgx_node_is_an_error(ib: Rack) -> None:
    text = (ib.path / "hosts.yml").read_text().replace(
        "node01: {ansible_host: 192.0.2.11}",
        "node01: {ansible_host: 192.0.2.11, rackops_nvlink: {domain: d1, slot: 1}}",
    )
    (ib.path / "hosts.yml").write_text(text)
    msgs = [d.message for d in ib.lint().diagnostics if d.code == "NVL001"]
    assert any("no multi-node NVLink domain" in m for m in msgs), msgs
