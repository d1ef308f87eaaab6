"""Reconciling Gemini calls with a Google Cloud Billing export (standard usage cost data as
CSV): per UTC day and model, the model read from the SKU description."""

from __future__ import annotations

import csv
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from click.testing import CliRunner
from google.genai import types

import spendguard
from spendguard.cli import main
from spendguard.testing import Emulator
from tests.ledger_helpers import FakeClock

DAY = datetime(2031, 1, 10, tzinfo=UTC)

COLUMNS = ["billing_account_id", "service.id", "service.description", "sku.id",
           "sku.description", "usage_start_time", "usage_end_time", "project.id", "cost",
           "currency", "usage.amount", "usage.unit", "cost_type"]


def _ledger(tmp_path: Path) -> tuple[str, Decimal]:
    """A SQLite ledger holding two gemini-2.5-flash calls made on DAY; their cost."""
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    budget = spendguard.Budget("1", ledger=url, clock=FakeClock(DAY + timedelta(hours=9)))
    client = spendguard.Gemini(api_key="emulated", budget=budget,
                               http_options=Emulator().gemini_http_options())
    config = types.GenerateContentConfig(max_output_tokens=50,
                                         thinking_config=types.ThinkingConfig(thinking_budget=0))
    for question in ("One?", "Two?"):
        client.models.generate_content(model="gemini-2.5-flash", contents=question,
                                       config=config)
    return url, sum((r.actual_usd for r in budget.ledger.records()), Decimal(0))


def _export(tmp_path: Path, rows: list[tuple[str, str, str, str]], *,
            underscored: bool = False) -> str:
    """A billing export CSV: (service, SKU, cost, cost_type) per row, on DAY, as BigQuery
    writes timestamps."""
    start, end = DAY, DAY + timedelta(days=1)
    path = tmp_path / "billing.csv"

    def spelled(column: str) -> str:  # BigQuery names a selected nested field either way
        return column.replace(".", "_") if underscored else column

    with path.open("w", newline="", encoding="utf-8") as stream:
        writer = csv.DictWriter(stream, fieldnames=[spelled(c) for c in COLUMNS])
        writer.writeheader()
        for service, sku, cost, cost_type in rows:
            row = {"billing_account_id": "0123-4567-89AB", "service.id": "AEFD-7695-64FA",
                   "service.description": service, "sku.id": "SKU1", "sku.description": sku,
                   "usage_start_time": start.strftime("%Y-%m-%d %H:%M:%S UTC"),
                   "usage_end_time": end.strftime("%Y-%m-%d %H:%M:%S UTC"),
                   "project.id": "acme", "cost": cost, "currency": "USD",
                   "usage.amount": "1", "usage.unit": "count", "cost_type": cost_type}
            writer.writerow({spelled(column): value for column, value in row.items()})
    return str(path)


def test_a_billing_export_is_compared_per_day_and_model_and_other_services_skipped(
        tmp_path: Path) -> None:
    url, spent = _ledger(tmp_path)
    half = (spent / 2).quantize(Decimal("0.000000001"))
    export = _export(tmp_path, [
        ("Gemini API", "Gemini 2.5 Flash Input Text", str(half), "regular"),
        ("Gemini API", "Gemini 2.5 Flash Output Text", str(spent - half), "regular"),
        ("Gemini API", "Grounding with Google Search", "0.035", "regular"),
        ("Gemini API", "Sales tax", "0.01", "tax"),
        ("Compute Engine", "N1 Predefined Instance Core", "3.00", "regular")])
    result = spendguard.reconcile_spend([export], provider="gemini", ledger=url)
    rows = {d.model: d for d in result.differences}
    assert set(rows) == {"gemini-2.5-flash", "Grounding with Google Search", "tax"}
    flash = rows["gemini-2.5-flash"]
    assert flash.ledger_usd == flash.provider_usd == spent and flash.attributable
    assert not rows["Grounding with Google Search"].attributable
    assert result.to_accept == [] and result.unresolved == []


def test_a_dollar_difference_is_accepted_as_an_adjustment_once(tmp_path: Path) -> None:
    url, spent = _ledger(tmp_path)
    export = _export(tmp_path, [("Vertex AI", "Gemini 2.5 Flash Output Text", "0.50",
                                 "regular")])
    first = spendguard.reconcile_spend([export], provider="gemini", ledger=url, accept=True)
    [row] = first.differences
    assert row.model == "gemini-2.5-flash" and row.usd_difference == Decimal("0.50") - spent
    again = spendguard.reconcile_spend([export], provider="gemini", ledger=url)
    assert again.to_accept == []


def test_underscored_columns_and_preview_and_lite_skus_are_read(tmp_path: Path) -> None:
    url, _ = _ledger(tmp_path)
    export = _export(tmp_path, [
        ("Gemini API", "Gemini 2.5 Flash Lite Input Text", "0.01", "regular"),
        ("Gemini API", "Gemini 3 Pro Preview Output", "0.02", "regular")], underscored=True)
    models = {d.model for d in spendguard.reconcile_spend([export], provider="gemini",
                                                          ledger=url).differences}
    assert {"gemini-2.5-flash-lite", "gemini-3-pro-preview"} <= models


@pytest.mark.parametrize(("content", "message"), [
    ('{"data": []}', "CSV"),
    ("service.description,cost\nGemini API,1\n", "sku.description"),
    ("service.description,sku.description,usage_start_time,usage_end_time,cost,currency\n"
     "Gemini API,Gemini 2.5 Flash,2031-01-10 00:00:00 UTC,2031-01-11 00:00:00 UTC,1,EUR\n",
     "currency"),
    ("service.description,sku.description,usage_start_time,usage_end_time,cost\n"
     "Compute Engine,Core,2031-01-10 00:00:00 UTC,2031-01-11 00:00:00 UTC,1\n", "no rows"),
])
def test_an_unreadable_export_names_the_file_and_field(tmp_path: Path, content: str,
                                                       message: str) -> None:
    path = tmp_path / "billing.csv"
    path.write_text(content)
    with pytest.raises(spendguard.ConfigError, match=message):
        spendguard.reconcile_spend([path], provider="gemini", ledger="memory://")


def test_the_cli_reconciles_a_gemini_billing_export(tmp_path: Path) -> None:
    url, spent = _ledger(tmp_path)
    export = _export(tmp_path, [("Gemini API", "Gemini 2.5 Flash Input Text", str(spent),
                                 "regular")])
    result = CliRunner().invoke(main, ["reconcile", export, "--provider", "gemini",
                                       "--ledger", url])
    assert result.exit_code == 0, result.output
    assert "gemini-2.5-flash" in result.output
