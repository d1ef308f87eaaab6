"""Google Cloud Billing's standard usage cost export, as CSV: the Gemini rows, per day and
model.

The export's schema is published (docs.cloud.google.com/billing/docs/how-to/
export-data-bigquery-tables/standard-usage): one row per service, SKU, project and hour with
``service.description``, ``sku.description``, ``usage_start_time``, ``usage_end_time``,
``cost``, ``currency``, ``cost_type``, ``usage.amount`` and ``usage.unit`` among its columns.
BigQuery writes CSV without nested records, so a query selects the columns; either spelling of
a nested name is read (``sku.description`` or ``sku_description``).

Rows of the Gemini API (``service.description`` "Gemini API", formerly "Generative Language
API") and of Vertex AI are kept; other services are skipped. The model is read from the SKU
description ("Gemini 2.5 Flash ..." -> ``gemini-2.5-flash``; "Flash Lite" -> ``flash-lite``;
"Preview" kept); a SKU naming no Gemini model (grounding, a tax or adjustment row) is a charge
no model made. Costs only: SKUs bill in units the export does not tie to token kinds, so
tokens are not compared. Credits are a repeated record the CSV cannot hold; net them into
``cost`` in the query if they should count.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import datetime

from spendguard._core.errors import ConfigError
from spendguard._reporting.reconcile.lines import (
    ProviderLine,
    ProviderReport,
    decimal_at,
    utc_moment,
)

__all__ = ["CSV_ONLY", "GEMINI_SERVICES", "csv_pages", "model_of_sku", "read_billing_rows",
           "read_pages"]

CSV_ONLY = ("Gemini costs are read from a Google Cloud Billing export saved as CSV "
            "(docs/finance.md), not JSON")

GEMINI_SERVICES = ("gemini api", "generative language api", "vertex ai")
"""``service.description`` values (lower case) whose rows are read."""
_MODEL = re.compile(r"gemini[\s_-]*(?P<version>\d+(?:\.\d+)?)[\s_-]*"
                    r"(?P<kind>pro|flash[\s_-]*lite|flash)(?P<preview>[\s_-]*preview)?",
                    re.IGNORECASE)
_REGULAR = ("", "regular")


def model_of_sku(description: str) -> str | None:
    """The Gemini model a SKU description names (``gemini-2.5-flash``), else None."""
    match = _MODEL.search(description)
    if match is None:
        return None
    kind = re.sub(r"[\s_-]+", "-", match["kind"].lower())
    return f"gemini-{match['version']}-{kind}" + ("-preview" if match["preview"] else "")


def _column(row: Mapping[str, str], dotted: str) -> str:
    value = row.get(dotted)
    if value is None:
        value = row.get(dotted.replace(".", "_"))
    return (value or "").strip()


def read_billing_rows(rows: Sequence[Mapping[str, str]], *, source: str) -> ProviderReport:
    """The Gemini rows of a billing export CSV (``rows`` as ``csv.DictReader`` gives them)."""
    if rows and not any(key in rows[0] for key in ("sku.description", "sku_description")):
        raise ConfigError(f"{source}: no sku.description column; is this a Cloud Billing "
                          "export (standard usage cost data) saved as CSV?")
    lines: list[ProviderLine] = []
    starts: list[datetime] = []
    ends: list[datetime] = []
    for number, row in enumerate(rows, start=1):
        where = f"{source}: row {number}"
        if _column(row, "service.description").lower() not in GEMINI_SERVICES:
            continue
        start = utc_moment(_column(row, "usage_start_time").replace(" UTC", "+00:00"),
                           where=f"{where}.usage_start_time")
        end = utc_moment(_column(row, "usage_end_time").replace(" UTC", "+00:00"),
                         where=f"{where}.usage_end_time")
        currency = _column(row, "currency").upper() or "USD"
        if currency != "USD":
            raise ConfigError(f"{where}.currency: {currency!r}; spendguard keeps USD only "
                              "(select cost / currency_conversion_rate AS cost, 'USD' AS "
                              "currency in the query)")
        usd = decimal_at(_column(row, "cost"), where=f"{where}.cost")
        sku = _column(row, "sku.description") or "(no SKU)"
        cost_type = _column(row, "cost_type").lower()
        model = model_of_sku(sku) if cost_type in _REGULAR else None
        lines.append(ProviderLine(start.date(), model, None, usd=usd,
                                  label=sku if cost_type in _REGULAR else cost_type))
        starts.append(start)
        ends.append(end)
    if not starts:
        raise ConfigError(f"{source}: no rows of the Gemini API or Vertex AI "
                          f"(service.description); nothing to compare")
    return ProviderReport("gemini", tuple(lines), min(starts), max(ends), False, True)


def csv_pages(rows: Sequence[Mapping[str, str]], *, source: str) -> list[dict[str, str]]:
    """The export's rows, as the pages :func:`read_pages` reads."""
    return [dict(row) for row in rows]


def read_pages(pages: Sequence[Mapping[str, str]], *, source: str) -> ProviderReport:
    """The report of a Google Cloud Billing export's rows (:func:`read_billing_rows`)."""
    return read_billing_rows(pages, source=source)
