"""nvidia-smi: --query-gpu, -q -x, -q -d PERFORMANCE, topo -m, nvlink -s, -pm."""

from __future__ import annotations

import os
import sys
import time

from .node import BUS, SCENARIO, STATE_DIR, emit
from .thermal import (
    GPU_IDLE,
    HW_POWER_BRAKE,
    HW_SLOWDOWN,
    HW_THERMAL,
    SW_POWER_CAP,
    loads,
    reason_counters,
    sensors,
)

# --query-gpu fields read live from the simulated sensors, with the unit the header shows
_LIVE_UNITS = {
    "utilization.gpu": "%",
    "clocks.sm": "MHz",
    "clocks.current.sm": "MHz",
    "clocks.mem": "MHz",
    "clocks.current.memory": "MHz",
    "power.draw": "W",
    "power.limit": "W",
}
# the header names the canonical field, whichever alias was asked for: a real 580 driver
# asked for clocks.sm,clocks.mem prints "clocks.current.sm [MHz], clocks.current.memory
# [MHz]" (captures/h200-580/query-gpu-lms250.csv)
_CANONICAL = {"clocks.sm": "clocks.current.sm", "clocks.mem": "clocks.current.memory"}
# topo -m underlines its header line, also when stdout is not a terminal (seen on 580.159.04
# and 590.48-610.57 captures: captures/h200-580/nvidia-smi-topo-m, nvidia_gpu_exporter)
UNDERLINE, RESET = "\x1b[4m", "\x1b[0m"


def _driver_major(node):
    head = str(node.hw.get("driver", "0")).split(".")[0]
    return int(head) if head.isdigit() else 0


def _live_fields(node, g, now):
    s = sensors(node, g, now)
    mask = "0x%016x" % s["reasons"]
    return {
        "timestamp": time.strftime("%Y/%m/%d %H:%M:%S", time.localtime(now))
        + ".%03d" % int((now % 1) * 1000),
        "utilization.gpu": "%d %%" % s["util"],
        "clocks.sm": "%d MHz" % s["sm"],
        "clocks.current.sm": "%d MHz" % s["sm"],
        "clocks.mem": "%d MHz" % s["mem"],
        "clocks.current.memory": "%d MHz" % s["mem"],
        "temperature.gpu": str(s["temp"]),
        "temperature.memory": str(s["mem_temp"]),
        "power.draw": "%.2f W" % s["power"],
        "power.limit": "%.2f W" % s["limit"],
        "clocks_event_reasons.active": mask,
        "clocks_throttle_reasons.active": mask,
    }


def _loop_ms(args):
    """-lms N / --loop-ms=N (milliseconds), -l N / --loop=N (seconds); None: once."""
    for i, a in enumerate(args):
        for flag, scale in (("-lms", 1), ("--loop-ms", 1), ("-l", 1000), ("--loop", 1000)):
            if a == flag and i + 1 < len(args):
                return int(args[i + 1]) * scale
            if a.startswith(flag + "="):
                return int(a.split("=", 1)[1]) * scale
    return None


def _gpu_fields(node, g):
    pending = bool(node.fault("remap_pending", gpu=g))
    ecc = node.fault("ecc_uncorrectable", gpu=g)
    pm = (
        "Enabled"
        if os.path.exists(os.path.join(STATE_DIR, "persistence"))
        or not node.fault("persistence_off")
        else "Disabled"
    )
    f = node.fault("pcie_downtrained", gpu=g)
    width = 16 if not f or f.get("pcie_width") is None else int(f["pcie_width"])
    vb = node.fault("vbios", gpu=g)
    pl = node.fault("power_limit", gpu=g)
    return {
        "vbios": vb.get("version", "96.00.74.00.0D")
        if vb
        else node.hw.get("vbios", "96.00.74.00.1C"),
        "power_limit": float(pl.get("watts", 500)) if pl else 700.0,
        "pcie.link.width.current_int": width,
        "index": str(g),
        "name": node.hw["gpu_model"],
        "uuid": "GPU-%08x-4c52-8e1%d-5d0a-%012x"
        % (0x7C1B0000 + node.index, g % 10, node.index * 100 + g),
        "pci.bus_id": "00000000:%s:00.0" % BUS[g % 16],
        "gpu_bus_id": "00000000:%s:00.0" % BUS[g % 16],
        "driver_version": node.hw["driver"],
        "persistence_mode": pm,
        "pcie.link.gen.current": "1",
        "pcie.link.gen.max": "5",
        "pcie.link.gen.gpumax": "5",
        "pcie.link.width.current": str(width),
        "pcie.link.width.max": "16",
        "memory.total": "%d MiB" % node.hw["memory_mib"],
        "temperature.gpu": str(31 + g),
        "ecc.errors.uncorrected.volatile.total": str(ecc.get("count", 1)) if ecc else "0",
        "ecc.errors.uncorrected.aggregate.total": str(ecc.get("count", 1)) if ecc else "0",
        "remapped_rows.correctable": "0",
        "remapped_rows.uncorrectable": "2" if pending else "0",
        "remapped_rows.pending": "Yes" if pending else "No",
        "remapped_rows.failure": "No",
        "serial": "16523210%04d%02d" % (node.index, g),
    }


def _smi_apps(node, gpus, args):
    """--query-compute-apps: none, unless the scenario says so"""
    apps = next(a for a in args if a.startswith("--query-compute-apps="))
    fmt = next((a.split("=", 1)[1] for a in args if a.startswith("--format=")), "csv")
    fields = apps.split("=", 1)[1].split(",")
    out = "" if "noheader" in fmt else ", ".join(fields) + "\n"
    for f in node.faults_of("gpu_processes"):
        out += ", ".join(str(f.get("pid", 4242)) if x == "pid" else "python" for x in fields) + "\n"
    emit(node, "nvidia-smi", out)
    return 0


def _smi_query(node, gpus, args):
    """--query-gpu / --query-remapped-rows as CSV"""
    q = next(a for a in args if a.startswith(("--query-gpu=", "--query-remapped-rows=")))
    fields = q.split("=", 1)[1].split(",")
    fmt = next((a.split("=", 1)[1] for a in args if a.startswith("--format=")), "csv")
    units = {"memory.total": " [MiB]"}
    units.update({f: " [%s]" % u for f, u in _LIVE_UNITS.items()})
    out = ""
    if "noheader" not in fmt:
        out += ", ".join(_CANONICAL.get(f, f) + (units.get(f, "")) for f in fields) + "\n"
    loop = _loop_ms(args)
    while True:
        now = time.time()
        for g in gpus:
            vals = _gpu_fields(node, g)
            vals.update(_live_fields(node, g, now))
            row = []
            for f in fields:
                if f not in vals:
                    sys.stderr.write('Field "%s" is not a valid field to query.\n' % f)
                    return 2
                v = vals[f]
                if "nounits" in fmt:
                    v = v.split(" ")[0] if v.endswith((" MiB", " MHz", " W", " %")) else v
                row.append(v)
            out += ", ".join(row) + "\n"
        emit(node, "nvidia-smi", out)
        if loop is None:
            return 0
        out = ""
        time.sleep(max(0.0, loop / 1000.0 - (time.time() - now)))


def _smi_persistence(node, gpus, args):
    """-pm 1: persistence mode on"""
    os.makedirs(STATE_DIR, exist_ok=True)
    open(os.path.join(STATE_DIR, "persistence"), "w").close()
    for g in gpus:
        sys.stdout.write("Enabled persistence mode for GPU 00000000:%s:00.0.\n" % BUS[g % 16])
    return 0


ZERO_UUID = "00000000-0000-0000-0000-000000000000"
HEALTH = (
    "summary",
    "bandwidth",
    "route_recovery_in_progress",
    "route_unhealthy",
    "access_timeout_recovery",
    "incorrect_configuration",
)


def _on_gpu(node, kind, g):
    """A fault on GPU g: one naming it, or one naming no GPU (every GPU of the tray)."""
    return any(f.get("gpu") is None or int(f["gpu"]) == g for f in node.faults_of(kind))


def fabric_of(node, g):
    """GPU ``g``'s fabric (state, status, clique, cluster UUID), as its driver reports it:
    an HGX GPU clique 0 and a zero UUID; a tray's GPU its partition's, unless a fault moved
    or refused it; In Progress (clique, UUID None) while the fabric is not configured."""
    if node.faults_of("fabric_manager_down"):
        return "In Progress", None, None, None
    if not node.hw.get("nvlink_domain"):
        return "Completed", "Success", 0, ZERO_UUID
    clique = node.hw.get("fabric_clique", 2)
    moved = node.fault("fabric_clique", gpu=g) or next(
        (f for f in node.faults_of("fabric_clique") if f.get("gpu") is None), None
    )
    if moved is not None:
        clique = moved.get("clique", clique)
    if _on_gpu(node, "fabric_insufficient", g):  # Azure/azhpc-images#506
        return "Completed", "Insufficient Resources", 0, ZERO_UUID
    return (
        "Completed",
        "Success",
        clique,
        node.hw.get("fabric_cluster", "00000001-0000-0000-0000-000000000001"),
    )


def _fabric_xml(node, g):
    """<fabric> as R580 prints it. An HGX node (580.105.08 H100, tests/fixtures/nvidia-smi-xml/
    h100x8-580-real.txt): clique 0, a zero cluster UUID, every health field N/A. A tray of a
    multi-node NVLink domain (580.173.02 GB200, gb200x4-580-real.txt): its partition's clique
    and cluster UUID, health Healthy/Full, the flags False, partition_assigned N/A. A GPU
    the fabric has not configured (fabric_manager_down; NMX on an NVL72) prints In Progress
    and N/A everywhere (gpu-operator#2511, 580.159.04)."""
    tray = node.hw.get("nvlink_domain")
    state, status, clique, cluster = fabric_of(node, g)
    if state != "Completed":
        values = [state, "N/A", "N/A", "N/A"] + ["N/A"] * len(HEALTH)
        extra = ["N/A"] if tray else []
    elif not tray:
        values = [state, status, str(clique), cluster] + ["N/A"] * len(HEALTH)
        extra = []
    else:
        summary = "Unhealthy" if _on_gpu(node, "fabric_unhealthy", g) else "Healthy"
        values = [state, status, str(clique), cluster]
        values += [summary, "Full", "False", "False", "False", "N/A"]
        extra = ["N/A"]
    tags = ["state", "status", "cliqueId", "clusterUuid"]  # python 3.9: no zip(strict=)
    out = "\t\t<fabric>\n" + "".join(
        "\t\t\t<%s>%s</%s>\n" % (tags[i], values[i], tags[i]) for i in range(4)
    )
    out += "\t\t\t<health>\n" + "".join(
        "\t\t\t\t<%s>%s</%s>\n" % (t, values[4 + i], t) for i, t in enumerate(HEALTH)
    )
    out += "".join("\t\t\t\t<partition_assigned>%s</partition_assigned>\n" % v for v in extra)
    return out + "\t\t\t</health>\n\t\t</fabric>\n"


def _smi_xml(node, gpus, args):
    """-q -x: the XML log"""
    out = (
        '<?xml version="1.0" ?>\n<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">\n<nvidia_smi_log>\n'
        "\t<timestamp>%s</timestamp>\n\t<driver_version>%s</driver_version>\n\t<cuda_version>%s</cuda_version>\n"
        "\t<attached_gpus>%d</attached_gpus>\n"
        % (time.ctime(), node.hw["driver"], node.hw["cuda"], len(gpus))
    )
    for g in gpus:
        v = _gpu_fields(node, g)
        ecc = v["ecc.errors.uncorrected.volatile.total"]
        out += (
            '\t<gpu id="%s">\n\t\t<product_name>%s</product_name>\n\t\t<persistence_mode>%s</persistence_mode>\n'
            "\t\t<mig_mode>\n\t\t\t<current_mig>Disabled</current_mig>\n\t\t\t<pending_mig>Disabled</pending_mig>\n\t\t</mig_mode>\n"
            "\t\t<serial>%s</serial>\n\t\t<uuid>%s</uuid>\n\t\t<minor_number>%d</minor_number>\n"
            "\t\t<vbios_version>%s</vbios_version>\n"
            "%s"
            "\t\t<pci>\n\t\t\t<pci_gpu_link_info>\n\t\t\t\t<pcie_gen>\n\t\t\t\t\t<max_link_gen>5</max_link_gen>\n"
            "\t\t\t\t\t<current_link_gen>1</current_link_gen>\n\t\t\t\t</pcie_gen>\n\t\t\t\t<link_widths>\n"
            "\t\t\t\t\t<max_link_width>16x</max_link_width>\n\t\t\t\t\t<current_link_width>%dx</current_link_width>\n"
            "\t\t\t\t</link_widths>\n\t\t\t</pci_gpu_link_info>\n\t\t</pci>\n"
            "\t\t<fb_memory_usage>\n\t\t\t<total>%s</total>\n\t\t</fb_memory_usage>\n"
            "\t\t<ecc_mode>\n\t\t\t<current_ecc>Enabled</current_ecc>\n\t\t</ecc_mode>\n"
            "\t\t<ecc_errors>\n\t\t\t<volatile>\n\t\t\t\t<dram_uncorrectable>%s</dram_uncorrectable>\n\t\t\t</volatile>\n"
            "\t\t\t<aggregate>\n\t\t\t\t<dram_uncorrectable>%s</dram_uncorrectable>\n\t\t\t</aggregate>\n\t\t</ecc_errors>\n"
            "\t\t<remapped_rows>\n\t\t\t<remapped_row_corr>0</remapped_row_corr>\n\t\t\t<remapped_row_unc>%s</remapped_row_unc>\n"
            "\t\t\t<remapped_row_pending>%s</remapped_row_pending>\n\t\t\t<remapped_row_failure>No</remapped_row_failure>\n"
            "\t\t</remapped_rows>\n\t\t<compute_mode>Default</compute_mode>\n"
            "\t\t<temperature>\n\t\t\t<gpu_temp>%s C</gpu_temp>\n\t\t</temperature>\n"
            "\t\t<gpu_power_readings>\n\t\t\t<power_state>P0</power_state>\n"
            "\t\t\t<current_power_limit>%.2f W</current_power_limit>\n"
            "\t\t\t<requested_power_limit>%.2f W</requested_power_limit>\n"
            "\t\t\t<default_power_limit>700.00 W</default_power_limit>\n"
            "\t\t\t<min_power_limit>200.00 W</min_power_limit>\n"
            "\t\t\t<max_power_limit>700.00 W</max_power_limit>\n\t\t</gpu_power_readings>\n"
            "\t\t<applications_clocks>\n\t\t\t<graphics_clock>1755 MHz</graphics_clock>\n"
            "\t\t\t<mem_clock>2619 MHz</mem_clock>\n\t\t</applications_clocks>\n\t</gpu>\n"
            % (
                v["pci.bus_id"],
                v["name"],
                v["persistence_mode"],
                v["serial"],
                v["uuid"],
                g,
                v["vbios"],
                _fabric_xml(node, g),
                v["pcie.link.width.current_int"],
                v["memory.total"],
                ecc,
                ecc,
                v["remapped_rows.uncorrectable"],
                v["remapped_rows.pending"],
                v["temperature.gpu"],
                v["power_limit"],
                v["power_limit"],
            )
        )
    emit(node, "nvidia-smi", out + "</nvidia_smi_log>\n")
    return 0


def _smi_topo(node, gpus, args):
    """topo -m: the PCIe/NVLink matrix"""
    cols = ["GPU%d" % g for g in gpus] + ["NIC%d" % i for i in range(node.hw["hcas"])]
    head = "\t".join(cols) + "\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID"
    out = "\t" + (UNDERLINE + head + RESET if _driver_major(node) >= 580 else head) + "\n"
    for r in cols:
        cells = []
        for c in cols:
            if r == c:
                cells.append(" X ")
            elif r.startswith("GPU") and c.startswith("GPU") and node.hw["nvlink_links"]:
                cells.append("NV%d" % node.hw["nvlink_links"])
            else:
                a, b = int(r[3:]), int(c[3:])
                cells.append(
                    "PIX" if a == b and r[:3] != c[:3] else ("NODE" if a // 4 == b // 4 else "SYS")
                )
        extra = (
            ("\t0-55,112-167\t0\t\tN/A" if int(r[3:]) < 4 else "\t56-111,168-223\t1\t\tN/A")
            if r.startswith("GPU")
            else ""
        )
        out += r + "\t" + "\t".join(cells) + extra + "\n"
    out += "\nLegend:\n\n  X    = Self\n  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)\n"
    out += "  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node\n"
    out += "  PIX  = Connection traversing at most a single PCIe bridge\n  NV#  = Connection traversing a bonded set of # NVLinks\n\nNIC Legend:\n\n"
    out += "".join("  NIC%d: mlx5_%d\n" % (i, i) for i in range(node.hw["hcas"]))
    emit(node, "nvidia-smi", out)
    return 0


def _smi_nvlink(node, gpus, args):
    """nvlink -s: every link's speed; nothing at all, exit 0, where the GPUs have no NVLink
    (captures/h200-580/nvidia-smi-nvlink-s: one H200 passed through alone)"""
    out = ""
    if not node.hw["nvlink_links"]:
        emit(node, "nvidia-smi", out)
        return 0
    for g in gpus:
        out += "GPU %d: %s (UUID: %s)\n" % (
            g,
            node.hw["gpu_model"],
            _gpu_fields(node, g)["uuid"],
        )
        down = {int(f["link"]) for f in node.faults_of("nvlink_down") if int(f.get("gpu", -1)) == g}
        for link in range(node.hw["nvlink_links"]):
            out += "\t Link %d: %s\n" % (
                link,
                "<inactive>" if link in down else "%.3f GB/s" % node.hw["nvlink_link_gbs"],
            )
    emit(node, "nvidia-smi", out)
    return 0


def _smi_summary(node, gpus, args):
    """the default table"""
    out = (
        "%s\n+-----------------------------------------------------------------------------------------+\n"
        % time.ctime()
    )
    out += "| NVIDIA-SMI %s             Driver Version: %s     CUDA Version: %s     |\n" % (
        node.hw["driver"],
        node.hw["driver"],
        node.hw["cuda"],
    )
    out += "+-----------------------------------------------------------------------------------------+\n"
    for g in gpus:
        out += "|   %d  %-30s On  |   00000000:%s:00.0 Off |                    0 |\n" % (
            g,
            node.hw["gpu_model"],
            BUS[g % 16],
        )
    emit(node, "nvidia-smi", out)
    return 0


# -q -d PERFORMANCE as 580.159.04 prints it (captures/h200-580/nvidia-smi-q-d-perf-*.out):
# a 55-wide key column, the reasons tree, then the R535+ counters block
_REASON_ROWS = (
    (8, "Idle", GPU_IDLE),
    (8, "Applications Clocks Setting", 0x2),
    (8, "SW Power Cap", SW_POWER_CAP),
    (8, "HW Slowdown", HW_SLOWDOWN),
    (12, "HW Thermal Slowdown", HW_THERMAL),
    (12, "HW Power Brake Slowdown", HW_POWER_BRAKE),
    (8, "Sync Boost", 0x10),
    (8, "SW Thermal Slowdown", 0x20),
    (8, "Display Clock Setting", 0x100),
)


def _kv(indent, key, value):
    return "%s%s: %s\n" % (" " * indent, key.ljust(55 - indent), value)


def _smi_perf(node, gpus, args):
    """-q -d PERFORMANCE: performance state, clock event reasons and their counters"""
    now = time.time()
    out = "\n==============NVSMI LOG==============\n\n"
    out += _kv(0, "Timestamp", time.strftime("%a %b %d %H:%M:%S %Y", time.localtime(now)))
    out += _kv(0, "Driver Version", node.hw["driver"]) + _kv(0, "CUDA Version", node.hw["cuda"])
    out += "\n" + _kv(0, "Attached GPUs", len(gpus))
    for g in gpus:
        mask = sensors(node, g, now)["reasons"]
        out += "GPU 00000000:%s:00.0\n" % BUS[g % 16]
        out += _kv(4, "Performance State", "P0") + "    Clocks Event Reasons\n"
        for indent, label, bit in _REASON_ROWS:
            out += _kv(indent, label, "Active" if mask & bit else "Not Active")
        out += "    Clocks Event Reasons Counters\n"
        for label, us in reason_counters(node, g, now).items():
            out += _kv(8, label, "%d us" % us)
        out += _kv(4, "Sparse Operation Mode", "Disabled")
    emit(node, "nvidia-smi", out + "\n")
    return 0


def nvidia_smi(node, args):
    gpus = node.gpus()
    if any(a.startswith("--query-compute-apps=") for a in args):
        return _smi_apps(node, gpus, args)
    if any(a.startswith(("--query-gpu=", "--query-remapped-rows=")) for a in args):
        return _smi_query(node, gpus, args)
    if "-pm" in args:
        return _smi_persistence(node, gpus, args)
    if "-q" in args and "-x" in args:
        return _smi_xml(node, gpus, args)
    if "-q" in args and "-d" in args and "PERFORMANCE" in args[args.index("-d") + 1 :][:1]:
        return _smi_perf(node, gpus, args)
    if args[:2] == ["topo", "-m"]:
        return _smi_topo(node, gpus, args)
    if args[:2] == ["nvlink", "-s"]:
        return _smi_nvlink(node, gpus, args)
    if args[:2] == ["nvlink", "-e"]:
        return _smi_nvlink_errors(node, gpus, args)
    return _smi_summary(node, gpus, args)


NVLINK_COUNTERS = {"replay": "Replay Errors", "recovery": "Recovery Errors", "crc": "CRC Errors"}


def _smi_nvlink_errors(node, gpus, args):
    """nvlink -e: every link's Replay, Recovery and CRC errors as the real H100 capture prints
    them (stas00/ml-engineering; no verbatim NVLink5 block is public, so trays print these
    too). An ``nvlink_errors`` fault adds its ``count`` to its link's ``counter`` once its GPU
    was loaded after the scenario was written: the run's own load grows it."""
    out = ""
    if not node.hw["nvlink_links"]:
        emit(node, "nvidia-smi", out)
        return 0
    try:
        started = os.stat(SCENARIO).st_mtime
    except OSError:
        started = time.time()
    loaded = {g for s, _e, on, _k in loads(node) if s >= started for g in on}
    for g in gpus:
        out += "GPU %d: %s (UUID: %s)\n" % (g, node.hw["gpu_model"], _gpu_fields(node, g)["uuid"])
        for link in range(node.hw["nvlink_links"]):
            counts = dict.fromkeys(NVLINK_COUNTERS.values(), 0)
            for f in node.faults_of("nvlink_errors"):
                if int(f["gpu"]) == g and int(f["link"]) == link and g in loaded:
                    counts[NVLINK_COUNTERS[f.get("counter") or "replay"]] += int(
                        f.get("count") or 1
                    )
            out += "".join("\t Link %d: %s: %d\n" % (link, k, v) for k, v in counts.items())
    emit(node, "nvidia-smi", out)
    return 0
