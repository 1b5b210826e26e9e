"""mlxconfig / mstconfig query parser: the real outputs in tests/fixtures/mlxconfig and the
rules of rackops/parsers/mlxconfig.py (columns from the header words, '*' rows, cuts)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rackops.parsers import mlxconfig
from rackops.parsers._common import ParseError, as_jsonable
from rackops.parsers.mlxconfig import Mlxconfig, canonical, parse_mlxconfig

FIXTURES = Path(__file__).parent / "fixtures" / "mlxconfig"
CASES = sorted(FIXTURES.glob("*.txt"))


def _read(name: str) -> str:
    return (FIXTURES / f"{name}.txt").read_text()


def _parse(text: str) -> Mlxconfig:
    return parse_mlxconfig(text)


def test_there_are_fixtures() -> None:
    """Parsed as expected and cited in SOURCES.md: tests/test_parsers.py, for every tool."""
    assert len(CASES) >= 8


# --- a whole query, one "Next Boot" column ---------------------------------------------


def test_full_next_boot_query_is_complete() -> None:
    got = _parse(_read("cx5-vpi-query-full"))
    assert got.complete and got.errors == ()
    (dev,) = got.devices
    assert dev.device == "/dev/mst/mt4119_pciconf0"
    assert dev.device_type == "ConnectX5"
    assert dev.name == "MCX555A-ECA_Ax_Bx"
    assert dev.description is not None and dev.description.startswith("ConnectX-5 VPI adapter")
    assert dev.columns == ("Next Boot",)
    assert len(dev.params) == 143
    assert dev.modified == ()


def test_value_and_next_boot_with_one_column() -> None:
    (dev,) = _parse(_read("cx5-vpi-query-full")).devices
    assert dev.value("LINK_TYPE_P1") == "IB(1)"
    assert dev.next_boot("LINK_TYPE_P1") == "IB(1)"
    assert dev.value("PCI_WR_ORDERING") == "per_mkey(0)"
    assert dev.value("ROCE_CC_PRIO_MASK_P1") == "255"
    assert dev.value("HOST_CHAINING_DESCRIPTORS") == "Array[0..7]"
    assert dev.value("PCI_ATOMIC_MODE") == "PCI_ATOMIC_DISABLED_EXT_ATOMIC_ENABLED(0)"
    assert dev.value("MAX_ACC_OUT_READ") is None  # hidden unless ADVANCED_PCI_SETTINGS=1
    assert dev.next_boot("MAX_ACC_OUT_READ") is None


def test_value_is_current_and_next_boot_is_next_with_three_columns() -> None:
    """Sample 7: the '*' row differs in its Current column only."""
    (dev,) = _parse(_read("cx5-e-query-star-row-window")).devices
    assert dev.columns == ("Default", "Current", "Next Boot")
    assert dev.params["ROCE_CONTROL"] == ("ROCE_ENABLE(2)", "DEVICE_DEFAULT(0)", "ROCE_ENABLE(2)")
    assert dev.value("ROCE_CONTROL") == "DEVICE_DEFAULT(0)"
    assert dev.next_boot("ROCE_CONTROL") == "ROCE_ENABLE(2)"
    assert dev.modified == ("ROCE_CONTROL",)


def test_value_without_current_or_next_boot_is_the_first_column() -> None:
    text = _read("cx5-vpi-query-full").replace(
        "Configurations:                                          Next Boot",
        "Configurations:                                          Default",
    )
    got = _parse(text)
    (dev,) = got.devices
    assert got.complete and dev.columns == ("Default",)
    assert dev.value("LINK_TYPE_P1") == "IB(1)"
    assert dev.next_boot("LINK_TYPE_P1") is None


def test_overflowing_values_are_split_on_whitespace_not_columns() -> None:
    """Sample 7: DEVICE_DEFAULT(0) is wider than its 16-char column and runs into the next."""
    (dev,) = _parse(_read("cx5-e-query-star-row-window")).devices
    assert dev.params["PHY_FEC_OVERRIDE_P1"] == ("DEVICE_DEFAULT(0)",) * 3
    assert dev.params["PCI_WR_ORDERING"] == ("per_mkey(0)",) * 3


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("True(1)", "1"),
        ("False(0)", "0"),
        ("ETH(2)", "2"),
        ("IB(1)", "1"),
        ("per_mkey(0)", "0"),
        ("_256KB(1)", "1"),
        ("PCI_ATOMIC_DISABLED_EXT_ATOMIC_ENABLED(0)", "0"),
        ("255", "255"),
        ("  16384 ", "16384"),
        ("N/A", "n/a"),
        ("Array[0..7]", "array[0..7]"),
        ("True", "true"),
    ],
)
def test_canonical(value: str, expected: str) -> None:
    assert canonical(value) == expected


def test_canonical_makes_enum_and_number_equal() -> None:
    assert canonical("ETH(2)") == canonical("2")
    assert canonical("IB(1)") != canonical("ETH(2)")


# --- layouts -----------------------------------------------------------------------------

_E_QUERY = """
Device #1:
----------

Device type:    ConnectX5
Name:           MCX556A-ECA_Ax
Description:    ConnectX-5 VPI adapter card; EDR IB (100Gb/s) and 100GbE; dual-port QSFP28
Device:         0000:02:00.1

Configurations:                              Default         Current         Next Boot
         PF_NUM_PF_MSIX                      63              63              63
*        ROCE_CONTROL                        ROCE_ENABLE(2)  DEVICE_DEFAULT(0) ROCE_ENABLE(2)
         PCI_WR_ORDERING                     per_mkey(0)     per_mkey(0)     per_mkey(0)
The '*' shows parameters with next value different from default/current value.
"""


def test_star_row_with_its_footer_is_complete() -> None:
    got = _parse(_E_QUERY)
    assert got.complete, got.errors
    (dev,) = got.devices
    assert dev.modified == ("ROCE_CONTROL",)
    assert dev.value("ROCE_CONTROL") == "DEVICE_DEFAULT(0)"


def test_star_row_without_its_footer_is_a_cut() -> None:
    got = _parse(_E_QUERY.replace("The '*' shows parameters", "").rsplit("\n", 2)[0] + "\n")
    assert not got.complete
    assert any("'*'" in e for e in got.errors)


def test_read_only_prefixes() -> None:
    text = _E_QUERY.replace("         PF_NUM_PF_MSIX    ", " RO      PF_NUM_PF_MSIX    ").replace(
        "         PCI_WR_ORDERING  ", "*RO      PCI_WR_ORDERING  "
    )
    text += "\nThe 'RO' shows parameters which are for read only and cannot be changed\n"
    got = _parse(text)
    assert got.complete, got.errors
    (dev,) = got.devices
    assert dev.params["PF_NUM_PF_MSIX"] == ("63", "63", "63")
    assert dev.modified == ("ROCE_CONTROL", "PCI_WR_ORDERING")


def test_several_devices() -> None:
    one = _read("cx5-vpi-query-full")
    two = one.replace("Device #1:", "Device #2:").replace("mt4119_pciconf0", "mt4119_pciconf1")
    two = two.replace("IB(1)", "ETH(2)")
    got = _parse(one + "\n" + two)
    assert got.complete, got.errors
    assert [d.device for d in got.devices] == [
        "/dev/mst/mt4119_pciconf0",
        "/dev/mst/mt4119_pciconf1",
    ]
    assert [d.value("LINK_TYPE_P1") for d in got.devices] == ["IB(1)", "ETH(2)"]


def test_old_layout_fields_before_device_line() -> None:
    """ConnectX-3 (MFT manual): Device type / PCI device first, no Name/Description."""
    text = (
        "Device type:    ConnectX3\n"
        "PCI device:     /dev/mst/mt4099_pciconf0\n"
        "\n"
        "Device 1:\n"
        "----------\n"
        "\n"
        "Configurations:                              Next Boot\n"
        "         SRIOV_EN                            True(1)\n"
        "         NUM_OF_VFS                          16\n"
    )
    got = _parse(text)
    assert got.complete, got.errors
    (dev,) = got.devices
    assert dev.device == "/dev/mst/mt4099_pciconf0"
    assert dev.name is None and dev.description is None
    assert dev.value("NUM_OF_VFS") == "16"


def test_current_only_column_of_old_mstconfig() -> None:
    text = (
        "\nDevice #1:\n----------\n\nDevice type: ConnectX3Pro\nPCI device: 00:06.0\n\n"
        "Configurations: Current\nSRIOV_EN True(1)\nLINK_TYPE_P1 ETH(2)\n"
    )
    got = _parse(text)
    assert got.complete, got.errors
    assert got.devices[0].columns == ("Current",)
    assert canonical(got.devices[0].value("LINK_TYPE_P1") or "") == "2"


def test_crlf_and_trailing_spaces_do_not_change_the_result() -> None:
    text = _read("cx7-query-author-elided")
    base = as_jsonable(_parse(text))
    assert as_jsonable(_parse(text.replace("\n", "\r\n"))) == base
    stripped = "\n".join(line.rstrip() for line in text.split("\n"))
    assert as_jsonable(_parse(stripped)) == base


# --- what is not a whole query -----------------------------------------------------------


def test_author_elision_is_not_complete() -> None:
    got = _parse(_read("cx7-query-author-elided"))
    assert not got.complete
    assert "(...)" in got.errors
    assert got.devices[0].value("SAFE_MODE_ENABLE") == "True(1)"


def test_grep_filtered_rows_are_one_headerless_device() -> None:
    got = _parse(_read("cx7-query-grep-one-key"))
    assert not got.complete
    (dev,) = got.devices
    assert (dev.device, dev.device_type, dev.name) == (None, None, None)
    assert dev.columns == ("Next Boot",)
    assert dev.value("NUM_OF_VFS") == "16"
    assert got.errors == ("no Device/Configurations header: filtered output",)


def test_egrep_with_header_words_but_no_device_line_is_not_complete() -> None:
    got = _parse(_read("cx7-query-egrep-filtered"))
    assert not got.complete
    assert got.devices[0].value("LINK_TYPE_P1") == "ETH(2)"


def test_header_without_table_is_not_complete() -> None:
    got = _parse(_read("cx6lx-query-header-mstflint-4.19"))
    assert not got.complete
    assert got.devices[0].name == "MCX631102AN-ADA_Ax"
    assert got.devices[0].params == {}


def test_row_cut_mid_key_is_in_errors() -> None:
    got = _parse(_read("cut-cx5-mid-row"))
    assert not got.complete
    assert "PF_NUM_" in got.errors
    assert "PF_NUM_" not in got.devices[0].params


def test_row_with_too_few_values_is_not_taken() -> None:
    text = _E_QUERY.replace("63              63              63", "63              63")
    got = _parse(text)
    assert not got.complete
    assert "PF_NUM_PF_MSIX" not in got.devices[0].params


def test_value_cut_inside_its_brackets() -> None:
    text = _read("cx5-vpi-query-full").replace("True(1)\n", "True(\n", 1)
    assert not _parse(text).complete


def test_cut_anywhere_mid_line_is_never_complete() -> None:
    """No trailer follows a table, so a cut exactly at a line end cannot be seen; a cut
    inside a line (no final newline) always is, and so is any cut before the first row."""
    text = _read("cx5-vpi-query-full")
    lines = text.splitlines(keepends=True)
    first_row = next(i for i, x in enumerate(lines) if x.startswith("        "))
    cuts = ["".join(lines[:k]) + lines[k][: max(1, len(lines[k]) // 2)] for k in range(len(lines))]
    cuts += ["".join(lines[:k]) for k in range(1, first_row + 1)]
    for cut in cuts:
        try:
            got = _parse(cut)
        except ParseError:
            continue
        assert not got.complete, cut[-120:]


def test_error_after_a_table_joins_its_message_lines() -> None:
    text = (
        _read("cx5-vpi-query-full")
        + "-E- Failed to query some of the TLVs:\n"
        + "    Failed to query the next values of the following TLVs:\n"
        + "    NV_SW_OFFLOAD_CONFIG \n\n"
    )
    got = _parse(text)
    assert not got.complete
    assert got.errors == (
        "-E- Failed to query some of the TLVs: Failed to query the next values of the "
        "following TLVs: NV_SW_OFFLOAD_CONFIG",
    )
    assert "NV_SW_OFFLOAD_CONFIG" not in got.devices[0].params


@pytest.mark.parametrize("name", ["error-failed-to-open-device", "error-nv-access-registers"])
def test_error_without_table_raises_naming_it(name: str) -> None:
    message = _read(name).strip()
    with pytest.raises(ParseError, match="mlxconfig failed") as exc:
        _parse(_read(name))
    assert message in str(exc.value)


def test_error_after_device_header_without_table_raises() -> None:
    text = "\nDevice #1:\n----------\n\nDevice type:        ConnectX7\n"
    text += "-E- Device doesn't support any configuration changes.\n"
    with pytest.raises(ParseError, match="support any configuration"):
        _parse(text)


def test_set_output_is_refused() -> None:
    with pytest.raises(ParseError, match="set output, not a query"):
        _parse(_read("cx6-set-confirm-prompt"))
    # sample 4: the same with the blank lines removed (MFT 4.30.1, ConnectX-7)
    text = (
        "Device #1:\n----------\nDevice type:        ConnectX7\n"
        "Name:               MCX755106AS-HEA_Ax\nDevice:             05:00.0\n"
        "Configurations:                                          Next Boot       New\n"
        "        NUM_OF_VFS                                  16                   127\n"
        " Apply new Configuration? (y/n) [n] : y\nApplying... Done!\n"
        "-I- Please reboot machine to load new configurations.\n"
    )
    with pytest.raises(ParseError, match="set output"):
        _parse(text)


def test_set_table_cut_before_its_prompt_is_not_a_query() -> None:
    text = _read("cx6-set-confirm-prompt").split(" Apply new")[0]
    got = _parse(text)
    assert not got.complete
    (dev,) = got.devices
    assert dev.columns == ("Next Boot", "New")
    assert dev.params["BOOT_VLAN"] == ("1", "0")
    assert dev.value("BOOT_VLAN") == "1"


def test_unknown_column_header_is_not_complete() -> None:
    text = _read("cx5-vpi-query-full").replace("          Next Boot\n", "          Next Bo\n")
    got = _parse(text)
    assert not got.complete
    assert any("unknown Configurations columns" in e for e in got.errors)


@pytest.mark.parametrize("text", ["", "  \n", "hello\n", "(...)\n", "Device #1:\n----------\n"])
def test_nothing_readable_raises(text: str) -> None:
    with pytest.raises(ParseError):
        _parse(text)


def test_counts_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mlxconfig, "MAX_COUNT", 5)
    with pytest.raises(ParseError, match="parameters of one device"):
        _parse(_read("cx5-vpi-query-full"))
    with pytest.raises(ParseError, match="device number"):
        _parse("Device #99:\n")


@settings(max_examples=200, deadline=None)
@given(text=st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=400))
def test_random_text_is_never_a_whole_query(text: str) -> None:
    try:
        got = _parse(text)
    except ParseError:
        return
    assert got.complete is False
    json.dumps(as_jsonable(got))
