"""dmidecode parser: the real outputs in tests/fixtures/dmidecode and the rules of
rackops/parsers/dmidecode.py (records by DMI type, whole records, serials never kept)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rackops.parsers import dmidecode
from rackops.parsers._common import ParseError, as_jsonable
from rackops.parsers.dmidecode import DmiBios, Dmidecode, DmiSystem, parse_dmidecode

FIXTURES = Path(__file__).parent / "fixtures" / "dmidecode"
CASES = sorted(FIXTURES.glob("*.txt"))


def _read(name: str) -> str:
    return (FIXTURES / f"{name}.txt").read_text()


def _parse(text: str) -> Dmidecode:
    return parse_dmidecode(text)


def _bios_only(dump: str) -> str:
    """A ``dmidecode -t bios`` shaped text from a full dump's own lines: its header lines
    except the two printed only without -t, then its type-0 record and blank line."""
    head, _, rest = dump.partition("\n\n")
    head = "\n".join(x for x in head.split("\n") if not x.startswith(("Table at", "67 struct")))
    start = rest.index("Handle 0x0000, DMI type 0,")
    end = rest.index("\n\n", start) + 2
    return head + "\n\n" + rest[start:end]


def test_there_are_fixtures() -> None:
    """Parsed as expected and cited in SOURCES.md: tests/test_parsers.py, for every tool."""
    assert len(CASES) >= 5


# --- record selection --------------------------------------------------------------------


def test_full_dump_with_oem_record_first() -> None:
    """Dell M630: OEM type 218 (handle 0xDA00) comes before the BIOS record."""
    got = _parse(_read("dell-m630-full-dump"))
    assert got.complete, got.errors
    assert got.dmidecode_version == "2.12" and got.smbios_version == "2.8"
    assert got.bios == DmiBios("Dell Inc.", "1.2.5", "05/04/2015", "1.2", None)
    assert got.system == DmiSystem("Dell Inc.", "PowerEdge M630", "Not Specified")


def test_bios_record_found_by_type_not_handle() -> None:
    """HPE BL460c Gen10: handle 0x0000 is OEM type 194; the BIOS is handle 0x0003, and the
    BIOS version repeated in OEM type 193 strings (v1.46) is not taken."""
    text = _read("hpe-bl460c-gen10-full-dump")
    assert "Handle 0x0000, DMI type 194," in text and "Handle 0x0003, DMI type 0," in text
    got = _parse(text)
    assert got.complete, got.errors
    assert got.bios == DmiBios("HPE", "I41", "10/02/2018", "1.46", "1.37")
    assert got.system == DmiSystem("HPE", "ProLiant BL460c Gen10", "Not Specified")


def test_handle_number_is_irrelevant() -> None:
    text = _bios_only(_read("dell-m630-full-dump"))
    moved = text.replace("Handle 0x0000, DMI type 0,", "Handle 0x0042, DMI type 0,")
    assert _parse(moved) == _parse(text)
    not_bios = text.replace("Handle 0x0000, DMI type 0,", "Handle 0x0000, DMI type 3,")
    with pytest.raises(ParseError, match="no BIOS"):
        _parse(not_bios.replace("BIOS Information", "Chassis Information"))


def test_t_bios_output_is_complete_without_system() -> None:
    got = _parse(_bios_only(_read("dell-m630-full-dump")))
    assert got.complete, got.errors
    assert got.system is None
    assert got.bios is not None and got.bios.version == "1.2.5"


def test_t_bios_with_language_record_after_it() -> None:
    text = _bios_only(_read("dell-m630-full-dump")) + (
        "Handle 0x0D00, DMI type 13, 22 bytes\nBIOS Language Information\n"
        "\tLanguage Description Format: Long\n\tInstallable Languages: 1\n"
        "\t\ten|US|iso8859-1\n\tCurrently Installed Language: en|US|iso8859-1\n\n"
    )
    got = _parse(text)
    assert got.complete, got.errors


def test_serials_and_uuids_never_reach_the_result() -> None:
    for name, secrets in (
        ("dell-m630-full-dump", ("4242", "4C4C4544-0036-3210-805A-B7C04F4D3632")),
        ("hpe-bl460c-gen10-full-dump", ("4242", "34333638-3234-5A43-3239-30333031464B")),
        ("dell-r640-system-only", ("*******",)),
    ):
        text = _read(name)
        assert all(s in text for s in secrets)
        dumped = json.dumps(as_jsonable(_parse(text)))
        assert not any(s in dumped for s in secrets), name


def test_version_with_spaces_is_stripped_not_split() -> None:
    text = _bios_only(_read("dell-m630-full-dump")).replace(
        "\tVersion: 1.2.5\n", "\tVersion: 8AET46WW (1.26 )   \n"
    )
    got = _parse(text)
    assert got.complete and got.bios is not None
    assert got.bios.version == "8AET46WW (1.26 )"


# --- layouts -----------------------------------------------------------------------------


def test_space_indentation_parses_like_tabs() -> None:
    text = _read("dell-m630-full-dump")
    assert _parse(text.expandtabs(8)) == _parse(text)
    four = text.replace("\t", "    ")
    assert _parse(four) == _parse(text)


def test_crlf_does_not_change_the_result() -> None:
    text = _read("hpe-bl460c-gen10-full-dump")
    assert _parse(text.replace("\n", "\r\n")) == _parse(text)


def test_copy_without_blank_lines_between_records() -> None:
    text = _read("dell-m630-full-dump")
    head, _, body = text.partition("\n\n")
    squeezed = head + "\n\n" + body.replace("\n\n", "\n")
    got = _parse(squeezed)
    assert got.bios == _parse(text).bios and got.system == _parse(text).system
    assert got.complete, got.errors  # the next Handle line closes a record


def test_warning_comment_lines_and_handle_0x0015() -> None:
    got = _parse(_read("intel-mtl-type0-uefi-cut"))
    assert got.smbios_version == "3.6" and got.dmidecode_version == "3.3"
    assert got.bios is not None and got.bios.vendor == "Intel Corporation"
    assert not got.complete  # the stored copy stops inside the Characteristics list


# --- what is not whole -------------------------------------------------------------------


def test_record_followed_by_nothing_is_not_complete() -> None:
    """C2 as cut in the research: the BIOS record's last line, then nothing. A cut there
    cannot be told from a cut between two of its lines, so it is not whole."""
    got = _parse(_read("supermicro-ssg-6028r-cut-after-bios"))
    assert not got.complete
    assert got.bios is not None and got.bios.bios_revision == "5.11"
    # with its blank line it is a whole record, but still a full dump without System
    whole = _parse(_read("supermicro-ssg-6028r-cut-after-bios") + "\n")
    assert not whole.complete
    assert whole.errors == (
        "a full dmidecode dump (Table at ...) without its System Information record: cut?",
        "a full dmidecode dump (Table at ...) without its End Of Table record (type 127): cut?",
    )


def test_full_dump_cut_between_two_whole_records_is_not_complete() -> None:
    text = _read("hpe-bl460c-gen10-full-dump")
    cut = text[: text.index("Handle 0x0064,")]  # just after the System record's blank line
    got = _parse(cut)
    assert got.bios is not None and got.system is not None
    assert not got.complete
    assert any("End Of Table" in e for e in got.errors)


def test_cut_anywhere_before_the_records_end_is_never_complete() -> None:
    for name in ("dell-m630-full-dump", "hpe-bl460c-gen10-full-dump"):
        lines = _read(name).splitlines(keepends=True)
        system = next(i for i, x in enumerate(lines) if x.startswith("System Information"))
        end = next(i for i in range(system, len(lines)) if not lines[i].strip())
        bios = next(i for i, x in enumerate(lines) if x.startswith("BIOS Information"))
        # every line of the two records and of the dump's head, every 7th line between
        near = {*range(bios + 40), *range(system - 3, end + 1)}
        at = [k for k in range(1, end + 1) if k in near or k % 7 == 0]
        cuts = ["".join(lines[:k]) for k in at]
        cuts += ["".join(lines[:k]) + lines[k][: len(lines[k]) // 2] for k in at]
        for cut in cuts:
            try:
                got = _parse(cut)
            except ParseError:
                continue
            assert not got.complete, (name, cut[-120:])


def test_cut_inside_bios_record_of_t_bios_is_never_complete() -> None:
    lines = _bios_only(_read("dell-m630-full-dump")).splitlines(keepends=True)
    for k in range(1, len(lines) - 1):
        for cut in ("".join(lines[:k]), "".join(lines[:k]) + lines[k][:-2]):
            try:
                got = _parse(cut)
            except ParseError:
                continue
            assert not got.complete, cut[-80:]


def test_record_without_vendor_is_not_complete() -> None:
    text = _bios_only(_read("dell-m630-full-dump")).replace("\tVendor: Dell Inc.\n", "")
    got = _parse(text)
    assert not got.complete
    assert got.bios is not None and got.bios.vendor is None
    assert any("without Vendor" in e for e in got.errors)


@pytest.mark.parametrize("elision", ["...", "\t...", "\t\t[...]", "…", "[snip]"])
def test_hand_elision_is_not_complete(elision: str) -> None:
    text = _read("dell-m630-full-dump").replace(
        "\t\tEDD is supported\n", f"\t\tEDD is supported\n{elision}\n"
    )
    got = _parse(text)
    assert not got.complete
    assert elision.strip() in got.errors


def test_truncated_marker_and_stderr_lines_are_not_complete() -> None:
    text = _read("dell-m630-full-dump")
    assert not _parse(
        text + "Wrong DMI structures count: 67 announced, only 60 decoded.\n"
    ).complete
    truncated = text.replace(
        "\tFamily: Not Specified\n", "\tFamily: Not Specified\n\t<TRUNCATED>\n"
    )
    assert not _parse(truncated).complete


def test_no_smbios_raises_with_its_message() -> None:
    with pytest.raises(ParseError, match="No SMBIOS nor DMI entry point found"):
        _parse(_read("no-smbios-entry-point"))
    with pytest.raises(ParseError, match="No SMBIOS nor DMI entry point found"):
        _parse("# dmidecode 3.3\n# No SMBIOS nor DMI entry point found, sorry.\n")


def test_permission_denied_raises_naming_it() -> None:
    text = (
        "# dmidecode 3.3\n/sys/firmware/dmi/tables/smbios_entry_point: Permission denied\n"
        "Scanning /dev/mem for entry point.\n/dev/mem: Permission denied\n"
    )
    with pytest.raises(ParseError, match="/dev/mem: Permission denied"):
        _parse(text)


@pytest.mark.parametrize("text", ["", "  \n", "# dmidecode 3.3\nSMBIOS 3.2.0 present.\n\n"])
def test_no_record_raises(text: str) -> None:
    with pytest.raises(ParseError, match="no BIOS"):
        _parse(text)


def test_records_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dmidecode, "MAX_COUNT", 3)
    with pytest.raises(ParseError, match="DMI records"):
        _parse(_read("dell-m630-full-dump"))
    with pytest.raises(ParseError):
        _parse("Handle 0x0000, DMI type 999, 24 bytes\nBIOS Information\n")


@settings(max_examples=200, deadline=None)
@given(text=st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=400))
def test_random_text_is_never_a_whole_output(text: str) -> None:
    try:
        got = _parse(text)
    except ParseError:
        return
    assert got.complete is False
    json.dumps(as_jsonable(got))
