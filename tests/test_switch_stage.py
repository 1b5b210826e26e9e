"""The switch reads of a run, on the replayed two-node rack (tests/test_runner.py) with its
leaves answering through the lab's NOS simulator: read before, read after, judged per cabled
port; a resumed run whose pair tests were done before says its deltas miss their traffic."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from test_runner import recording, runner

from rackops.lab.hwsim import nos
from rackops.validate.executor import CommandResult, Target
from rackops.validate.replay import ReplayExecutor
from rackops.validate.rundir import RunDir


class NosSwitches:
    """Each leaf of the rack as its NOS prints it: counters per design port that grow by
    ``step`` at every read; ``crc`` adds errors to one (switch, port)."""

    def __init__(self, cluster: Any, crc: tuple[str, str] | None = None) -> None:
        self.cluster = cluster
        self.crc = crc
        self.reads: dict[str, int] = {}

    def run_cli(self, t: Target, command: str, timeout: float) -> CommandResult:
        sw = self.cluster.switch(t.name)
        n = self.reads[command + t.name] = self.reads.get(command + t.name, -1) + 1
        ports = {}
        for p in sw.ports:
            pkts = 1000 + n * 10**6
            c = dict(rx_pkts=pkts, tx_pkts=pkts, rx_bytes=4096 * pkts, tx_bytes=4096 * pkts,
                     crc_errors=0, symbol_errors=0, fec_corrected=0, rx_discards=0,
                     xmit_discards=0, pause_rx=0, pause_tx=0, ecn_marked=0)  # fmt: skip
            if self.crc == (sw.name, p):
                c["crc_errors"] = 7 * n
            ports[p] = c
        out = {
            "show interfaces counters": lambda: nos.sonic_interfaces(ports),
            "show interfaces counters fec-stats": lambda: nos.sonic_fec(ports),
            "show pfc counters": lambda: nos.sonic_pfc(ports, 3),
            "show queue wredcounters": lambda: nos.sonic_wred(ports, 3),
        }
        if sw.os == "eos":
            what = {"errors": "errors", "discards": "discards", "priority-flow-control": "pfc"}
            key = next((v for k, v in what.items() if k in command), "ecn")
            text = nos.eos_json(ports, key, 3)
        elif sw.os == "cumulus":
            port = command.split()[3]
            text = (
                nos.nvue_roce(ports[port]) if "roce" in command else nos.nvue_counters(ports[port])
            )
        else:
            text = out[command]()
        return CommandResult(t.name, (command,), 0, text, "", 0.01)


def _run(tmp: Path, switches: NosSwitches, done: set[str]) -> list[dict[str, Any]]:
    r, _plan = runner(tmp, ReplayExecutor(recording(), delay_s=0.0))
    r.switch_targets = {s.name: Target(s.name, "127.0.0.1", 22) for s in r.cluster.switches}
    r.switch_executor = switches
    r.switches_read("before", done)
    time.sleep(0.05)
    r.switches_read("after", done)
    return RunDir(tmp).records()


def test_every_cabled_switch_port_is_judged_and_a_growing_error_is_named(tmp_path: Path) -> None:
    r, _ = runner(tmp_path / "x", ReplayExecutor(recording(), delay_s=0.0))
    records = _run(tmp_path / "run", NosSwitches(r.cluster, crc=("leaf-r2", "Ethernet8")), set())
    judged = {rec["id"]: rec for rec in records if rec["id"].count("/") == 1}
    assert set(judged) == {f"switch/leaf-r{i}" for i in range(8)}  # SONiC, NVUE and EOS
    fails = [f for rec in judged.values() for f in rec["findings"] if f["status"] == "FAIL"]
    (fail,) = fails
    assert fail["subject"]["switch"] == "leaf-r2" and fail["subject"]["node"] == "node02"
    assert fail["subject"]["hca"] == "mlx5_2" and "RX_ERR +7" in fail["message"]
    assert not any(rec["id"] == "switch/resumed" for rec in records)
    # each command's output is kept, before and after
    assert any(rec["id"] == "switch/leaf-r0/before/interfaces" for rec in records)
    assert any(rec["id"] == "switch/leaf-r7/after/errors" for rec in records)


def test_a_resumed_run_says_its_switch_deltas_miss_the_earlier_pair_tests(tmp_path: Path) -> None:
    r, _ = runner(tmp_path / "x", ReplayExecutor(recording(), delay_s=0.0))
    done = {"pair/node01-node02/rail0", "pair/node01-node02/rail1"}
    records = _run(tmp_path / "run", NosSwitches(r.cluster), done)
    (warn,) = [rec for rec in records if rec["id"] == "switch/resumed"]
    (f,) = warn["findings"]
    assert f["status"] == "WARN" and f["code"] == "SWP-005" and "2 were done" in f["message"]
