"""``rackops lint``: refuse an inconsistent rack before anything touches a machine."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rackops.diagnostics import Diagnostic, Level
from rackops.errors import ExitCode
from rackops.inventory.loader import load_inventory
from rackops.lint import isl  # noqa: F401  (registers the ISL rules)
from rackops.lint.rules import RULES, Context, rule_table, run_rules


@dataclass(frozen=True)
class LintReport:
    inventory: Path
    diagnostics: tuple[Diagnostic, ...]

    @property
    def errors(self) -> int:
        return sum(d.level is Level.ERROR for d in self.diagnostics)

    @property
    def warnings(self) -> int:
        return sum(d.level is Level.WARNING for d in self.diagnostics)

    @property
    def exit_code(self) -> ExitCode:
        if any(d.code == "INV000" for d in self.diagnostics):
            return ExitCode.USAGE
        if self.errors:
            return ExitCode.ERRORS
        return ExitCode.WARNINGS if self.warnings else ExitCode.OK


def lint_inventory(path: str | Path, *, allow_lookups: bool = False) -> LintReport:
    """Load the inventory and run every rule; never raises for a bad design. Lookups in the
    inventory's templates are refused (INV006) unless `allow_lookups`."""
    result = load_inventory(path, allow_lookups=allow_lookups)
    found = list(result.diagnostics)
    if result.cluster is not None:
        found.extend(run_rules(Context(result, result.cluster)))
    order = {Level.ERROR: 0, Level.WARNING: 1}
    found.sort(key=lambda d: (d.path or "", d.line or 0, order[d.level], d.code))
    return LintReport(Path(path), tuple(found))


__all__ = ["RULES", "LintReport", "lint_inventory", "rule_table"]
