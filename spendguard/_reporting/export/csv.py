"""CSV for spreadsheets: every value written in full, none able to run as a formula.

A spreadsheet runs a cell that begins with ``=``, ``+``, ``-`` or ``@`` (and, in some, a tab or
carriage return) as a formula — a tag value or a scope name could then call out to the
network when finance opens the file (OWASP "CSV injection"). Such a cell is written with a
leading ``'``, which spreadsheets show as text. Plain numbers (``-0.25``) cannot be formulas
and are left as they are, so negative adjustments stay numbers.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal
from typing import Any, TextIO

from spendguard._reporting.export.records import decimal_text, json_text

__all__ = ["cell_text", "neutralise", "write_csv"]

_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_PLAIN_NUMBER = re.compile(r"-?\d+(\.\d+)?")


def neutralise(text: str) -> str:
    """``text``, prefixed with ``'`` when a spreadsheet would read it as a formula."""
    if text.startswith(_FORMULA_STARTS) and not _PLAIN_NUMBER.fullmatch(text):
        return "'" + text
    return text


def cell_text(value: Any) -> str:
    """One value as CSV text: empty for null, ``true``/``false``, exact decimals, JSON for
    lists and dicts."""
    # The common types first, by exact type: a large export writes millions of cells, and an
    # isinstance() against the Mapping ABC costs several times a type comparison.
    kind = type(value)
    if kind is str:
        return neutralise(value)
    if kind is Decimal:
        return decimal_text(value)
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Decimal):
        return decimal_text(value)
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, Mapping | list | tuple):
        return neutralise(json_text(value))
    return neutralise(str(value))


def write_csv(rows: Iterable[Mapping[str, Any]], columns: Sequence[str], out: TextIO) -> int:
    """Write a header and ``rows`` (missing keys are empty); returns the number of rows."""
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(columns)
    # A cell holding the very object the row before held in that column (a constant, None,
    # or a value a call's rows share) keeps that row's text: no formatting again.
    before: list[Any] = [_NOTHING] * len(columns)
    texts = [""] * len(columns)
    count = 0
    for row in rows:
        values = list(map(row.get, columns))
        texts = [text if value is last else cell_text(value)
                 for value, last, text in zip(values, before, texts, strict=True)]
        before = values
        writer.writerow(texts)
        count += 1
    return count


_NOTHING = object()
