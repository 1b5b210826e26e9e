"""The node's PCIe and firmware: lspci -vvv, mlxconfig q, dmidecode -t bios -t system.

Layout (an HGX-like board): GPU i and HCA i sit behind one PCIe switch under root port
00:0(i+1).0 — root port → switch upstream port → two downstream ports → GPU at bus
BUS[i], HCA at BUS[i]+1. Faults: ``pcie_downtrained`` (gpu or hca, width/speed),
``acs_enabled`` (the downstream port above one GPU), ``mlxconfig`` (a key with another
value), ``hca_firmware`` (ibstat/ibv_devinfo/mlxlink), ``vbios``/``power_limit`` (smi.py).
"""

from __future__ import annotations

from .node import BUS, emit

SWITCHED = 8  # rails behind a PCIe switch; more GPUs than that hang off the root bus
ACS_OFF = "SrcValid- TransBlk- ReqRedir- CmpltRedir- UpstreamFwd- EgressCtrl- DirectTrans-"
ACS_ON = "SrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-"
ACS_CAP = "SrcValid+ TransBlk+ ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl+ DirectTrans+"
GPU_GTS, HCA_GTS = 32, 32


def hca_bdf(i):
    """The HCA's PCI function (host-facts reads it from sysfs, lspci prints it)."""
    return "0000:%02x:00.0" % (int(BUS[i % 16], 16) + 1)


def gpu_bdf(g):
    return "0000:%s:00.0" % BUS[g % 16].lower()


def link(node, kind, idx, cap_gts):
    """(speed GT/s, width) the link trained at, after a ``pcie_downtrained`` fault."""
    f = node.fault("pcie_downtrained", **{kind: idx})
    if not f:
        return cap_gts, 16
    gts, width = f.get("pcie_gts"), f.get("pcie_width")
    return (cap_gts if gts is None else float(gts)), (16 if width is None else int(width))


def _gts(v):
    return ("%g" % v) + "GT/s"


def _express(kind, cap, sta, port="Endpoint"):
    return (
        "\tCapabilities: [60] Express (v2) %s, MSI 00\n"
        "\t\tDevCap:\tMaxPayload 512 bytes, PhantFunc 0, Latency L0s unlimited, L1 unlimited\n"
        "\t\t\tExtTag+ AttnBtn- AttnInd- PwrInd- RBE+ FLReset+ SlotPowerLimit 75W\n"
        "\t\tLnkCap:\tPort #0, Speed %s, Width x%d, ASPM not supported\n"
        "\t\t\tClockPM- Surprise- LLActRep- BwNot- ASPMOptComp+\n"
        "\t\tLnkCtl:\tASPM Disabled; RCB 64 bytes, Disabled- CommClk+\n"
        "\t\tLnkSta:\tSpeed %s%s, Width x%d%s\n"
        "\t\t\tTrErr- Train- SlotClk+ DLActive- BWMgmt- ABWMgmt-\n"
        % (
            port,
            _gts(cap[0]),
            cap[1],
            _gts(sta[0]),
            " (downgraded)" if sta[0] < cap[0] else "",
            sta[1],
            " (downgraded)" if sta[1] < cap[1] else "",
        )
    )


def _acs(ctl, cap=ACS_CAP):
    return (
        "\tCapabilities: [230 v1] Access Control Services\n\t\tACSCap:\t%s\n\t\tACSCtl:\t%s\n"
        % (cap, ctl)
    )


def _bridge(bdf, name, bus, port, acs):
    pri, sec, sub = bus
    return (
        "%s PCI bridge: %s (prog-if 00 [Normal decode])\n"
        "\tControl: I/O- Mem+ BusMaster+ SpecCycle- MemWINV- VGASnoop- ParErr- Stepping- SERR- FastB2B- DisINTx+\n"
        "\tStatus: Cap+ 66MHz- UDF- FastB2B- ParErr- DEVSEL=fast >TAbort- <TAbort- <MAbort- >SERR- <PERR- INTx-\n"
        "\tLatency: 0, Cache Line Size: 64 bytes\n"
        "\tBus: primary=%02x, secondary=%02x, subordinate=%02x, sec-latency=0\n"
        "%s%s\tKernel driver in use: pcieport\n\n"
        % (bdf, name, pri, sec, sub, _express("bridge", (32, 16), (32, 16), port), acs)
    )


def _endpoint(bdf, cls, name, cap, sta, driver, numa):
    return (
        "%s %s: %s\n\tSubsystem: %s\n"
        "\tControl: I/O- Mem+ BusMaster+ SpecCycle- MemWINV- VGASnoop- ParErr- Stepping- SERR- FastB2B- DisINTx+\n"
        "\tStatus: Cap+ 66MHz- UDF- FastB2B- ParErr- DEVSEL=fast >TAbort- <TAbort- <MAbort- >SERR- <PERR- INTx-\n"
        "\tLatency: 0, Cache Line Size: 64 bytes\n\tNUMA node: %d\n"
        "%s%s\tKernel driver in use: %s\n\tKernel modules: %s\n\n"
        % (
            bdf,
            cls,
            name,
            name,
            numa,
            _express(cls, cap, sta),
            _acs(ACS_OFF, ACS_OFF),
            driver,
            driver,
        )
    )


GPU_NAME = "NVIDIA Corporation GH100 [H100 SXM5 80GB] (rev a1)"
HCA_NAME = "Mellanox Technologies MT2910 Family [ConnectX-7]"
SWITCH = "Broadcom / LSI PEX890xx PCIe Gen 5 Switch (rev b0)"
ROOT = "Advanced Micro Devices, Inc. [AMD] Device 14ab"


def lspci(node, args):
    """lspci -vvv of the GPUs, HCAs and the bridges between them."""
    gpus, hcas = node.gpus(), node.hw["hcas"]
    out = []
    for i in range(max(node.hw["gpus"], hcas)):
        numa = 0 if i < (hcas + 1) // 2 else 1
        b = int(BUS[i % 16], 16)
        switched = i < SWITCHED
        if switched:
            acs = ACS_ON if node.fault("acs_enabled", gpu=i) else ACS_OFF
            out.append(
                _bridge(
                    "0000:00:%02x.1" % (i + 1),
                    ROOT,
                    (0, b - 3, b + 1),
                    "Root Port (Slot+)",
                    _acs(ACS_OFF),
                )
            )
            out.append(
                _bridge(
                    "0000:%02x:00.0" % (b - 3), SWITCH, (b - 3, b - 2, b + 1), "Upstream Port", ""
                )
            )
            out.append(
                _bridge(
                    "0000:%02x:00.0" % (b - 2),
                    SWITCH,
                    (b - 2, b, b),
                    "Downstream Port (Slot+)",
                    _acs(acs),
                )
            )
            out.append(
                _bridge(
                    "0000:%02x:01.0" % (b - 2),
                    SWITCH,
                    (b - 2, b + 1, b + 1),
                    "Downstream Port (Slot+)",
                    _acs(ACS_OFF),
                )
            )
        if i in gpus:
            sta = link(node, "gpu", i, GPU_GTS)
            out.append(
                _endpoint(gpu_bdf(i), "3D controller", GPU_NAME, (GPU_GTS, 16), sta, "nvidia", numa)
            )
        if i < hcas:
            sta = link(node, "hca", "mlx5_%d" % i, HCA_GTS)
            out.append(
                _endpoint(
                    hca_bdf(i),
                    "Infiniband controller"
                    if node.hw["link_layer"] != "Ethernet"
                    else "Ethernet controller",
                    HCA_NAME,
                    (HCA_GTS, 16),
                    sta,
                    "mlx5_core",
                    numa,
                )
            )
    emit(node, "lspci", "".join(out))
    return 0


MLXCONFIG = (  # ConnectX-7 defaults as a real query prints them (docs/research, sample 11)
    ("MEMIC_BAR_SIZE", "0"),
    ("MEMIC_SIZE_LIMIT", "_256KB(1)"),
    ("FLEX_PARSER_PROFILE_ENABLE", "0"),
    ("PF_BAR2_SIZE", "0"),
    ("NUM_OF_VFS", "0"),
    ("SRIOV_EN", "False(0)"),
    ("PF_LOG_BAR_SIZE", "5"),
    ("NUM_PF_MSIX", "63"),
    ("INT_LOG_MAX_PAYLOAD_SIZE", "AUTOMATIC(0)"),
    ("PCI_ATOMIC_MODE", "PCI_ATOMIC_DISABLED_EXT_ATOMIC_ENABLED(0)"),
    ("LINK_TYPE_P1", None),
    ("ROCE_CC_PRIO_MASK_P1", "255"),
    ("CNP_DSCP_P1", "48"),
    ("CNP_802P_PRIO_P1", "6"),
    ("ROCE_CONTROL", "ROCE_ENABLE(2)"),
    ("PCI_WR_ORDERING", "per_mkey(0)"),
    ("P2P_ORDERING_MODE", "DEVICE_DEFAULT(0)"),
    ("ATS_ENABLED", "False(0)"),
    ("ADVANCED_PCI_SETTINGS", "False(0)"),
    ("SAFE_MODE_THRESHOLD", "10"),
    ("SAFE_MODE_ENABLE", "True(1)"),
)


def mlxconfig(node, args):
    """mlxconfig [-e] -d DEV q: the ConnectX-7 table ('Next Boot', or with -e 'Default
    Current Next Boot' and '*' on rows whose next value is not the default), after
    ``mlxconfig`` faults (a setting in force; ``pending: true`` only set for next boot)."""
    import sys

    dev = args[args.index("-d") + 1] if "-d" in args else "mlx5_0"
    if dev not in node.hcas():
        sys.stdout.write("\n-E- Failed to open the device\n")
        return 3
    verbose = "-e" in args or "--enable_verbosity" in args
    out = (
        "\nDevice #1:\n----------\n\n"
        "Device type:        ConnectX7           \n"
        "Name:               MCX755106AS-HEA_Ax  \n"
        "Description:        NVIDIA ConnectX-7 HHHL Adapter Card; 200GbE (default mode) / NDR200 IB; "
        "Dual-port QSFP112; PCIe 5.0 x16 with x16 PCIe extension option; Crypto Disabled; Secure Boot Enabled\n"
        "Device:             %-20s\n\n" % dev
    )
    if verbose:
        out += "Configurations:                                          Default             Current         Next Boot\n"
    else:
        out += "Configurations:                                          Next Boot\n"
    link_type = "ETH(2)" if node.hw["link_layer"] == "Ethernet" else "IB(1)"
    starred = False
    for key, default in MLXCONFIG:
        default = link_type if default is None else default
        current = nxt = default
        f = node.fault("mlxconfig", hca=dev, key=key)
        if f:
            nxt = f.get("value")
            current = default if f.get("pending") else nxt
        if verbose:
            star = "*" if nxt != default else " "
            starred |= star == "*"
            out += "%s       %-43s %-20s %-20s %-20s\n" % (star, key, default, current, nxt)
        else:
            out += "        %-43s %-20s\n" % (key, nxt)
    if starred:
        out += "The '*' shows parameters with next value different from default/current value.\n"
    emit(node, "mlxconfig", out)
    return 0


def dmidecode(node, args):
    """dmidecode -t bios -t system (dmidecode 3.5 layout; serials withheld)."""
    f = node.fault("bios")
    version = f.get("version") if f else node.hw.get("bios", "2.3.1")
    out = (
        "# dmidecode 3.5\nGetting SMBIOS data from sysfs.\nSMBIOS 3.5.0 present.\n\n"
        "Handle 0x0000, DMI type 0, 26 bytes\nBIOS Information\n"
        "\tVendor: American Megatrends International, LLC.\n\tVersion: %s\n"
        "\tRelease Date: 06/12/2025\n\tROM Size: 32 MB\n\tCharacteristics:\n"
        "\t\tPCI is supported\n\t\tBIOS is upgradeable\n\t\tUEFI is supported\n"
        "\tBIOS Revision: 5.32\n\n"
        "Handle 0x0001, DMI type 1, 27 bytes\nSystem Information\n"
        "\tManufacturer: Supermicro\n\tProduct Name: SYS-821GE-TNHR\n\tVersion: 0123456789\n"
        "\tSerial Number: Not Specified\n\tUUID: Not Settable\n\tWake-up Type: Power Switch\n"
        "\tSKU Number: To be filled by O.E.M.\n\tFamily: Family\n\n" % version
    )
    emit(node, "dmidecode", out)
    return 0
