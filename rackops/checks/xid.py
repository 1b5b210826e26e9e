"""NVIDIA Xid catalogue: what each Xid means, its likely cause, what to do (data only).

Rows come from NVIDIA's Xid catalogue (https://docs.nvidia.com/deploy/xid-errors/
analyzing-xid-catalog.html, Ampere and newer) as machine-transcribed by gpud from
NVIDIA's ``Xid-Catalog.xlsx`` (``CATALOG`` below, the row's ``source``): description and the
"Resolution Bucket (Immediate / Investigatory Action)" columns. ``cause`` is the most
specific of the possible-cause flags of NVIDIA's older table (r555; gpud's ``xid.go``
transcription, research docs/research/issue-24-xid.md §4.2): hardware, driver, application,
thermal, bus, nvlink or memory; "unknown" where every flag is set or none is.

``hardware`` says whether the Xid blames the GPU, so that it FAILs an acceptance run: true for
ECC/row-remap failures, NVLink errors (an NVLink5 Xid, 144-150, whose body says
``Nonfatal`` is judged a warning in ``checks/gpuload.py``: NVIDIA's decode sheet gives those
units IGNORE or XID_154_EVAL), a GPU off the bus, a micro-controller halt, and the
Xids NVIDIA sends to CONTACT_SUPPORT (109); false where NVIDIA's action is to restart or check
the application (13, 31, 43), to follow another Xid (45, 154), to ignore (63, 92), or to
investigate software (119, 120: GSP firmware/driver). Xid 94 (contained ECC error) is
hardware: the error is in the GPU's memory, containment only spares other applications.

An Xid not in the table (``info(code)``) is cause "unknown" with ``hardware=True``: an Xid
nobody has classified must not let an acceptance run pass silently.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CATALOG", "OLD_TABLE", "XIDS", "XidInfo", "info"]

CATALOG = (
    "https://github.com/leptonai/gpud/blob/b9842de2b11177a482560391805f1691c9ef9607/"
    "components/accelerator/nvidia/xid/catalog_generated.go"
)
OLD_TABLE = (
    "https://github.com/leptonai/gpud/blob/9cc861081dccd247c13be55e0818d6ab5387a5ad/"
    "components/accelerator/nvidia/query/xid/xid.go"
)


@dataclass(frozen=True)
class XidInfo:
    code: int
    meaning: str
    cause: str  # hardware | driver | application | thermal | bus | nvlink | memory | unknown
    action: str
    hardware: bool
    source: str


def _row(code: int, meaning: str, cause: str, action: str, hardware: bool) -> XidInfo:
    return XidInfo(code, meaning, cause, action, hardware, CATALOG)


XIDS: dict[int, XidInfo] = {
    x.code: x
    for x in (
        _row(
            13,
            "Graphics Engine Exception",
            "application",
            "restart the application (RESTART_APP); check the application/CUDA code; "
            "repeated on one GPU only: run DCGM diagnostics (WORKFLOW_XID_13)",
            False,
        ),
        _row(
            31,
            "GPU memory page fault",
            "application",
            "restart the application (RESTART_APP); repeated faults on the same GPU: run DCGM "
            "diagnostics / field diagnostics, on different GPUs: check the application "
            "(WORKFLOW_XID_31)",
            False,
        ),
        _row(
            43,
            "GPU stopped processing",
            "application",
            "none for the GPU (IGNORE); the application's channel was reset: check the "
            "application; contact support if it persists",
            False,
        ),
        _row(
            45,
            "Preemptive cleanup, due to previous errors",
            "driver",
            "follow the Xid that caused it (WORKFLOW_XID_45; 570+ names it: 'caused by "
            "previous Xid N'); alone: restart Fabric Manager (RESTART_FM)",
            False,
        ),
        _row(
            48,
            "Double Bit ECC Error",
            "memory",
            "reset the GPU or reboot the node (WORKFLOW_XID_48); followed by Xid 63/64: drain "
            "the node and reset the GPU",
            True,
        ),
        _row(
            61,
            "Internal micro-controller breakpoint/warning (PMU_BREAKPOINT)",
            "unknown",
            "contact NVIDIA support (CONTACT_SUPPORT)",
            True,
        ),
        _row(
            62,
            "Internal micro-controller halt",
            "hardware",
            "reset the GPU (RESET_GPU); report a GPU issue (CONTACT_SUPPORT)",
            True,
        ),
        _row(
            63,
            "GPU memory remapping event (ECC page retirement / row remapping recorded)",
            "memory",
            "reset the GPU when idle to activate the remap (IGNORE otherwise); check remapped "
            "rows in nvidia-smi -q",
            False,
        ),
        _row(
            64,
            "GPU memory remapping failure",
            "memory",
            "reset the GPU (RESET_GPU) or reboot the node; contact support (CONTACT_SUPPORT)",
            True,
        ),
        _row(
            74,
            "NVLINK Error",
            "nvlink",
            "follow WORKFLOW_NVLINK_ERR (decode the first register: bits 4/5 likely hardware); "
            "reset the GPU, reseat/replace; contact support",
            True,
        ),
        _row(
            79,
            "GPU has fallen off the bus",
            "bus",
            "reboot the node (RESTART_BM); check the PCIe link, reseat the GPU/riser, RMA if "
            "it recurs (CONTACT_SUPPORT)",
            True,
        ),
        _row(
            92,
            "High single-bit ECC error rate",
            "memory",
            "none immediately (IGNORE); watch the ECC counters, contact support if it recurs",
            False,
        ),
        _row(
            94,
            "Contained memory (ECC) error",
            "memory",
            "restart the application (RESTART_APP); the GPU's memory had an uncorrectable "
            "error: reset the GPU to remap, check remapped rows",
            True,
        ),
        _row(
            95,
            "Uncontained memory (ECC) error",
            "memory",
            "reset the GPU (RESET_GPU); with MIG disabled reboot the node immediately",
            True,
        ),
        _row(
            109,
            "Context Switch Timeout Error",
            "unknown",
            "reset the GPU (RESET_GPU); contact support (CONTACT_SUPPORT)",
            True,
        ),
        _row(
            119,
            "GSP RPC Timeout",
            "driver",
            "reset the GPU (RESET_GPU); investigate the driver/GSP firmware (INVESTIGATE_SW)",
            False,
        ),
        _row(
            120,
            "GSP Error",
            "driver",
            "reset the GPU (RESET_GPU); investigate the driver/GSP firmware (INVESTIGATE_SW)",
            False,
        ),
        _row(
            144,
            "NVLINK: SAW Error",
            "nvlink",
            "follow WORKFLOW_NVLINK5_ERR (decode unit, subcode and status words)",
            True,
        ),
        _row(
            145,
            "NVLINK: RLW Error",
            "nvlink",
            "follow WORKFLOW_NVLINK5_ERR (decode unit, subcode and status words)",
            True,
        ),
        _row(
            146,
            "NVLINK: TLW Error",
            "nvlink",
            "follow WORKFLOW_NVLINK5_ERR (decode unit, subcode and status words)",
            True,
        ),
        _row(
            147,
            "NVLINK: TREX Error",
            "nvlink",
            "follow WORKFLOW_NVLINK5_ERR (decode unit, subcode and status words)",
            True,
        ),
        _row(
            148,
            "NVLINK: NVLPW_CTRL Error",
            "nvlink",
            "follow WORKFLOW_NVLINK5_ERR (decode unit, subcode and status words)",
            True,
        ),
        _row(
            149,
            "NVLINK: NETIR Error",
            "nvlink",
            "follow WORKFLOW_NVLINK5_ERR (decode unit, subcode and status words)",
            True,
        ),
        _row(
            150,
            "NVLINK: MSE Error",
            "nvlink",
            "follow WORKFLOW_NVLINK5_ERR (decode unit, subcode and status words)",
            True,
        ),
        _row(
            154,
            "GPU Recovery Action Changed",
            "driver",
            "do what the message names (GPU Reset Required / Node Reboot Required); judge by "
            "the Xid that caused it (informational)",
            False,
        ),
        _row(
            155,
            "NVLINK: SW Defined Error",
            "nvlink",
            "reset the GPU (RESET_GPU); investigate the software that set it (INVESTIGATE_SW_USER)",
            True,
        ),
    )
}


def info(code: int) -> XidInfo:
    """The catalogue row for ``code``; an unknown Xid is cause "unknown", hardware True."""
    known = XIDS.get(code)
    if known is not None:
        return known
    return XidInfo(
        code=code,
        meaning=f"Xid {code}: not in rackops' catalogue",
        cause="unknown",
        action="look it up in NVIDIA's Xid catalogue "
        "(https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html); "
        "treat as a GPU fault until classified",
        hardware=True,
        source="https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html",
    )
