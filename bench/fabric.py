"""What reading the switches costs: the run's wall time and controller CPU with and without
the switch reads, at the lab's largest fabric (4 racks: 32 leaves, 8 spines), and the
controller's cost to parse and judge a switch's read as fabrics grow.

    sudo .venv/bin/python bench/fabric.py --lab            # the lab part (minutes)
    sudo .venv/bin/python bench/fabric.py --ib-sweep       # the InfiniBand sweep (minutes)
    .venv/bin/python bench/fabric.py --switches 40 400 2000  # the controller part
    .venv/bin/python bench/fabric.py --ib-switches 40 400 2000  # the sweep's controller part

InfiniBand part: the same 8 nodes in 4 racks as an NDR lab (``hardware.link_layer:
InfiniBand``: 32 Quantum leaves and 8 spines, no SSH to them); one ``rackops validate``
(suite ``quick``), whose two sweeps from one node (``ibdiagnet``, its two files, and one
``perfquery -x -l`` per switch found) are timed from the run's own records (each command's
duration) against the run's wall time. ibdiagnet itself is hwsim's here: on a real fabric its
own time (MADs to every port) dominates and grows with the fabric; what this measures is the
run's part — the round trips to the sweep node and the controller's parse and judgement.

Lab part: one podman lab, ``--nodes 8 --racks 4`` (two nodes per rack: 32 leaves and 8
spines, each an SSH target), its stand-in hardware and host tuning installed. Two
``rackops validate`` (suite ``quick``: no load tests, so the reads are most of the run), one
as the lab inventory is (every switch read before and after the pair rounds, 2 x 40 reads of
4 commands, NVUE per port) and one with the switches made render-only
(``ansible_connection: local``, nothing read); the controller's CPU is the user+system time
of the validate process.

Controller part: N switches of 64 ports (a third each SONiC, NVUE, EOS), their outputs
printed by the lab's NOS simulator before and after, then `rackops switch-counters`'s
reading and judging (parse, samples, the host ports' rules) timed per switch.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
BIN = ROOT / ".venv" / "bin"
sys.path.insert(0, str(ROOT / "bench"))


def _validate(inv: Path, run: Path) -> tuple[float, float, int]:
    """Wall seconds, controller CPU seconds, exit code of one validate."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.monotonic()
    proc = subprocess.run(
        [str(BIN / "rackops"), "validate", "-i", str(inv), "--suite", "quick",
         "--accept-new-host-keys", "--run-dir", str(run)],
        cwd=ROOT, capture_output=True, text=True, timeout=3600, check=False,
    )  # fmt: skip
    wall = time.monotonic() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode not in (0, 1):
        print(proc.stderr[-3000:], file=sys.stderr)
    return wall, cpu, proc.returncode


def _no_switch_reads(inv: Path, dest: Path) -> Path:
    """A copy of the lab inventory whose switches are render-only (nothing read)."""
    shutil.copytree(inv, dest)
    hosts = dest / "hosts.yml"
    data = yaml.safe_load(hosts.read_text())
    for group in data["all"]["children"]["switches"]["children"].values():
        group.setdefault("vars", {})["ansible_connection"] = "local"
    hosts.write_text(yaml.safe_dump(data))
    return dest


def lab_part() -> dict[str, object]:
    from _lab import playbook

    from rackops import lab

    tmp = Path(tempfile.mkdtemp(prefix="bench-fabric-"))
    inv = tmp / "inv"
    t = time.monotonic()
    state = lab.up(nodes=8, racks=4, inventory=str(inv))
    up_s = time.monotonic() - t
    try:
        assert playbook(inv, "lab-hardware.yml")
        assert playbook(
            inv, "provision.yml", "--tags", "net_mtu,hugepages,irq_affinity,roce_host_qos"
        )
        without = _validate(_no_switch_reads(inv, tmp / "inv-noread"), tmp / "run-noread")
        with_reads = _validate(inv, tmp / "run")
        report = json.loads((tmp / "run" / "report.json").read_text())
        return {
            "switches": len(state.switch_ssh),
            "switch_ports": len(report["switch_ports"]),
            "isls": len(report["isls"]),
            "lab_up_s": round(up_s, 1),
            "without_reads": {"wall_s": round(without[0], 1), "cpu_s": round(without[1], 1),
                              "rc": without[2]},
            "with_reads": {"wall_s": round(with_reads[0], 1), "cpu_s": round(with_reads[1], 1),
                           "rc": with_reads[2]},
            "wall_ratio": round(with_reads[0] / without[0], 2),
            "cpu_ratio": round(with_reads[1] / without[1], 2),
        }  # fmt: skip
    finally:
        lab.down()


def ib_sweep_part() -> dict[str, object]:
    from _lab import playbook

    from rackops import lab

    tmp = Path(tempfile.mkdtemp(prefix="bench-ibsweep-"))
    inv, scenario = tmp / "inv", tmp / "scenario.yml"
    scenario.write_text("hardware: {link_layer: InfiniBand}\n")
    lab.up(nodes=8, racks=4, inventory=str(inv), scenario=str(scenario))
    try:
        assert playbook(inv, "lab-hardware.yml")
        assert playbook(inv, "provision.yml", "--tags", "net_mtu,hugepages,irq_affinity")
        wall, cpu, rc = _validate(inv, tmp / "run")
        records = [json.loads(x) for x in (tmp / "run" / "results.jsonl").read_text().splitlines()]
        sweep = [r for r in records if r["id"].startswith("fabric/sweep/")]
        sweep_s = sum(r.get("duration_s") or 0 for r in sweep)
        report = json.loads((tmp / "run" / "report.json").read_text())
        return {
            "switches": len({r["id"].split("/")[4] for r in sweep if "/perfquery/" in r["id"]}),
            "switch_ports": len(report["switch_ports"]), "isls": len(report["isls"]),
            "sweep_commands": len(sweep), "sweep_commands_s": round(sweep_s, 1),
            "run_wall_s": round(wall, 1), "run_cpu_s": round(cpu, 1), "rc": rc,
            "sweep_share_of_wall": round(sweep_s / wall, 3),
        }  # fmt: skip
    finally:
        lab.down()


def ib_controller_part(counts: list[int]) -> list[dict[str, object]]:
    """The sweep's controller side for N switches (3/4 leaves, 1/4 spines, every leaf 32
    uplinks): parse the net_dump, two ``perfquery -x -l`` per switch (64 ports), judge every
    port's deltas; the net_dump and blocks printed by the lab's hwsim."""
    from rackops.checks.phy import PortReport, judge_counters, sample_ib
    from rackops.findings import Subject
    from rackops.lab.hwsim import ibdiag
    from rackops.lab.hwsim.phy import _block
    from rackops.profiles import PhyThresholds
    from rackops.tools import parse

    out = []
    for n in counts:
        spines = max(1, n // 4)
        leaves = n - spines
        isls = [
            {"leaf": f"leaf{i}", "port": str(33 + u), "spine": f"spine{(i * 32 + u) % spines}",
             "spine_port": str(1 + (i * 32 + u) // spines)}
            for i in range(leaves) for u in range(32)
        ]  # fmt: skip
        scenario = {"hardware": {"link_layer": "InfiniBand"}, "fabric": {"isls": isls}}
        dump_text = ibdiag.net_dump(scenario, "ibdiagnet")
        texts = {}
        for phase, grown in (("before", 0), ("after", 1)):
            c = dict(tx_bytes=10**9, rx_bytes=10**9, tx_pkts=10**6 + grown * 10**9,
                     rx_pkts=10**6 + grown * 10**9, symbol_errors=0, link_recovery=0,
                     link_downed=0, rcv_errors=0, xmit_discards=0, xmit_wait=grown)  # fmt: skip
            texts[phase] = "".join(_block(5, p, c, True) for p in range(1, 65))
        t = time.process_time()
        dump = parse("ibdiagnet", dump_text)
        findings = 0
        phy = PhyThresholds()
        for sw in range(n):  # a run reads every switch twice and judges each port
            b, a = parse("perfquery", texts["before"]), parse("perfquery", texts["after"])
            for pb, pa in zip(b.ports, a.ports, strict=True):
                subj = Subject(switch=f"sw{sw}", switch_port=str(pb.port))
                findings += len(judge_counters(sample_ib(pb), sample_ib(pa), subj, phy, 600.0,
                                               PortReport(), 400.0))  # fmt: skip
        cpu = time.process_time() - t
        out.append({"switches": n, "net_dump_rows": len(dump.ports), "ports": 64 * n,
                    "findings": findings, "cpu_s": round(cpu, 2),
                    "ms_per_switch": round(1000 * cpu / n, 1)})  # fmt: skip
    return out


def controller_part(counts: list[int]) -> list[dict[str, object]]:
    from rackops.checks.phy import PortReport, judge_counters
    from rackops.findings import Subject
    from rackops.inventory.model import Switch
    from rackops.lab.hwsim import nos
    from rackops.profiles import PhyThresholds
    from rackops.validate.switches import read_switch

    out = []
    for n in counts:
        tmp = Path(tempfile.mkdtemp(prefix="bench-swc-"))
        switches = []
        for i in range(n):
            os_name = ("sonic", "cumulus", "eos")[i % 3]
            ports = {
                "sonic": [f"Ethernet{8 * k}" for k in range(64)],
                "cumulus": [f"swp{k + 1}" for k in range(64)],
                "eos": [f"Ethernet{k + 1}/1" for k in range(64)],
            }[os_name]
            sw = Switch(name=f"sw{i}", address=f"10.0.{i // 250}.{i % 250 + 1}", os=os_name,
                        role="leaf", ports=tuple(ports))  # fmt: skip
            switches.append(sw)
            for phase, grown in (("before", 0), ("after", 1)):
                c = dict(rx_pkts=10**6 + grown * 10**9, tx_pkts=10**6 + grown * 10**9,
                         rx_bytes=10**9, tx_bytes=10**9, crc_errors=0, symbol_errors=0,
                         fec_corrected=5, rx_discards=0, xmit_discards=0, pause_rx=3,
                         pause_tx=3, ecn_marked=grown)  # fmt: skip
                counters = {p: c for p in ports}
                d = tmp / phase / sw.name
                d.mkdir(parents=True)
                if os_name == "sonic":
                    (d / "interfaces.txt").write_text(nos.sonic_interfaces(counters))
                    (d / "fec.txt").write_text(nos.sonic_fec(counters))
                    (d / "pfc.txt").write_text(nos.sonic_pfc(counters, 3))
                    (d / "wred.txt").write_text(nos.sonic_wred(counters, 3))
                elif os_name == "cumulus":
                    for p in ports:
                        (d / f"{p}.counters.txt").write_text(nos.nvue_counters(c))
                        (d / f"{p}.roce.txt").write_text(nos.nvue_roce(c))
                else:
                    for what in ("errors", "discards", "pfc", "ecn"):
                        (d / f"{what}.json").write_text(nos.eos_json(counters, what, 3))
        t = time.process_time()
        findings = 0
        phy = PhyThresholds()
        for sw in switches:  # what a run does per switch: read both, judge every port
            b = read_switch(sw, tmp / "before" / sw.name, 3)
            a = read_switch(sw, tmp / "after" / sw.name, 3)
            assert not b.problems and not a.problems, b.problems + a.problems
            for port in sw.ports:
                subj = Subject(switch=sw.name, switch_port=port)
                found = judge_counters(b.ports[port], a.ports[port], subj, phy, 600.0,
                                       PortReport(), 400.0)  # fmt: skip
                findings += len(found)
        cpu = time.process_time() - t
        out.append({"switches": n, "ports": 64 * n, "findings": findings, "cpu_s": round(cpu, 2),
                    "ms_per_switch": round(1000 * cpu / n, 1)})  # fmt: skip
        shutil.rmtree(tmp)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lab", action="store_true")
    ap.add_argument("--ib-sweep", action="store_true")
    ap.add_argument("--switches", type=int, nargs="*", default=[])
    ap.add_argument("--ib-switches", type=int, nargs="*", default=[])
    args = ap.parse_args()
    result: dict[str, object] = {}
    if args.ib_switches:
        result["ib_controller"] = ib_controller_part(args.ib_switches)
    if args.ib_sweep:
        result["ib_sweep"] = ib_sweep_part()
    if args.switches:
        result["controller"] = controller_part(args.switches)
    if args.lab:
        result["lab"] = lab_part()
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
