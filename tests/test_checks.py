"""Checks turn parsed outputs into findings; each test names the behaviour it guards."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from rackops.checks import check_dcgm, check_hca_ports, check_nccl, check_perftest, peer_gate
from rackops.checks.repeat import combine_attempts
from rackops.cli import main
from rackops.errors import ProfileError
from rackops.findings import Finding, Status, Subject, worst
from rackops.inventory import load_inventory
from rackops.profiles import BUILTIN_PROFILES_DIR, load_profile, load_profile_file
from rackops.tools import parse
from rackops.tools.offline import build_context, evaluate

FIX = Path(__file__).parent / "fixtures"
NDR = load_profile("h100-sxm-ndr").profile
ROOT = Path(__file__).resolve().parent.parent


def fixture(tool: str, case: str) -> object:
    return parse(tool, (FIX / tool / f"{case}.txt").read_text())


def codes(findings: list[Finding], status: Status) -> list[str]:
    return [f.code for f in findings if f.status is status]


# --- verdict of every fixture through `rackops check` --------------------------------------

VERDICTS = {
    # one real H200 passed through alone (issue 38), against the 8-GPU H100 profile: one
    # rank's all-reduce ran on 1 of its 8 GPUs (FAIL: NCCL-003); -g 2 on it fails with
    # its reason; no NVLink where 18 are expected FAILs each GPU; 1 of 8 GPUs FAILs the
    # count; a topology with no NIC cannot place the profile's HCAs (ERROR)
    "nccl-tests/h200-580-all-reduce-g1": "FAIL",
    "nccl-tests/h200-580-g2-on-1gpu-failure": "ERROR",
    "nvidia-smi-nvlink/h200-580-no-nvlink": "FAIL",
    "nvidia-smi-query/h200-580-inventory": "FAIL",
    "nvidia-smi-topo/h200-580-1gpu-underlined": "ERROR",
    "nvidia-smi-xml/h200-580-1gpu": "FAIL",
    # real GB200/GB300 trays against their NVL72 profiles; the derived faults FAIL their GPU;
    # a real B200 HGX against the H100 profile: another model, persistence off (real)
    "nvidia-smi-xml/gb200x4-580-real": "OK",
    "nvidia-smi-xml/gb300x4-580-real": "OK",
    "nvidia-smi-xml/gb200x4-gpu2-insufficient-resources": "FAIL",
    "nvidia-smi-xml/gb200x4-gpu1-health-unhealthy": "FAIL",
    "nvidia-smi-xml/gb200x4-gpu0-in-progress": "FAIL",
    "nvidia-smi-xml/b200x8-580-real": "FAIL",
    "nvidia-smi-xml/h100x8-580-real": "OK",
    # IMEX against the example NVL72 domain (18 trays, driver 580.173.02 pinned): the
    # public 570.172 table is the wrong version on every node (FAIL); one- and two-node
    # domains are not its 18 trays (FAIL); DEGRADED and a down node FAIL; a cut table ERRORs
    # NCCL's own log, judged as a run across one domain's trays (its hosts): no communicator
    # line is undecided; MNNVL 0 across two nodes fails; one node proves nothing (a warning)
    "nccl-debug/nccl1769-gb200-mnnvl-fabric": "ERROR",
    "nccl-debug/cut-nccl1769-mid-line": "ERROR",
    "nccl-debug/nccl1814-ibext-channels-between-nodes": "ERROR",
    "nccl-debug/nccl707-busid-channel-format": "ERROR",
    "nccl-debug/nccl1519-comm-mnnvl0-two-nodes": "FAIL",
    "nccl-debug/torchtitan1570-rank-prefix-single-node": "WARN",
    # a tray's own IMEX: channel 0 at its class's major is OK; at nvidia-caps' (the real
    # GB200 node) it FAILs; no daemon, channel or nodes_config FAILs; a cut read is ERROR
    "imex-node/guide-234-ready-4node": "OK",
    "imex-node/container-channels-508": "OK",
    "imex-node/gb200-channel0-at-nvidia-caps-major": "FAIL",
    "imex-node/composed-no-channel-no-config-not-ready": "FAIL",
    "imex-node/cut-guide-234-mid-channels": "ERROR",
    "nvidia-imex/aws-pcs-570-18node-up": "FAIL",
    "nvidia-imex/gh200-570-1node-up": "FAIL",
    "nvidia-imex/gh200-570-2node-up": "FAIL",
    "nvidia-imex/json-580-degraded-dcgm-sample": "FAIL",
    "nvidia-imex/derived-18node-node7-unavailable": "FAIL",
    "nvidia-imex/cut-18node-mid-matrix": "ERROR",
    # ibdiagnet: a link at 2x of a fabric whose Summary counts 15 errors; one master SM in the
    # .sm file; a net_dump whose links are all alike; cut or trimmed output is ERROR, and the
    # manual's two speed lines FAIL their links before the cut's ERROR
    "ibdiagnet/console-2.1.1-cut-at-subnet-manager": "ERROR",
    "ibdiagnet/console-2.7.0-width-errors": "FAIL",
    "ibdiagnet/cut-net-dump-inside-a-row": "ERROR",
    "ibdiagnet/docs-2.11-speed-errors": "FAIL",
    "ibdiagnet/net-dump-2.10.0-one-switch": "OK",
    "ibdiagnet/sm-one-master": "OK",
    "ibdiagnet/summary-only-excerpt": "ERROR",
    # dcgmproftester against the H100 profile: every real A100/MX150 figure is below the H100
    # GEMM floor and the profile's other GPUs have no reading; cut, snipped, failed or
    # figure-less outputs (no worker to tie a reading to a GPU) are ERROR
    "dcgmproftester/a100-dcgm-docs-1004": "FAIL",
    "dcgmproftester/a100-mig-2x3g-dcgm-docs-1004-snipped": "ERROR",
    "dcgmproftester/a100-pcie-dcgm3.3.5-1004-author-trimmed": "ERROR",
    "dcgmproftester/a100-pcie-dcgm3.3.5-1004-d30": "FAIL",
    "dcgmproftester/cut-a100-dcgm-docs-last-reading-no-newline": "ERROR",
    "dcgmproftester/cut-a100-pcie-dcgm3.3.5-mid-reading": "ERROR",
    "dcgmproftester/dcgm3.1.7-error-0-from-runtests": "ERROR",
    "dcgmproftester/dcgm4.2.3-1007-no-cublas-no-figure": "ERROR",
    "dcgmproftester/mx150-dcgm2.1.7-1004-kubectl-logs": "FAIL",
    "dcgmproftester/not-root-cachemanager-init-failed": "ERROR",
    "dcgmproftester/t4-dcgm2.0.10-1004-no-worker-prefix": "ERROR",
    # lspci: an HCA as capable, idle GPU speed not judged, a device without root access that
    # is neither GPU nor HCA; everything cut, elided or grepped is ERROR
    "lspci/cx7-mt2910-gen5-x16-endpoint-acs": "OK",
    "lspci/rtx6000ada-gen1-idle-downgraded": "OK",
    "lspci/kioxia-nvme-no-root-access-denied": "OK",
    "lspci/pciutils-cap-pcie-2-old-single-line-lnksta": "OK",
    "lspci/a100-sxm4-nn-cut-before-lnkcap": "ERROR",
    "lspci/cut-cx7-mid-lnksta": "ERROR",
    "lspci/cut-rtx6000ada-hand-elision": "ERROR",
    "lspci/cx6dx-old-devctl-cut-after-lnkcap": "ERROR",
    "lspci/h100-pcie-2331-iommu-group-cut": "ERROR",
    "lspci/nccl-629-grep-acsctl": "ERROR",
    "lspci/openvmm-root-port-acs-off-elided": "ERROR",
    "lspci/plx-pex8725-excerpt-starts-mid-block": "ERROR",
    # mlxconfig: only a whole query table is read; filtered, elided, set and error outputs not
    "mlxconfig/cx5-vpi-query-full": "OK",
    "mlxconfig/cut-cx5-mid-row": "ERROR",
    "mlxconfig/cx5-e-query-old-layout-window": "ERROR",
    "mlxconfig/cx5-e-query-star-row-window": "ERROR",
    "mlxconfig/cx6-set-confirm-prompt": "ERROR",
    "mlxconfig/cx6lx-query-header-mstflint-4.19": "ERROR",
    "mlxconfig/cx7-query-author-elided": "ERROR",
    "mlxconfig/cx7-query-egrep-filtered": "ERROR",
    "mlxconfig/cx7-query-grep-header-lines": "ERROR",
    "mlxconfig/cx7-query-grep-one-key": "ERROR",
    "mlxconfig/error-failed-to-open-device": "ERROR",
    "mlxconfig/error-nv-access-registers": "ERROR",
    # dmidecode: whole BIOS records only
    "dmidecode/dell-m630-full-dump": "OK",
    "dmidecode/hpe-bl460c-gen10-full-dump": "OK",
    "dmidecode/cut-dell-m630-mid-characteristics": "ERROR",
    "dmidecode/dell-r640-system-only": "ERROR",
    "dmidecode/intel-mtl-type0-uefi-cut": "ERROR",
    "dmidecode/no-smbios-entry-point": "ERROR",
    "dmidecode/supermicro-microcloud-space-indent-cut": "ERROR",
    "dmidecode/supermicro-ssg-6028r-cut-after-bios": "ERROR",
    # host-facts: an HCA with no PCI device in sysfs is a WARN; no closing line, unreadable
    "host-facts/lab-4-hcas-one-unbound": "WARN",
    "host-facts/lab-node-with-packages": "OK",
    "host-facts/cut-before-end": "ERROR",
    "nccl-tests/bare-nccl-failure-unhandled-cuda-2018": "ERROR",
    "nccl-tests/bare-nccl-failure-unhandled-system-error-2018": "ERROR",
    "nccl-tests/headerless-rows-then-unhandled-cuda-error": "FAIL",
    "nvidia-smi-nvlink/nvml-driver-library-mismatch": "ERROR",
    "nvidia-smi-nvlink/cut-inside-gpu7-links": "ERROR",
    "dcgmi-diag/json-truncated": "ERROR",
    "dcgmi-diag/json-v3-gpu1-memory-fail": "FAIL",
    "dcgmi-diag/json-v4-plugin-fail-entities-pass": "FAIL",
    "dcgmi-diag/v2-blacklist-level2": "OK",
    "dcgmi-diag/v3-level3-pass-all": "WARN",
    "dcgmi-diag/v3-targeted-power-fail-gpu0": "FAIL",
    "dcgmi-diag/v4-level3-memory-fail-gpu5": "FAIL",
    "ethtool-module/cut-sff8636-no-flags-mid-rx-line": "FAIL",
    "ethtool-module/cut-sff8636-sr4-inside-thresholds": "FAIL",
    "ethtool-module/error-netlink-invalid-argument-debug": "ERROR",
    "ethtool-module/sff8636-qsfp-plus-no-flags-no-thresholds": "FAIL",
    "iblinkinfo/cut-qdr-inside-peer-description": "ERROR",
    "iblinkinfo/cut-qdr-inside-third-header": "ERROR",
    "iblinkinfo/qdr-is5035-ca-blocks-snippet": "WARN",
    "ibstat/roce-ethernet-zero-guid": "FAIL",
    "ibstat/rocep-udev-names": "FAIL",
    "ibstat/spaces-not-tabs": "FAIL",
    "ibstatus/ndr-healthy": "FAIL",
    "ibstatus/port-down-polling": "FAIL",
    "ibstatus/roce-port": "FAIL",
    "ibv_devinfo/mlnx-ofed4-tabs": "FAIL",
    "ibv_devinfo/port-down": "FAIL",
    "ibv_devinfo/rdma-core-ndr-healthy": "FAIL",
    "ibv_devinfo/verbose-roce-gids": "FAIL",
    "lldpctl/cut-text-inside-neighbour": "ERROR",
    "lldpctl/json-many-interfaces": "WARN",
    "lldpctl/json-one-interface": "WARN",
    "lldpctl/json0": "WARN",
    "lldpctl/lab-lldpd-1.0.16-keyvalue": "FAIL",
    "lldpctl/text": "WARN",
    "mlnx_qos/cut-before-pfc-row": "ERROR",
    "mlxlink/cut-cx7-inside-module-info": "ERROR",
    "mlxlink/cx7-ndr-ib-osfp-dac-show-module": "WARN",
    "nccl-tests/all-reduce-2018-res-column": "ERROR",
    "nccl-tests/all-reduce-2node-16rank-2022": "ERROR",  # rows cut out
    "nccl-tests/all-reduce-a100-2021-error-column": "ERROR",  # rows cut out
    "nccl-tests/alltoall-inplace-na": "ERROR",
    "nccl-tests/broadcast-root-0": "ERROR",  # rows cut out
    "nccl-tests/reduce-scatter-and-all-gather-hash-stripped": "ERROR",  # rows cut out
    "nccl-tests/sendrecv-check-off-na": "ERROR",
    "nvidia-smi-query/h100x8-nounits-na-values": "OK",
    "nvidia-smi-topo/cut-after-header": "ERROR",
    "nvidia-smi-xml/truncated": "ERROR",
    "ofed_info/bare-version-n": "FAIL",
    "ofed_info/command-not-found": "ERROR",
    "ofed_info/mlnx-ofed-full-head": "FAIL",
    "perftest/json-bw-gbits": "OK",
    "perftest/json-bw-mib-unquoted-values": "FAIL",
    "perftest/write-bw-duration-peak-not-measured": "OK",
    "perftest/write-bw-gpudirect-cuda": "OK",
    "perftest/write-bw-newest-mibsec-connected": "OK",
    "perftest/write-bw-old-mbsec-edr": "FAIL",
    "perftest/write-bw-sweep-all-sizes": "OK",
    "rdma-link/ib-active": "OK",
    "rdma-link/ib-and-roce-mixed-disabled-partial": "FAIL",
    "rdma-link/ib-down-physical-linkup": "FAIL",
    "rdma-link/rxe-soft-roce": "OK",
    "show_gids/long-names-misaligned": "FAIL",
    "show_gids/roce-v2-index-3": "FAIL",
    "ibstat/h100x8-ndr-healthy": "OK",
    "ibstat/h100x8-port-polling": "FAIL",
    "ibstat/port-disabled": "FAIL",
    "ibstat/link-at-reduced-rate-hdr": "FAIL",
    "ibstat/ibpanic-mid-list": "ERROR",
    "ibstat/cut-inside-port-block": "ERROR",
    "ibstat/not-ibstat-garbage": "ERROR",
    "ibstat/mixed-fabrics-lexical-order": "FAIL",  # 6 IB CAs where the profile has 8
    "ibstatus/ndr200-2x-width": "FAIL",
    "ibv_devinfo/no-devices": "FAIL",
    "ibv_devinfo/roce-netdev-mtu-1500": "FAIL",
    "dcgmi-diag/v4-level2-pass-h100x8": "OK",
    "dcgmi-diag/v4-plugin-fail-gpus-pass": "FAIL",
    "dcgmi-diag/v4-level3-everything-skipped": "ERROR",
    "dcgmi-diag/v3-all-skipped-not-allowed": "ERROR",
    "dcgmi-diag/v4-software-warn-persistence": "WARN",
    "dcgmi-diag/hostengine-not-running": "ERROR",
    "dcgmi-diag/v4-truncated-mid-table": "ERROR",
    "perftest/write-bw-ndr-gbits": "OK",
    "perftest/write-bw-bidirectional": "OK",
    "perftest/write-bw-cpufreq-warning-in-table": "FAIL",
    "perftest/write-bw-connect-refused": "ERROR",
    "perftest/write-bw-retry-exceeded": "FAIL",
    "perftest/write-bw-truncated-no-close": "ERROR",
    "perftest/write-lat-ndr": "OK",
    "perftest/write-lat-slow-link": "FAIL",
    "perftest/write-lat-rxe-nan-stdev": "FAIL",  # 13 ms over emulated CPUs, a 2.5 us profile
    "perftest/write-lat-rxe-server-inf": "ERROR",  # no statistic: never OK
    "perftest/write-bw-rxe-clock-zero": "ERROR",  # not timed: says nothing of the link
    "nccl-tests/all-reduce-h100x8-2025-healthy": "ERROR",  # rows cut out
    "nccl-tests/all-reduce-h100x8-degraded-busbw": "ERROR",  # rows cut out
    "nccl-tests/all-reduce-wrong-results": "ERROR",  # rows cut out
    "nccl-tests/nccl-failure-mid-run": "FAIL",
    "nccl-tests/truncated-no-summary": "ERROR",
    "nccl-tests/garbage-not-nccl": "ERROR",
    "nvidia-smi-query/h100x8-idle-gen1-header": "OK",
    "nvidia-smi-query/seven-of-eight-gpus": "FAIL",
    "nvidia-smi-query/persistence-off-ecc-errors": "FAIL",
    "nvidia-smi-query/remapped-rows-query": "FAIL",
    "nvidia-smi-query/driver-not-loaded": "ERROR",
    "nvidia-smi-xml/h100x8-healthy": "OK",
    "nvidia-smi-xml/remap-pending-and-dbe": "FAIL",
    "nvidia-smi-xml/fabric-not-started-width-x8": "FAIL",
    "nvidia-smi-nvlink/h100x8-18-links": "OK",
    "nvidia-smi-nvlink/gpu2-two-links-inactive": "FAIL",
    "nvidia-smi-topo/h100x8-8nic-pix": "OK",
    "mlnx_qos/dscp-lossless-prio3": "OK",
    "mlnx_qos/pfc-on-cnp-priority": "FAIL",
    "mlnx_qos/pcp-trust-no-pfc": "FAIL",
    "ofed_info/doca-ofed-internal": "OK",
    "ofed_info/mlnx-ofed-short": "FAIL",
    "show_gids/no-trailer-line": "FAIL",  # one HCA listed; the node has eight
    "show_gids/trailer-count-mismatch": "ERROR",
    "host-tuning/lab-node-provisioned": "OK",
    "host-tuning/drift-mtu-ecn-cnp-irq-hugepages": "FAIL",
    "host-tuning/inbox-driver-no-ecn-missing-netdev": "FAIL",
    "host-tuning/cut-off": "ERROR",
    "host-tuning/not-a-read-back": "ERROR",
    "ping/jumbo-ok": "OK",
    "ping/one-lost": "WARN",
    "ping/dropped-by-a-hop": "FAIL",
    "ping/local-mtu-1500": "FAIL",
    "ping/frag-needed": "FAIL",
    "ping/cut-before-statistics": "ERROR",
    "ping/no-such-interface": "ERROR",
    "mlxlink/bf3-eth-100g-dac-m-c": "OK",
    "mlxlink/cut-bf3-mid-ber-lane-list": "ERROR",
    "mlxlink/cx4-ib-fdr-default-query": "WARN",  # no -c: BER not judged, never a pass
    "mlxlink/cx5-ib-sdr-status-opcode-25-cable-speed": "WARN",
    "mlxlink/error-pddr-bad-parameter": "ERROR",
    "ethtool-module/cmis-qsfp-dd-400g-dac-no-dom": "OK",
    "ethtool-module/sff8636-qsfp-plus-40g-sr4-full-thresholds": "FAIL",  # 3 dark lanes
    "ethtool-module/error-io-error-mlx4": "ERROR",
    "ethtool-module/cmis-qsfp-dd-dom-16ch-excerpt": "ERROR",  # an excerpt is not whole
    "lldpctl/lab-lldpd-1.0.16-one-port": "FAIL",  # in Ethernet16, designed Ethernet0
    "lldpctl/daemon-not-running": "ERROR",
    "lldpctl/cut-json0-mid-document": "ERROR",
    "lldpctl/no-neighbours": "WARN",  # nothing heard: not verified, not passed
    "iblinkinfo/edr-sb7700-switch-down-polling-truncated": "ERROR",
    "rdma-link/cx6dx-roce-two-ports-trailing-space": "OK",
    "rdma-link/ib-down-polling": "FAIL",
    "rdma-link/cut-mid-state": "ERROR",
    # cut from real outputs (tests/fixtures/*/SOURCES.md): never complete, never a pass
    "lldpctl/cut-keyvalue-first-five-lines": "FAIL",  # no port id; the chassis is miscabled
    "lldpctl/cut-text-second-neighbour-without-chassis": "ERROR",
    "nccl-tests/all-reduce-h100-2node-16rank-a3mega-full": "FAIL",  # 338.8 GB/s < floor
    "nccl-tests/cut-a3mega-rows-replaced-by-a-comment": "ERROR",
    "nccl-tests/cut-a3mega-three-rows-removed": "ERROR",
    "nvidia-smi-nvlink/cut-fragment-gpu2-to-gpu7": "ERROR",
    "nvidia-smi-nvlink/cut-fragment-inside-gpu4-links": "ERROR",
}
ALL = sorted(FIX.glob("*/*.txt"))


def lab_inventory(dest: Path, irqbalance: str = "ban") -> Path:
    """The inventory `rackops lab up --nodes 2` writes (netdevs, tuning), without a lab."""
    import yaml

    from rackops.lab.inventory import write_inventory
    from rackops.lab.model import LabNode, LabState

    dest.mkdir(parents=True, exist_ok=True)
    nodes = [
        LabNode(
            f"node0{i}",
            i,
            f"c{i}",
            2300 + i,
            f"198.19.0.{10 + i}",
            {r: f"198.18.{r}.{10 + i}" for r in range(8)},
        )
        for i in (1, 2)
    ]
    state = LabState(
        "rackops-lab",
        "podman",
        dest,
        "img",
        False,
        dest / "inv",
        dest / "key",
        [],
        {"ofed": "25.07-0.9.7", "driver": "580.95.05", "dcgm": "4.4.1"},
        nodes,
    )
    write_inventory(state, dest / "inv")
    tuning = dest / "inv" / "group_vars" / "gpu_nodes" / "tuning.yml"
    data = yaml.safe_load(tuning.read_text())
    data["rackops_host_tuning"]["irqbalance"] = irqbalance
    tuning.write_text(yaml.safe_dump(data))
    return dest / "inv"


LAB_INV = lab_inventory(Path(tempfile.mkdtemp(prefix="rackops-test-inv-")))


# counters are judged on what grows during a run, and ibnetdiscover is read for cabling by
# iblinkinfo: one output alone has no check (exit 64 with the reason)
NO_SINGLE_CHECK = {
    "perfquery",
    "sonic-counters",
    "eos-counters",
    "nvue-counters",
    "ethtool-stats",
    "ibnetdiscover",
    "nvidia-smi-perf",
    "dcgmi-dmon",
    "kernel-xid",
    "nvidia-smi-nvlink-errors",
    "sonic-ports",
    "eos-ports",
    "nvue-ports",
}


def _args(tool: str) -> list[str]:
    if tool == "iblinkinfo":
        return ["-i", str(ROOT / "inventories/example-ib"), "--profile", "h100-sxm-ndr"]
    if tool in ("host-tuning", "ping"):
        return ["-i", str(LAB_INV), "--node", "node01"]
    if tool in ("mlnx_qos", "show_gids", "ofed_info", "lldpctl", "rdma-link"):
        return ["-i", str(ROOT / "inventories/example-roce"), "--node", "node01"]
    if tool in ("nvidia-smi-topo",):
        return ["-i", str(ROOT / "inventories/example-ib"), "--node", "node01"]
    if tool == "nvidia-imex":  # a tray of the example NVL72 domain
        return ["-i", str(ROOT / "inventories/example-gb200-nvl72"), "--node", "tray01"]
    return ["--profile", "h100-sxm-ndr", "--suite", "acceptance"]


@pytest.mark.parametrize("case", ALL, ids=[f"{p.parent.name}/{p.stem}" for p in ALL])
def test_check_runs_on_every_fixture(case: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tool = case.parent.name
    argv = ["check", tool, str(case), "--format", "json", *_args(tool)]
    for tray in ("gb200", "gb300"):  # a Blackwell NVL72 tray: its own profile
        if case.stem.startswith(tray):
            argv[argv.index("h100-sxm-ndr")] = f"{tray}-nvl72"
    if tool in ("perftest", "dcgmi-diag"):  # pinned size / level have their own tests
        argv = [a for a in argv if a not in ("--suite", "acceptance")]
    rc = main(argv)
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    if tool in NO_SINGLE_CHECK:
        parsed_ok = main(["parse", tool, str(case)]) == 0
        capsys.readouterr()
        assert rc == (64 if parsed_ok else 3), err
        assert not parsed_ok or any(
            why in err
            for why in (
                "judged on what grows during a run",
                "judges the samples it takes while it loads",
                "judged against the read taken before a run",
                "is parsed only",
                "judged against the design's inter-switch links",
            )
        )
        return
    import json

    verdict = json.loads(out)["verdict"]
    assert rc == {"OK": 0, "WARN": 1, "FAIL": 2, "ERROR": 3}[verdict]
    assert verdict == VERDICTS[f"{tool}/{case.stem}"], out


def test_verdict_table_names_every_real_fixture() -> None:
    """Each fixture's verdict is written down, not taken from the run that is judged."""
    names = {f"{p.parent.name}/{p.stem}" for p in ALL if p.parent.name not in NO_SINGLE_CHECK}
    assert set(VERDICTS) == names


# --- behaviours the issue names ------------------------------------------------------------


def test_only_cabled_hcas_are_judged() -> None:
    """A down BlueField/bond beside the compute HCAs is not a compute-fabric failure."""
    cluster = load_inventory(ROOT / "inventories/example-ib").raise_for_errors()
    node = cluster.node("node01")
    parsed = fixture("ibstat", "mixed-fabrics-lexical-order")
    cabled = [h for h in node.hcas if h.device in ("mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3")]
    findings = check_hca_ports(parsed, NDR, node="node01", hcas=cabled)  # type: ignore[arg-type]
    assert worst(findings) is Status.OK
    assert {f.subject.hca for f in findings} == {"mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"}


def test_missing_cabled_hca_names_switch_port() -> None:
    cluster = load_inventory(ROOT / "inventories/example-ib").raise_for_errors()
    findings = check_hca_ports(
        fixture("ibstat", "spaces-not-tabs"),
        NDR,  # type: ignore[arg-type]
        node="node03",
        hcas=cluster.node("node03").hcas,
    )
    missing = [f for f in findings if f.code == "HCA-001"]
    assert len(missing) == 6
    assert missing[0].subject.switch == "leaf-r2" and missing[0].subject.switch_port == "1/3"


def test_ibpanic_is_error_not_pass() -> None:
    findings = check_hca_ports(fixture("ibstat", "ibpanic-mid-list"), NDR)  # type: ignore[arg-type]
    assert codes(findings, Status.ERROR) == ["HCA-000"] and len(findings) == 1


def test_dcgm_plugin_fail_wins_over_gpu_pass() -> None:
    findings = check_dcgm(fixture("dcgmi-diag", "v4-plugin-fail-gpus-pass"))  # type: ignore[arg-type]
    assert worst(findings) is Status.FAIL
    assert "plugin level" in findings[0].message


def test_dcgm_skip_is_not_pass() -> None:
    findings = check_dcgm(fixture("dcgmi-diag", "v3-all-skipped-not-allowed"))  # type: ignore[arg-type]
    assert worst(findings) is Status.ERROR
    assert "DCGM-003" in codes(findings, Status.WARN)


def test_dcgm_level_below_suite_is_error() -> None:
    findings = check_dcgm(fixture("dcgmi-diag", "v4-level2-pass-h100x8"), level=3)  # type: ignore[arg-type]
    assert "DCGM-004" in codes(findings, Status.ERROR)


def test_dcgm_gpu_level_fail_names_gpu() -> None:
    findings = check_dcgm(fixture("dcgmi-diag", "v4-level3-memory-fail-gpu5"))  # type: ignore[arg-type]
    fails = [f for f in findings if f.status is Status.FAIL]
    assert [f.subject.gpu for f in fails] == [5]


def test_perftest_gates_at_pinned_size_not_sweep() -> None:
    parsed = fixture("perftest", "write-bw-sweep-all-sizes")
    at_64k = check_perftest(parsed, NDR, message_size_bytes=65536)  # type: ignore[arg-type]
    at_8m = check_perftest(parsed, NDR, message_size_bytes=8388608)  # type: ignore[arg-type]
    assert codes(at_64k, Status.FAIL) == ["PERF-001"]
    assert worst(at_8m) is Status.OK
    missing = check_perftest(parsed, NDR, message_size_bytes=12345)  # type: ignore[arg-type]
    assert codes(missing, Status.ERROR) == ["PERF-000"]


def test_perftest_bidirectional_uses_bidirectional_floor() -> None:
    findings = check_perftest(fixture("perftest", "write-bw-bidirectional"), NDR)  # type: ignore[arg-type]
    assert findings[0].expected == NDR.thresholds.ib_write_bw_bidir_gbps_min


def _whole(parsed: object) -> object:
    """The gate's logic on an abridged table (rows cut out: parsed as incomplete)."""
    import dataclasses

    assert parsed.cut  # type: ignore[attr-defined]
    return dataclasses.replace(parsed, complete=True, cut=())  # type: ignore[type-var]


def test_nccl_gates_at_pinned_size_not_average() -> None:
    parsed = _whole(fixture("nccl-tests", "all-reduce-h100x8-2025-healthy"))
    assert parsed.avg_busbw_gbs < NDR.thresholds.nccl_single_node_busbw_gbs_min  # type: ignore[attr-defined]
    findings = check_nccl(parsed, NDR, gate_sizes_bytes=[8 << 30, 16 << 30])  # type: ignore[arg-type]
    assert worst(findings) is Status.OK


def test_nccl_multi_node_uses_multi_node_floor() -> None:
    findings = check_nccl(
        _whole(fixture("nccl-tests", "all-reduce-2node-16rank-2022")),  # type: ignore[arg-type]
        NDR,  # type: ignore[arg-type]
        gate_sizes_bytes=[8 << 30],
    )
    assert findings[0].expected == NDR.thresholds.nccl_multi_node_busbw_gbs_min
    assert worst(findings) is Status.OK


def test_peer_gate_fails_straggler_above_floor() -> None:
    values = {
        Subject(node=f"node{i:02d}"): v
        for i, v in enumerate([391.2, 390.8, 391.5, 390.9, 391.1, 362.0, 391.3, 390.7], 1)
    }
    assert all(v > NDR.thresholds.ib_write_bw_gbps_min for v in values.values())
    findings = peer_gate(
        values,
        metric="ib_write_bw",
        unit="Gb/s",
        k=NDR.thresholds.peer_mad_k,
        drop_pct=NDR.thresholds.peer_drop_pct_min,
    )
    assert [f.subject.node for f in findings] == ["node06"]


def test_peer_gate_ignores_noise_when_all_equal() -> None:
    values = {Subject(node=f"n{i}"): 390.0 + (i % 2) * 0.01 for i in range(8)}
    assert peer_gate(values, metric="bw", unit="Gb/s", k=4, drop_pct=5) == []


def test_repeats_keep_every_attempt_and_flag_flaky() -> None:
    ok = [Finding("PERF-OK", Status.OK, Subject(node="a"), "fine")]
    bad = [Finding("PERF-001", Status.FAIL, Subject(node="a"), "slow")]
    flaky = combine_attempts([bad, ok, ok])
    assert flaky.status is Status.WARN and len(flaky.attempts) == 3
    assert combine_attempts([bad, bad]).status is Status.FAIL
    assert combine_attempts([ok, ok]).status is Status.OK


def test_worst_fail_outranks_error() -> None:
    err = Finding("X", Status.ERROR, Subject(), "e")
    fail = Finding("Y", Status.FAIL, Subject(), "f")
    assert worst([err, fail]) is Status.FAIL and worst([err]) is Status.ERROR
    assert worst([]) is Status.ERROR


# --- profiles ------------------------------------------------------------------------------


@pytest.mark.parametrize("path", sorted(BUILTIN_PROFILES_DIR.glob("*.yaml")), ids=lambda p: p.stem)
def test_builtin_profiles_load(path: Path) -> None:
    assert load_profile_file(path).profile.name == path.stem


def test_profile_with_impossible_floor_is_rejected(tmp_path: Path) -> None:
    text = (BUILTIN_PROFILES_DIR / "a100-sxm-hdr.yaml").read_text()
    bad = tmp_path / "a100-sxm-hdr.yaml"
    bad.write_text(
        text.replace("nccl_multi_node_busbw_gbs_min: 172", "nccl_multi_node_busbw_gbs_min: 210")
    )
    with pytest.raises(ProfileError) as exc:
        load_profile_file(bad)
    msg = str(exc.value)
    assert "nccl_multi_node_busbw_gbs_min" in msg and "200" in msg and ":" in msg.split(" ")[0]


def test_profile_schema_error_names_line(tmp_path: Path) -> None:
    text = (BUILTIN_PROFILES_DIR / "h100-sxm-ndr.yaml").read_text()
    bad = tmp_path / "h100-sxm-ndr.yaml"
    bad.write_text(text.replace("rate_gbps: 400 ", "rate_gbps: fast "))
    with pytest.raises(ProfileError, match=r"h100-sxm-ndr.yaml:\d+: hca.rate_gbps"):
        load_profile_file(bad)


def test_check_without_profile_is_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["check", "ibstat", str(FIX / "ibstat/h100x8-ndr-healthy.txt")])
    assert rc == 64 and "--profile" in capsys.readouterr().err


def test_offline_context_from_inventory_node() -> None:
    ctx = build_context(None, str(ROOT / "inventories/example-roce"), "node02", None)
    findings = evaluate(
        "ibstat", (FIX / "ibstat/roce-ethernet-zero-guid.txt").read_text(), ctx, "node02"
    )
    assert ctx.profile.name == "h100-sxm-roce400"
    assert {f.subject.hca for f in findings if f.code == "HCA-001"} == {
        "mlx5_4",
        "mlx5_5",
        "mlx5_6",
        "mlx5_7",
    }


# --- host tuning read back against the design (issue: drift is a FAIL naming the setting) ---


def _tuning(case: str, irqbalance: str = "ban", tmp: Path | None = None) -> list[Finding]:
    from rackops.checks.tuning import check_host_tuning

    inv = LAB_INV if tmp is None else lab_inventory(tmp, irqbalance)
    cluster = load_inventory(inv).raise_for_errors()
    return check_host_tuning(
        fixture("host-tuning", case),  # type: ignore[arg-type]
        cluster.node("node01"),
        cluster,
    )


def test_drift_names_setting_live_and_designed_value() -> None:
    found = {
        (
            f.code,
            f.subject.hca,
            f.observed if not isinstance(f.observed, list) else len(f.observed),
            f.expected,
        )
        for f in _tuning("drift-mtu-ecn-cnp-irq-hugepages")
        if f.status is Status.FAIL
    }
    assert found == {
        ("HOST-MTU", "mlx5_1", 1500, 9000),
        ("C-20", "mlx5_2", "0", "1"),
        ("C-09", "mlx5_2", "4", 48),
        ("C-37", "mlx5_4", 1, "16-31"),
        ("C-38", None, 1, 2),
    }
    mtu = next(f for f in _tuning("drift-mtu-ecn-cnp-irq-hugepages") if f.code == "HOST-MTU")
    assert (mtu.subject.switch, mtu.subject.switch_port) == ("leaf-r1", "Ethernet0")
    assert "role net_mtu" in (mtu.remediation or "")


def test_running_irqbalance_fails_only_when_the_design_stops_it(tmp_path: Path) -> None:
    ban = _tuning("drift-mtu-ecn-cnp-irq-hugepages")
    assert not [f for f in ban if f.code == "C-37" and f.subject.hca is None]
    stop = _tuning("drift-mtu-ecn-cnp-irq-hugepages", "stop", tmp_path)
    (node_level,) = [f for f in stop if f.code == "C-37" and f.subject.hca is None]
    assert node_level.status is Status.FAIL and "irqbalance is running" in node_level.message


def test_what_cannot_be_read_is_not_a_pass() -> None:
    findings = _tuning("inbox-driver-no-ecn-missing-netdev")
    assert codes(findings, Status.FAIL) == ["HOST-NETDEV"]
    assert [f.subject.hca for f in findings if f.code == "HOST-NETDEV"] == ["mlx5_0"]
    assert set(codes(findings, Status.WARN)) == {"HOST-ECN-000"}
    assert len(codes(findings, Status.WARN)) == 7  # every other interface: DCQCN unverified
    assert "HOST-OK" not in codes(findings, Status.OK)


def test_jumbo_ping_says_which_mtu_stopped_it() -> None:
    from rackops.checks.tuning import check_jumbo_ping

    subj = Subject(node="node02", hca="mlx5_1")
    (local,) = check_jumbo_ping(fixture("ping", "local-mtu-1500"), 9000, subject=subj)  # type: ignore[arg-type]
    assert local.status is Status.FAIL and local.observed == 1500 and "mtu=1500" in local.message
    (hop,) = check_jumbo_ping(fixture("ping", "dropped-by-a-hop"), 9000, subject=subj)  # type: ignore[arg-type]
    assert (
        hop.status is Status.FAIL
        and "0/3 answered" in hop.message
        and "C-22" in (hop.remediation or "")
    )
