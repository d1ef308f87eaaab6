"""Spend logs for finance: the ledger as CSV, JSON Lines or FinOps FOCUS, and a FOCUS checker.

``export_spend(path, format="focus")`` writes the records of any ledger backend;
``validate_focus(path)`` names the row and column of each rule a FOCUS file breaks.
docs/finance.md lists the columns and how the ledger maps onto FOCUS.
"""

from __future__ import annotations

from spendguard._reporting.export.filters import SpendFilter, parse_moment
from spendguard._reporting.export.focus_columns import FOCUS_COLUMNS, FocusColumn
from spendguard._reporting.export.rows import LEDGER_COLUMNS
from spendguard._reporting.export.spend import FORMATS, ExportResult, export_spend
from spendguard._reporting.export.validate import FocusProblem, validate_focus

__all__ = [
    "FOCUS_COLUMNS",
    "FORMATS",
    "LEDGER_COLUMNS",
    "ExportResult",
    "FocusColumn",
    "FocusProblem",
    "SpendFilter",
    "export_spend",
    "parse_moment",
    "validate_focus",
]
