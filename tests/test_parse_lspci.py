"""``lspci -vvv`` parser: the fixture corpus, kinds, links, ACS, the bridge tree, cuts."""

from __future__ import annotations

import contextlib
import json
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rackops.parsers import lspci as lspci_module
from rackops.parsers._common import ParseError, as_jsonable
from rackops.parsers.lspci import Lspci, PciDevice, PciLink, normalise_bdf, parse_lspci

FIXTURES = Path(__file__).parent / "fixtures" / "lspci"
CASES = sorted(FIXTURES.glob("*.txt"))


def fixture(name: str) -> str:
    return (FIXTURES / f"{name}.txt").read_text()


def expected(case: Path) -> dict[str, object]:
    return json.loads(case.with_suffix(".json").read_text())  # type: ignore[no-any-return]


# -- the corpus ------------------------------------------------------------------------------


def test_corpus_is_there() -> None:
    """Parsed as expected and cited in SOURCES.md: tests/test_parsers.py, for every tool."""
    assert len(CASES) >= 8


@pytest.mark.parametrize("case", CASES, ids=[c.stem for c in CASES])
def test_cut_and_partial_fixtures_are_never_complete(case: Path) -> None:
    want = expected(case)
    if case.stem.startswith("cut-") or case.stem in PARTIAL_SOURCES:
        assert "error" in want or want["complete"] is False


# the research file marks these sources [PARTIAL] (cut by the excerpt or by their author)
PARTIAL_SOURCES = {
    "a100-sxm4-nn-cut-before-lnkcap",
    "cx6dx-old-devctl-cut-after-lnkcap",
    "plx-pex8725-excerpt-starts-mid-block",
    "nccl-629-grep-acsctl",
    "openvmm-root-port-acs-off-elided",
    "h100-pcie-2331-iommu-group-cut",
}
WHOLE = [c for c in CASES if expected(c).get("complete") is True]


def test_whole_fixtures_are_the_full_sources() -> None:
    assert {c.stem for c in WHOLE} == {
        "cx7-mt2910-gen5-x16-endpoint-acs",
        "rtx6000ada-gen1-idle-downgraded",
        "pciutils-cap-pcie-2-old-single-line-lnksta",
        "kioxia-nvme-no-root-access-denied",
    }


@pytest.mark.parametrize("case", WHOLE, ids=[c.stem for c in WHOLE])
def test_cut_anywhere_is_never_complete(case: Path) -> None:
    """Every line prefix and every mid-line cut of a whole output: a ParseError or
    complete=False. (Each whole fixture ends on its ``Kernel modules:`` line, the last line
    lspci prints in a block; a cut just before it ends on ``Kernel driver in use:``.)"""
    lines = case.read_text().splitlines(keepends=True)
    cuts = ["".join(lines[:k]) for k in range(1, len(lines))]
    cuts += ["".join(lines[:k]) + lines[k][: len(lines[k]) // 2] for k in range(len(lines))]
    cuts += ["".join(lines[:k]) + lines[k].rstrip("\n") for k in range(len(lines))]
    for text in cuts:
        try:
            got = parse_lspci(text)
        except ParseError:
            continue
        assert got.complete is False, text[-120:]


# -- kinds ------------------------------------------------------------------------------------

BODY = (
    "\tControl: I/O- Mem+ BusMaster+ SpecCycle- MemWINV- VGASnoop- ParErr- Stepping- SERR- "
    "FastB2B- DisINTx+\n"
    "\tStatus: Cap+ 66MHz- UDF- FastB2B- ParErr- DEVSEL=fast >TAbort- <TAbort- <MAbort- "
    ">SERR- <PERR- INTx-\n"
)


def block(header: str, body: str = BODY) -> str:
    return f"{header}\n{body}\n"


def one(header: str, body: str = BODY) -> PciDevice:
    parsed = parse_lspci(block(header, body))
    assert len(parsed.devices) == 1
    return parsed.devices[0]


# (kind, header): -nn ids decide; names when there are none; numeric forms by their ids
KINDS = [
    ("gpu", "da:00.0 3D controller [0302]: NVIDIA Corporation GA100 [A100 SXM4 40GB] [10de:20b0]"),
    ("gpu", "18:00.0 3D controller [0302]: NVIDIA Corporation GH100 [H100 SXM5 80GB] [10de:2330]"),
    ("hca", "1a:00.0 Infiniband controller [0207]: Mellanox Technologies MT2910 [15b3:1021]"),
    ("hca", "1a:00.1 Ethernet controller [0200]: Mellanox Technologies MT2910 Family [15b3:1021]"),
    (
        "other",
        "1a:00.2 Ethernet controller [0200]: Mellanox Technologies ConnectX Family mlx5Gen "
        "Virtual Function [15b3:101e]",
    ),
    ("nvswitch", "07:00.0 Bridge [0680]: NVIDIA Corporation Device [10de:22a3] (rev a1)"),
    ("bridge", "16:01.0 PCI bridge [0604]: Broadcom / LSI PEX890xx PCIe Gen 5 Switch [1000:c030]"),
    ("other", "00:00.0 Host bridge [0600]: Intel Corporation Device [8086:09a2] (rev 04)"),
    ("other", "3d:00.0 Ethernet controller [0200]: Intel Corporation Ethernet X710 [8086:15ff]"),
    ("other", "03:00.0 Audio device [0403]: NVIDIA Corporation AD102 HD Audio [10de:22ba]"),
    (
        "gpu",
        "41:00.0 VGA compatible controller: NVIDIA Corporation AD102GL [RTX 6000 Ada Generation] "
        "(rev a1) (prog-if 00 [VGA controller])",
    ),
    ("gpu", "3b:00.0 3D controller: NVIDIA Corporation GA103 (rev a1)"),
    ("gpu", "61:00.0 3D controller: NVIDIA Corporation Device 2331 (rev a1)"),
    ("hca", "21:00.0 Ethernet controller: Mellanox Technologies MT2910 Family [ConnectX-7]"),
    ("hca", "b3:00.0 Infiniband controller: Mellanox Technologies MT28908 Family [ConnectX-6]"),
    (
        "other",
        "21:00.2 Ethernet controller: Mellanox Technologies ConnectX Family mlx5Gen "
        "Virtual Function",
    ),
    ("nvswitch", "07:00.0 Bridge: NVIDIA Corporation Device 22a3 (rev a1)"),
    (
        "bridge",
        "0000:02:08.0 PCI bridge: PLX Technology, Inc. PEX 8725 24-Lane, 10-Port PCI Express "
        "Gen 3 (8.0 GT/s) Multi-Root Switch with DMA (rev ca) (prog-if 00 [Normal decode])",
    ),
    ("other", "00:00.0 Host bridge: Advanced Micro Devices, Inc. [AMD] Device 14a4"),
    (
        "other",
        "4c:00.0 Non-Volatile memory controller: KIOXIA Corporation Device 002b (rev 01) "
        "(prog-if 02 [NVM Express])",
    ),
    ("other", "09:00.0 Class 0200: Device 8086:10c9 (rev 01)"),
    ("gpu", "18:00.0 0302: 10de:2330 (rev a1)"),
    ("hca", "1a:00.0 0207: 15b3:1021"),
]


@pytest.mark.parametrize(("kind", "header"), KINDS)
def test_kind(kind: str, header: str) -> None:
    assert one(header).kind == kind


def test_header_fields() -> None:
    d = one(
        "da:00.0 3D controller [0302]: NVIDIA Corporation GA100 [A100 SXM4 40GB] [10de:20b0] "
        "(rev a1)"
    )
    assert (d.bdf, d.cls, d.cls_code, d.vendor_id) == (
        "0000:da:00.0",
        "3D controller",
        "0302",
        "10de",
    )
    assert d.name == "NVIDIA Corporation GA100 [A100 SXM4 40GB] [10de:20b0] (rev a1)"
    d = one("21:00.0 Ethernet controller: Mellanox Technologies MT2910 Family [ConnectX-7]")
    assert (d.cls, d.cls_code, d.vendor_id) == ("Ethernet controller", None, None)
    d = one("09:00.0 Class 0200: Device 8086:10c9 (rev 01)")
    assert (d.cls, d.cls_code, d.vendor_id) == ("Class 0200", "0200", "8086")
    d = one("09:00.0 Class [0200]: Device [8086:10c9] (rev 01)")
    assert (d.cls, d.cls_code, d.vendor_id) == ("Class 0200", "0200", "8086")
    assert one("10000:e1:00.0 PCI bridge: Intel Corporation Device 09ab").bdf == "10000:e1:00.0"


def test_normalise_bdf() -> None:
    assert normalise_bdf("17:00.0") == "0000:17:00.0"
    assert normalise_bdf("0000:17:00.0") == "0000:17:00.0"
    assert normalise_bdf("0000:DA:00.1") == "0000:da:00.1"
    assert normalise_bdf(" 00001:17:00.0 ") == "0001:17:00.0"
    for bad in ("17:00", "17:20.0", "17:00.8", "zz:00.0", "", "0:0.0"):
        assert normalise_bdf(bad) is None, bad


# -- links ------------------------------------------------------------------------------------


def test_link_of_the_idle_gpu_is_downgraded_in_speed_only() -> None:
    gpu = parse_lspci(fixture("rtx6000ada-gen1-idle-downgraded")).devices[0]
    assert gpu.link_cap == PciLink(16.0, 16)
    assert gpu.link_sta == PciLink(2.5, 16)
    assert gpu.port_type == "Legacy Endpoint"


def test_link_of_the_cx7() -> None:
    hca = parse_lspci(fixture("cx7-mt2910-gen5-x16-endpoint-acs")).devices[0]
    assert (hca.link_cap, hca.link_sta) == (PciLink(32.0, 16), PciLink(32.0, 16))
    assert (hca.port_type, hca.driver) == ("Endpoint", "mlx5_core")


def test_old_single_line_lnksta() -> None:
    dev = parse_lspci(fixture("pciutils-cap-pcie-2-old-single-line-lnksta")).devices[0]
    assert (dev.link_cap, dev.link_sta) == (PciLink(2.5, 4), PciLink(2.5, 4))


A11_GPU_X1 = """\
\t\t\tClockPM+ Surprise- LLActRep- BwNot- ASPMOptComp+
\t\tLnkCtl:\tASPM Disabled; RCB 64 bytes, Disabled- CommClk+
\t\t\tExtSynch- ClockPM- AutWidDis- BWInt- AutBWInt-
\t\tLnkSta:\tSpeed 5GT/s (downgraded), Width x1 (downgraded)
\t\t\tTrErr- Train- SlotClk+ DLActive- BWMgmt- ABWMgmt-
"""  # research A11 (geerlingguy/raspberry-pi-pcie-devices#480), first lines
CLOUD_HYPERVISOR = (
    "                LnkCap: Port #0, Speed 8GT/s, Width x16, ASPM L0s L1, "
    "Exit Latency L0s <512ns, L1 <4us\n"
    """\
                        ClockPM+ Surprise- LLActRep- BwNot- ASPMOptComp+
                LnkCtl: ASPM L0s L1 Enabled; RCB 64 bytes Disabled- CommClk+
                        ExtSynch- ClockPM- AutWidDis- BWInt- AutBWInt-
                LnkSta: Speed 2.5GT/s (downgraded), Width x16 (ok)
                        TrErr- Train- SlotClk+ DLActive- BWMgmt- ABWMgmt-
"""
)  # research A11, cloud-hypervisor/cloud-hypervisor#4353 (pciutils 3.6 `(ok)`)
HIGHPOINT = (
    "                LnkCap: Port #0, Speed 5GT/s, Width x2, ASPM L0s L1, "
    "Exit Latency L0s <512ns, L1 <64us\n"
    """\
                        ClockPM- Surprise- LLActRep- BwNot- ASPMOptComp-
                LnkCtl: ASPM Disabled; RCB 64 bytes, Disabled- CommClk-
                        ExtSynch- ClockPM- AutWidDis- BWInt- AutBWInt-
                LnkSta: Speed 5GT/s, Width x1 (downgraded)
                        TrErr- Train- SlotClk+ DLActive- BWMgmt- ABWMgmt-
"""
)  # research A2 (stelline, 71:00.0): width-only downgrade


def test_downgraded_speed_and_width_variants() -> None:
    """Real LnkCap/LnkSta lines from partial sources, under a header of our own."""
    gpu = one("01:00.0 VGA compatible controller: NVIDIA Corporation TU102GL (rev a1)", A11_GPU_X1)
    assert (gpu.link_cap, gpu.link_sta) == (None, PciLink(5.0, 1))
    vm = one("00:04.0 3D controller: NVIDIA Corporation TU104GL [Tesla T4]", CLOUD_HYPERVISOR)
    assert (vm.link_cap, vm.link_sta) == (PciLink(8.0, 16), PciLink(2.5, 16))
    raid = one("71:00.0 RAID bus controller: HighPoint Technologies, Inc. SSD7540", HIGHPOINT)
    assert (raid.link_cap, raid.link_sta) == (PciLink(5.0, 2), PciLink(5.0, 1))


LNKCAP = "Port #0, Speed 64GT/s, Width x16, ASPM not supported"


def _link_body(sta: str, cap: str = LNKCAP) -> str:
    return (
        BODY
        + "\tCapabilities: [60] Express (v2) Endpoint, MSI 00\n"
        + f"\t\tLnkCap:\t{cap}\n\t\t\tClockPM- Surprise- LLActRep- BwNot- ASPMOptComp+\n"
        + f"\t\tLnkSta:\t{sta}\n\t\t\tTrErr- Train- SlotClk+ DLActive- BWMgmt- ABWMgmt-\n"
    )


HCA = "1a:00.0 Infiniband controller: Mellanox Technologies MT2910 Family [ConnectX-7]"


@pytest.mark.parametrize(
    ("sta", "link"),
    [
        ("Speed 64GT/s, Width x16", PciLink(64.0, 16)),
        ("Speed 128GT/s (overdriven), Width x16", PciLink(128.0, 16)),
        ("Speed 8GT/s (downgraded), Width x8 (downgraded)", PciLink(8.0, 8)),
        ("Speed unknown (downgraded), Width x0 (downgraded)", PciLink(None, 0)),
        ("Speed 2.5GT/s, Width x4, TrErr- Train- SlotClk+ DLActive- ABWMgmt-", PciLink(2.5, 4)),
    ],
)
def test_link_values(sta: str, link: PciLink) -> None:
    parsed = parse_lspci(block(HCA, _link_body(sta)))
    assert parsed.complete, parsed.errors
    assert parsed.devices[0].link_sta == link
    assert parsed.devices[0].link_cap == PciLink(64.0, 16)


@pytest.mark.parametrize(
    "sta",
    [
        "Speed 16GT/s, Width x33",  # out of 0..32: read, refused, never clamped
        "Speed 16GT/s, Width x",
        "Speed 16 GT/s, Width x16",
        "Speed fastGT/s, Width x16",
        "Speed 16GT/s (great), Width x16",
        "Width x16, Speed 16GT/s",
        "Speed 16GT/s",
        "",
    ],
)
def test_unreadable_lnksta_is_never_guessed(sta: str) -> None:
    parsed = parse_lspci(block(HCA, _link_body(sta)))
    assert parsed.complete is False
    assert parsed.devices[0].link_sta is None
    assert any("unreadable LnkSta" in e for e in parsed.errors), parsed.errors


def test_unreadable_lnkcap() -> None:
    parsed = parse_lspci(
        block(HCA, _link_body("Speed 16GT/s, Width x16", cap="Port #0, Speed 16GT/s"))
    )
    assert parsed.complete is False
    assert parsed.devices[0].link_cap is None


def test_the_first_express_capability_gives_the_link() -> None:
    body = _link_body("Speed 16GT/s, Width x16", cap="Port #0, Speed 16GT/s, Width x16, ASPM L1")
    body += "\tCapabilities: [100] Express (v2) Root Complex Integrated Endpoint, MSI 00\n"
    body += "\t\tLnkCap:\tPort #1, Speed 2.5GT/s, Width x1, ASPM not supported\n"
    body += "\t\tLnkSta:\tSpeed 2.5GT/s, Width x1\n"
    dev = one(HCA, body)
    assert (dev.link_cap, dev.link_sta) == (PciLink(16.0, 16), PciLink(16.0, 16))
    assert dev.port_type == "Endpoint"


@pytest.mark.parametrize(
    ("cap", "port_type"),
    [
        ("[60] Express (v2) Endpoint, MSI 00", "Endpoint"),
        ("[78] Express (v2) Legacy Endpoint, MSI 00", "Legacy Endpoint"),
        ("[40] Express (v2) Root Port (Slot+), MSI 00", "Root Port"),
        ("[68] Express (v2) Upstream Port, MSI 00", "Upstream Port"),
        ("[68] Express (v2) Downstream Port (Slot-), IntMsgNum 0", "Downstream Port"),
        (
            "[68] Express (v1) PCI/PCI-X to PCI-Express Bridge (Slot-)",
            "PCI/PCI-X to PCI-Express Bridge",
        ),
        ("[68] Express Endpoint, IntMsgNum 0", "Endpoint"),
    ],
)
def test_port_type(cap: str, port_type: str) -> None:
    body = _link_body("Speed 16GT/s, Width x16").replace("[60] Express (v2) Endpoint, MSI 00", cap)
    assert one(HCA, body).port_type == port_type


def test_lspci_v_without_link_details_is_not_complete() -> None:
    """``lspci -v`` prints the capability names but no LnkCap/ACSCtl: "no ACS" would be a lie."""
    body = BODY + "\tCapabilities: [60] Express Endpoint, IntMsgNum 0\n"
    body += "\tCapabilities: [230] Access Control Services\n"
    parsed = parse_lspci(block(HCA, body))
    assert parsed.complete is False
    assert sum("lspci -v rather than -vvv" in e for e in parsed.errors) == 4


# -- ACS --------------------------------------------------------------------------------------

PLX_ACS = (  # research A7 (HeyMeco/Rockchip-pcie-devices#6): the port before 0000:02:08.0
    "                ACSCap: SrcValid+ TransBlk+ ReqRedir+ CmpltRedir+ UpstreamFwd+ "
    "EgressCtrl+ DirectTrans+\n"
    "                ACSCtl: SrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ "
    "EgressCtrl- DirectTrans-\n"
)
PLX = (
    "0000:02:01.0 PCI bridge: PLX Technology, Inc. PEX 8725 24-Lane, 10-Port PCI Express Gen 3 "
    "(8.0 GT/s) Multi-Root Switch with DMA (rev ca)"
)
ALL_ACS = "SrcValid+ TransBlk+ ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl+ DirectTrans+"


def test_acs_enabled_on_the_plx_port() -> None:
    port = one(PLX, BODY + "        Capabilities: [a0 v1] Access Control Services\n" + PLX_ACS)
    assert port.acs_cap == dict.fromkeys(
        (
            "SrcValid",
            "TransBlk",
            "ReqRedir",
            "CmpltRedir",
            "UpstreamFwd",
            "EgressCtrl",
            "DirectTrans",
        ),
        True,
    )
    assert port.acs_ctl == {
        "SrcValid": True,
        "TransBlk": False,
        "ReqRedir": True,
        "CmpltRedir": True,
        "UpstreamFwd": True,
        "EgressCtrl": False,
        "DirectTrans": False,
    }
    assert port.acs_redirects is True


def test_acs_lines_of_the_nccl_issue() -> None:
    """The 15 ``ACSCtl`` lines of NVIDIA/nccl#629 (TABs kept), each under a bridge header of
    our own: lines 4, 10, 11 and 13 redirect."""
    lines = fixture("nccl-629-grep-acsctl").splitlines()
    assert len(lines) == 15
    redirecting = []
    for i, line in enumerate(lines, start=1):
        header = f"{i:02x}:00.0 PCI bridge: PLX Technology, Inc. PEX 8747 48-Lane, 5-Port Switch"
        dev = one(header, BODY + f"\t\tACSCap:\t{ALL_ACS}\n" + line + "\n")
        assert dev.acs_ctl is not None and len(dev.acs_ctl) == 7
        if dev.acs_redirects:
            redirecting.append(i)
            assert dev.acs_ctl["SrcValid"] and not dev.acs_ctl["EgressCtrl"]
    assert redirecting == [4, 10, 11, 13]


def test_acs_disabled_on_the_openvmm_root_port() -> None:
    port = parse_lspci(fixture("openvmm-root-port-acs-off-elided")).devices[0]
    assert port.acs_cap is not None and port.acs_cap["ReqRedir"] and not port.acs_cap["EgressCtrl"]
    assert port.acs_ctl is not None and not any(port.acs_ctl.values())
    assert port.acs_redirects is False
    assert (port.secondary_bus, port.subordinate_bus, port.kind) == (1, 8, "bridge")


def test_acs_of_an_endpoint_and_of_none() -> None:
    assert (
        parse_lspci(fixture("cx7-mt2910-gen5-x16-endpoint-acs")).devices[0].acs_redirects is False
    )
    gpu = parse_lspci(fixture("rtx6000ada-gen1-idle-downgraded")).devices[0]
    assert (gpu.acs_cap, gpu.acs_ctl, gpu.acs_redirects) == (None, None, None)


@pytest.mark.parametrize(
    ("ctl", "redirects"),
    [
        ("SrcValid+ TransBlk- ReqRedir- CmpltRedir- UpstreamFwd+ EgressCtrl- DirectTrans-", False),
        ("SrcValid- TransBlk- ReqRedir+ CmpltRedir- UpstreamFwd- EgressCtrl- DirectTrans-", True),
        ("SrcValid- TransBlk- ReqRedir- CmpltRedir+ UpstreamFwd- EgressCtrl- DirectTrans-", True),
        ("SrcValid- TransBlk- ReqRedir- CmpltRedir- UpstreamFwd- EgressCtrl+ DirectTrans-", True),
        ("SrcValid- TransBlk+ ReqRedir- CmpltRedir- UpstreamFwd- EgressCtrl- DirectTrans+", False),
        ("SrcValid- TransBlk- ReqRedir- CmpltRedir- UpstreamFwd- DirectTrans- EnhCap+", False),
    ],
)
def test_acs_redirect_flags(ctl: str, redirects: bool) -> None:
    body = BODY + "\tCapabilities: [220 v1] Access Control Services\n"
    body += f"\t\tACSCap:\t{ctl}\n\t\tACSCtl:\t{ctl}\n"
    port = one(PLX, body)
    assert port.acs_redirects is redirects
    assert port.acs_ctl is not None and ("EnhCap" in port.acs_ctl) == ("EnhCap" in ctl)


@pytest.mark.parametrize("ctl", ["SrcValid- TransBl", "SrcValid? TransBlk-", "", "SrcValid+,"])
def test_unreadable_acsctl_is_not_complete(ctl: str) -> None:
    body = BODY + "\tCapabilities: [220 v1] Access Control Services\n"
    body += "\t\tACSCap:\tSrcValid+ TransBlk+\n" + f"\t\tACSCtl:\t{ctl}\n"
    parsed = parse_lspci(block(PLX, body))
    assert parsed.complete is False
    assert parsed.devices[0].acs_ctl is None and parsed.devices[0].acs_redirects is None


# -- the bridge tree --------------------------------------------------------------------------


def bridge(bdf: str, name: str, port: str, primary: int, sec: int, sub: int, acs: str = "-") -> str:
    """A switch or root port block in the layout of pciutils 3.7+ (built, not captured)."""
    flags = f"SrcValid{acs} TransBlk- ReqRedir{acs} CmpltRedir{acs} UpstreamFwd{acs} EgressCtrl-"
    return (
        f"{bdf} PCI bridge: {name} (prog-if 00 [Normal decode])\n"
        + BODY
        + f"\tBus: primary={primary:02x}, secondary={sec:02x}, subordinate={sub:02x}, "
        + "sec-latency=0\n"
        + f"\tCapabilities: [68] Express (v2) {port}, MSI 00\n"
        + "\t\tLnkCap:\tPort #0, Speed 16GT/s, Width x16, ASPM L1, Exit Latency L1 <4us\n"
        + "\t\tLnkSta:\tSpeed 16GT/s, Width x16\n"
        + "\tCapabilities: [f24 v1] Access Control Services\n"
        + f"\t\tACSCap:\t{ALL_ACS}\n"
        + f"\t\tACSCtl:\t{flags} DirectTrans-\n"
        + "\tKernel driver in use: pcieport\n\n"
    )


def endpoint(bdf: str, header: str, driver: str) -> str:
    return (
        f"{bdf} {header}\n"
        + BODY
        + "\tCapabilities: [60] Express (v2) Endpoint, MSI 00\n"
        + "\t\tLnkCap:\tPort #0, Speed 16GT/s, Width x16, ASPM not supported\n"
        + "\t\tLnkSta:\tSpeed 16GT/s, Width x16\n"
        + f"\tKernel driver in use: {driver}\n\n"
    )


SWITCH = "Broadcom / LSI PEX890xx PCIe Gen 5 Switch (rev b0)"
ROOT = "Intel Corporation Device 352a (rev 04)"
TREE = "".join(
    [
        bridge("0000:15:01.0", ROOT, "Root Port (Slot-)", 0x15, 0x16, 0x1A),
        bridge("0000:16:00.0", SWITCH, "Upstream Port", 0x16, 0x17, 0x1A),
        bridge("0000:17:00.0", SWITCH, "Downstream Port (Slot-)", 0x17, 0x18, 0x18),
        bridge("0000:17:01.0", SWITCH, "Downstream Port (Slot-)", 0x17, 0x19, 0x19, acs="+"),
        bridge("0000:17:02.0", SWITCH, "Downstream Port (Slot-)", 0x17, 0x1A, 0x1A),
        endpoint(
            "0000:18:00.0",
            "3D controller: NVIDIA Corporation GH100 [H100 SXM5 80GB] (rev a1)",
            "nvidia",
        ),
        endpoint(
            "0000:19:00.0",
            "Infiniband controller: Mellanox Technologies MT2910 Family [ConnectX-7]",
            "mlx5_core",
        ),
        bridge("0000:00:03.1", ROOT, "Root Port (Slot+)", 0x00, 0x01, 0x01),
        endpoint(
            "0000:01:00.0",
            "Non-Volatile memory controller: Samsung Electronics Co Ltd NVMe SSD Controller "
            "PM9A1/PM9A3/980PRO (prog-if 02 [NVM Express])",
            "nvme",
        ),
        # another domain with the same bus numbers: never mixed with domain 0000
        bridge("0001:16:00.0", SWITCH, "Upstream Port", 0x16, 0x17, 0x1A),
        endpoint(
            "0001:18:00.0",
            "3D controller: NVIDIA Corporation GH100 [H100 SXM5 80GB] (rev a1)",
            "nvidia",
        ),
    ]
)


def bdfs(devices: tuple[PciDevice, ...]) -> list[str]:
    return [d.bdf for d in devices]


@pytest.fixture
def tree() -> Lspci:
    parsed = parse_lspci(TREE)
    assert parsed.complete, parsed.errors
    return parsed


def test_tree_parent(tree: Lspci) -> None:
    parent = tree.parent("18:00.0")
    assert parent is not None and parent.bdf == "0000:17:00.0"
    assert parent.port_type == "Downstream Port" and parent.kind == "bridge"
    assert tree.parent("0000:19:00.0").bdf == "0000:17:01.0"  # type: ignore[union-attr]
    assert tree.parent("17:02.0").bdf == "0000:16:00.0"  # type: ignore[union-attr]
    assert tree.parent("16:00.0").bdf == "0000:15:01.0"  # type: ignore[union-attr]
    assert tree.parent("15:01.0") is None  # a root bus
    other = tree.parent("0001:18:00.0")  # the switch of its own domain, not 0000:17:00.0
    assert other is not None and other.bdf == "0001:16:00.0"
    assert tree.parent("0001:16:00.0") is None


def test_tree_path_to_root(tree: Lspci) -> None:
    assert bdfs(tree.path_to_root("18:00.0")) == ["0000:17:00.0", "0000:16:00.0", "0000:15:01.0"]
    assert bdfs(tree.path_to_root("01:00.0")) == ["0000:00:03.1"]
    assert tree.path_to_root("00:03.1") == ()


def test_tree_path_between_gpu_and_hca(tree: Lspci) -> None:
    path = tree.path_between("18:00.0", "0000:19:00.0")
    assert bdfs(path) == ["0000:17:00.0", "0000:16:00.0", "0000:17:01.0"]
    assert [d.acs_redirects for d in path] == [False, False, True]
    back = tree.path_between("19:00.0", "18:00.0")
    assert bdfs(back) == ["0000:17:01.0", "0000:16:00.0", "0000:17:00.0"]


def test_tree_path_between_under_different_roots(tree: Lspci) -> None:
    path = tree.path_between("18:00.0", "01:00.0")
    assert bdfs(path) == ["0000:17:00.0", "0000:16:00.0", "0000:15:01.0", "0000:00:03.1"]


def test_tree_unknown_bdf(tree: Lspci) -> None:
    assert tree.device("0000:18:00.0") is tree.device("18:00.0") is not None
    assert tree.device("99:00.0") is None and tree.device("nonsense") is None
    for call in (tree.parent, tree.path_to_root):
        with pytest.raises(KeyError):
            call("99:00.0")
    with pytest.raises(KeyError):
        tree.path_between("18:00.0", "99:00.0")


def test_hostile_bus_ranges_end() -> None:
    """Ranges that hold each other's bus (a cycle), an empty range, a bridge holding its own
    bus: every walk ends, and the empty range is nobody's parent."""
    text = "".join(
        [
            bridge("0000:01:00.0", SWITCH, "Downstream Port (Slot-)", 0x01, 0x02, 0x02),
            bridge("0000:02:00.0", SWITCH, "Downstream Port (Slot-)", 0x02, 0x01, 0x01),
            bridge("0000:04:00.0", SWITCH, "Downstream Port (Slot-)", 0x04, 0x05, 0x03),
            bridge("0000:06:00.0", SWITCH, "Downstream Port (Slot-)", 0x06, 0x06, 0x06),
            endpoint("0000:02:01.0", "3D controller: NVIDIA Corporation GH100 (rev a1)", "nvidia"),
            endpoint(
                "0000:05:00.0", "Infiniband controller: Mellanox Technologies MT2910", "mlx5_core"
            ),
            endpoint(
                "0000:06:01.0", "Infiniband controller: Mellanox Technologies MT2910", "mlx5_core"
            ),
        ]
    )
    parsed = parse_lspci(text)
    assert bdfs(parsed.path_to_root("01:00.0")) == ["0000:02:00.0"]
    assert bdfs(parsed.path_to_root("02:01.0")) == ["0000:01:00.0", "0000:02:00.0"]
    assert parsed.parent("05:00.0") is None
    assert parsed.parent("06:00.0") is None
    assert bdfs(parsed.path_to_root("06:01.0")) == ["0000:06:00.0"]
    assert bdfs(parsed.path_between("02:01.0", "06:01.0")) == [
        "0000:01:00.0",
        "0000:02:00.0",
        "0000:06:00.0",
    ]


def test_a_long_chain_is_cut_at_256_levels() -> None:
    """Identical ranges chain every bridge to the next (ties go to the first printed):
    the walk is bounded, whatever the text."""
    blocks = [
        bridge(f"0000:{bus:02x}:00.0", SWITCH, "Downstream Port (Slot-)", bus, 0x00, 0xFF)
        for bus in range(256)
    ]
    parsed = parse_lspci("".join(blocks))
    assert len(parsed.path_to_root("ff:00.0")) <= 256


# -- access denied, domains, tool messages ----------------------------------------------------

A10_NO_ROOT = """\
3b:00.0 3D controller: NVIDIA Corporation GA103 (rev a1)
        Subsystem: NVIDIA Corporation GA103
        Physical Slot: 2-1
{CONTROL}
{STATUS}
        Latency: 0
        Interrupt: pin A routed to IRQ 17
        NUMA node: 0
        Region 0: Memory at 88042000000 (64-bit, prefetchable) [size=16M]
        Region 2: Memory at 84000000000 (64-bit, prefetchable) [size=128G]
        Region 4: Memory at 88040000000 (64-bit, prefetchable) [size=32M]
        Capabilities: <access denied>
        Kernel driver in use: nvidia
        Kernel modules: nvidiafb, nouveau, nvidia_drm, nvidia

3c:00.0 3D controller: NVIDIA Corporation GA103 (rev a1)
        Subsystem: NVIDIA Corporation GA103
        Physical Slot: 3-1
{CONTROL}
""".format(
    CONTROL="        Control: I/O- Mem+ BusMaster+ SpecCycle- MemWINV- VGASnoop- ParErr+ Stepping- "
    "SERR+ FastB2B- DisINTx+",
    STATUS="        Status: Cap+ 66MHz- UDF- FastB2B- ParErr- DEVSEL=fast >TAbort- <TAbort- "
    "<MAbort- >SERR- <PERR- INTx-",
)  # research A10 (fastfetch-cli/fastfetch#1658) from its first whole header; cut at the end


def test_access_denied_h100() -> None:
    parsed = parse_lspci(A10_NO_ROOT)
    first, second = parsed.devices
    assert (first.kind, first.caps_denied, first.driver) == ("gpu", True, "nvidia")
    assert (first.link_cap, first.link_sta, first.acs_ctl, first.port_type) == (None,) * 4
    assert second.kind == "gpu" and not second.caps_denied
    assert parsed.complete is False
    assert parsed.errors[-1] == "output ends inside the block of 0000:3c:00.0: cut off?"
    whole = A10_NO_ROOT[: A10_NO_ROOT.index("3c:00.0")]
    assert parse_lspci(whole).complete is True


def test_domain_prefixed_plx_bridge() -> None:
    text = fixture("plx-pex8725-excerpt-starts-mid-block")
    port = parse_lspci(text[text.index("0000:02:08.0") :] + "\n").devices[0]
    assert (port.bdf, port.kind, port.secondary_bus, port.subordinate_bus) == (
        "0000:02:08.0",
        "bridge",
        0x82,
        0x82,
    )


def test_tool_messages() -> None:
    text = fixture("kioxia-nvme-no-root-access-denied")
    warned = parse_lspci("pcilib: sysfs_read_vpd: read failed: Input/output error\n" + text)
    assert warned.complete is True
    assert warned.errors == ("pcilib: sysfs_read_vpd: read failed: Input/output error",)
    failed = parse_lspci(text + "lspci: Unable to load libkmod resources: error -2\n\n")
    assert failed.complete is False


# -- cut, elided, garbled ---------------------------------------------------------------------


def test_fixture_cut_mid_block() -> None:
    parsed = parse_lspci(fixture("cut-cx7-mid-lnksta"))
    assert parsed.complete is False
    assert parsed.errors == (
        "0000:21:00.0: unreadable LnkSta line: 'LnkSta: Speed 32GT/s, Wid'",
        "output ends inside the block of 0000:21:00.0: cut off?",
    )
    assert parsed.devices[0].link_sta is None and parsed.devices[0].link_cap == PciLink(32.0, 16)


@pytest.mark.parametrize("elision", ["[...]", "...", "…", "....", "[…]", "<snip>", "(...)"])
@pytest.mark.parametrize("indent", ["", "        ", "\t\t"])
def test_hand_elision_is_never_complete(elision: str, indent: str) -> None:
    text = fixture("cx7-mt2910-gen5-x16-endpoint-acs")
    lines = text.splitlines(keepends=True)
    parsed = parse_lspci("".join([*lines[:20], f"{indent}{elision}\n", *lines[40:]]))
    assert parsed.complete is False
    assert any("elided by hand" in e for e in parsed.errors)


def test_final_blank_line_or_kernel_line() -> None:
    text = fixture("kioxia-nvme-no-root-access-denied")
    assert parse_lspci(text).complete is True
    assert parse_lspci(text + "\n").complete is True
    assert parse_lspci(text.rstrip("\n")).complete is False  # the last line may be cut
    no_modules = text.replace("        Kernel modules: nvme\n", "")
    assert no_modules.endswith("Kernel driver in use: nvme\n")
    assert parse_lspci(no_modules).complete is False  # the modules line may be the one lost
    assert parse_lspci(no_modules + "\n").complete is True
    no_kernel = text.replace(
        "        Kernel driver in use: nvme\n        Kernel modules: nvme\n", ""
    )
    assert parse_lspci(no_kernel).complete is False
    assert parse_lspci(no_kernel + "\n").complete is True


def test_crlf_and_tabs_parse_the_same() -> None:
    text = fixture("cx7-mt2910-gen5-x16-endpoint-acs")
    want = parse_lspci(text)
    assert parse_lspci(text.replace("\n", "\r\n")) == want
    tabbed = "\n".join(
        "\t" * ((len(line) - len(line.lstrip(" "))) // 8) + line.lstrip(" ")
        for line in text.split("\n")
    )
    assert "\t\tLnkSta:" in tabbed
    assert parse_lspci(tabbed) == want


def test_device_printed_twice() -> None:
    text = fixture("kioxia-nvme-no-root-access-denied")
    parsed = parse_lspci(text + "\n" + text)
    assert parsed.complete is False and len(parsed.devices) == 1


def test_stray_line_at_column_zero() -> None:
    text = fixture("kioxia-nvme-no-root-access-denied")
    parsed = parse_lspci(text + "\nroot@h100:~# \n\n")
    assert parsed.complete is False


def test_hex_dump_lines_are_tolerated() -> None:
    text = fixture("kioxia-nvme-no-root-access-denied")
    dump = "00: 86 80 c9 10 07 04 10 00 01 00 00 02 10 00 80 00\n10: 00 00 80 e0 00 00 00 e0\n"
    assert parse_lspci(text + dump + "\n").complete is True


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "no lspci device block"),
        ("  \n\n", "no lspci device block"),
        ("garbage\nmore garbage\n", "no lspci device block"),
        (
            "-+-[0000:00]-+-00.0  Advanced Micro Devices, Inc. [AMD] Device 14a4\n",
            "no lspci device block",
        ),
        ("hello\n" + block(HCA), "comes before any lspci device block"),
        (
            "        Kernel driver in use: nvme\n\n" + block(HCA),
            "comes before any lspci device block",
        ),
        (
            "00:00.0 Host bridge: Intel Corporation Device 09a2 (rev 04)\n"
            "17:00.0 Ethernet controller: Mellanox Technologies MT2910 Family [ConnectX-7]\n",
            "plain lspci",
        ),
    ],
)
def test_unreadable(text: str, message: str) -> None:
    with pytest.raises(ParseError, match=message):
        parse_lspci(text)


def test_bounds() -> None:
    bad_bus = bridge("0000:01:00.0", SWITCH, "Downstream Port (Slot-)", 1, 2, 3).replace(
        "subordinate=03", "subordinate=1ff"
    )
    parsed = parse_lspci(bad_bus)
    assert parsed.complete is False and parsed.devices[0].subordinate_bus is None
    assert any("outside 0..255" in e for e in parsed.errors)


def test_device_count_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lspci_module, "MAX_COUNT", 3)
    text = fixture("kioxia-nvme-no-root-access-denied") + "\n"
    many = "".join(text.replace("4c:00.0", f"4c:00.{fn}") for fn in range(4))
    with pytest.raises(ParseError, match="device count 4 is outside"):
        parse_lspci(many)


@pytest.mark.parametrize(
    "line",
    [
        "\t\tLnkSta:\t" + "Speed " * 2700,
        "\t\tACSCtl:\t" + "SrcValid" * 2000,
        "\t\tBus: primary=" + "0," * 8000,
        "17:00.0 " + "[" * 16000,
        "17:00.0 PCI bridge: " + "[10de:" * 2600,
        "\t" + "." * 16000,
        "\tCapabilities: [" + "Express " * 2000,
    ],
)
def test_long_lines_are_linear(line: str) -> None:
    text = block(HCA) + line + "\n"
    start = time.perf_counter()
    for _ in range(20):
        with contextlib.suppress(ParseError):
            parse_lspci(text)
    assert time.perf_counter() - start < 2.0


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=400))
def test_random_text_is_never_complete(text: str) -> None:
    try:
        got = parse_lspci(text)
    except ParseError:
        return
    assert got.complete is False
    json.dumps(as_jsonable(got))


@settings(max_examples=200, deadline=None)
@given(
    case=st.sampled_from(CASES),
    cut=st.floats(min_value=0.0, max_value=1.0),
    noise=st.text(max_size=30),
)
def test_mangled_fixture_raises_only_parse_error(case: Path, cut: float, noise: str) -> None:
    text = case.read_text()
    mangled = text[: int(len(text) * cut)] + noise
    try:
        got = parse_lspci(mangled)
    except ParseError:
        return
    json.dumps(as_jsonable(got))
    for d in got.devices:
        got.path_to_root(d.bdf)
