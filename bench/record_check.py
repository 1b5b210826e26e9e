"""What checking a record against the reader's schema before writing it costs
(`RunDir.append` -> `rundir.writable`), against serialising it alone: an 8-port phy record,
the largest a node writes per snapshot.

    .venv/bin/python bench/record_check.py --n 2000
"""

from __future__ import annotations

import argparse
import json
import time

from rackops.validate.records import Record
from rackops.validate.rundir import writable


def phy_record() -> Record:
    ports = {
        f"mlx5_{i}": {
            "delta": {f"c{k}": k for k in range(20)},
            "absolute": {f"c{k}": k * 100 for k in range(20)},
            "raw_ber": 1e-9,
            "effective_ber": 1e-15,
            "rx_power_dbm": [-1.0, -1.2, -0.9, -1.1],
        }
        for i in range(8)
    }
    subject = {"node": "node0001", "port": 1, "switch": "leaf-r0", "switch_port": "Ethernet0"}
    findings = [
        {
            "code": "PHY-OK",
            "status": "OK",
            "subject": {**subject, "hca": f"mlx5_{i}"},
            "message": "no errors grew under load; BER and optics within limits",
        }
        for i in range(8)
    ]
    output = {
        "host": "node0001",
        "argv": ["sh", "-c", "x"],
        "rc": 0,
        "duration_s": 1.2,
        "timed_out": False,
        "error": None,
        "stdout": "raw/a.out",
        "stderr": "raw/a.err",
    }
    meta = {"interval_s": 12.0, "ports": ports}
    return Record("phy/node0001/after", "node", "node0001", "phy", findings, meta, output)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=2000)
    n = ap.parse_args().n
    rec = phy_record()
    t = time.perf_counter()
    for _ in range(n):
        writable(rec)
    checked = (time.perf_counter() - t) / n
    t = time.perf_counter()
    for _ in range(n):
        json.dumps(rec.as_json(), sort_keys=True)
    plain = (time.perf_counter() - t) / n
    ratio = checked / plain
    print(f"checked {checked * 1e6:.0f} us, serialised {plain * 1e6:.0f} us, x{ratio:.1f}")


if __name__ == "__main__":
    main()
