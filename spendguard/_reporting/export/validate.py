"""A FOCUS CSV checked against the rules of FOCUS 1.2 that a token-billing export must keep.

Each problem names its row (1 is the first row after the header; 0 is the header) and column.
Checked: mandatory columns present, custom columns prefixed ``x_``, non-null columns filled,
numbers in FOCUS's numeric format (no exponent, no ``+``), UTC times as
``YYYY-MM-DDTHH:mm:ssZ`` with each period's start before its end and the charge period inside
the billing period, allowed values, JSON key-value columns, the conditional nulls of Usage /
Purchase / Tax rows, and ``ListCost = ListUnitPrice x PricingQuantity`` (likewise Contracted)
exactly, in Decimal, as the official validator does with zero tolerance.
"""

from __future__ import annotations

import csv
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal, localcontext
from pathlib import Path

from spendguard._core.errors import ConfigError
from spendguard._reporting.export.focus_columns import (
    CHARGE_CATEGORIES,
    CHARGE_FREQUENCIES,
    FOCUS_COLUMNS,
    PRICING_CATEGORIES,
    SERVICE_CATEGORIES,
)

__all__ = ["FocusProblem", "validate_focus"]

_MANDATORY = tuple(c.name for c in FOCUS_COLUMNS if c.level == "mandatory")
_KNOWN = {c.name: c for c in FOCUS_COLUMNS}
# Columns of the FOCUS 1.2 / 1.3 Cost and Usage dataset that spendguard does not write: a file
# from another tool may carry them without an x_ prefix.
_OTHER_SPEC_COLUMNS = frozenset({
    "AvailabilityZone", "BillingAccountType", "CapacityReservationId",
    "CapacityReservationStatus", "CommitmentDiscountCategory", "CommitmentDiscountId",
    "CommitmentDiscountName", "CommitmentDiscountQuantity", "CommitmentDiscountStatus",
    "CommitmentDiscountType", "CommitmentDiscountUnit", "PricingCurrency",
    "PricingCurrencyContractedUnitPrice", "PricingCurrencyEffectiveCost",
    "PricingCurrencyListUnitPrice", "RegionId", "RegionName", "SubAccountId", "SubAccountName",
    "SubAccountType", "AllocatedMethodId", "AllocatedMethodDetails", "AllocatedResourceId",
    "AllocatedResourceName", "AllocatedTags", "ContractApplied",
})
_Bad = Callable[[str, str], None]  # records a problem (column, message) in the current row
_NUMBER = re.compile(r"-?\d+(\.\d+)?")
_TIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z")
_CURRENCY = re.compile(r"[A-Z]{3}")
_PRICED_CATEGORIES = ("Usage", "Purchase")
_PRODUCTS = (("ListCost", "ListUnitPrice"), ("ContractedCost", "ContractedUnitPrice"))
_ALLOWED = {"ChargeCategory": CHARGE_CATEGORIES, "ChargeFrequency": CHARGE_FREQUENCIES,
            "PricingCategory": PRICING_CATEGORIES, "ServiceCategory": SERVICE_CATEGORIES,
            "ChargeClass": frozenset({"Correction"})}
_REQUIRED_WHEN_PRICED = ("PricingQuantity", "PricingUnit", "ListUnitPrice",
                         "ContractedUnitPrice", "ConsumedQuantity", "ConsumedUnit", "SkuId",
                         "SkuPriceId")


@dataclass(frozen=True, slots=True)
class FocusProblem:
    """One rule an export breaks: where (row, column) and what is wrong."""

    row: int
    column: str
    message: str

    def __str__(self) -> str:
        where = "header" if self.row == 0 else f"row {self.row}"
        return f"{where}, column {self.column}: {self.message}"


def validate_focus(path: str | os.PathLike[str]) -> list[FocusProblem]:
    """The problems of the FOCUS CSV at ``path`` (an empty list when it conforms)."""
    file = Path(path)
    try:
        with file.open(encoding="utf-8", newline="") as stream:
            reader = csv.reader(stream)
            header = next(reader, None)
            if header is None:
                return [FocusProblem(0, "(all)", "the file is empty; it needs a header row")]
            problems = _check_header(header)
            for number, cells in enumerate(reader, start=1):
                if len(cells) != len(header):
                    problems.append(FocusProblem(number, "(all)", f"has {len(cells)} cells "
                                                 f"for {len(header)} columns"))
                    continue
                problems += _check_row(number, dict(zip(header, cells, strict=True)))
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise ConfigError(f"path: cannot read {file} as a UTF-8 CSV file: {exc}") from exc
    return problems


def _check_header(header: list[str]) -> list[FocusProblem]:
    problems = [FocusProblem(0, name, "mandatory FOCUS column is missing")
                for name in _MANDATORY if name not in header]
    seen: set[str] = set()
    for name in header:
        if name in seen:
            problems.append(FocusProblem(0, name, "appears twice; column names are unique"))
        seen.add(name)
        if name not in _KNOWN and name not in _OTHER_SPEC_COLUMNS and not name.startswith("x_"):
            problems.append(FocusProblem(0, name, "is not a FOCUS column; custom columns "
                                         "must start with 'x_'"))
    return problems


def _check_row(number: int, row: dict[str, str]) -> list[FocusProblem]:
    problems: list[FocusProblem] = []

    def bad(column: str, message: str) -> None:
        problems.append(FocusProblem(number, column, message))

    numbers: dict[str, Decimal] = {}
    for name, value in row.items():
        column = _KNOWN.get(name)
        if column is None:
            continue
        if value == "":
            if not column.nullable:
                bad(name, "must not be empty")
            continue
        if column.kind == "decimal":
            if not _NUMBER.fullmatch(value):
                bad(name, f"{value!r} is not a plain decimal number (no exponent, sign only "
                          f"for negatives, no units)")
            else:
                numbers[name] = Decimal(value)
        elif column.kind == "datetime" and not _TIME.fullmatch(value):
            bad(name, f"{value!r} is not a UTC time written YYYY-MM-DDTHH:mm:ssZ")
        elif column.kind == "json":
            _check_json(name, value, bad)
        if name in _ALLOWED and value not in _ALLOWED[name]:
            bad(name, f"{value!r} is not one of {', '.join(sorted(_ALLOWED[name]))}")
    if row.get("BillingCurrency") and not _CURRENCY.fullmatch(row["BillingCurrency"]):
        bad("BillingCurrency", f"{row['BillingCurrency']!r} is not an ISO 4217 code such as USD")
    _check_periods(row, bad)
    _check_conditional(row, numbers, bad)
    return problems


def _check_json(name: str, value: str, bad: _Bad) -> None:
    try:
        parsed = json.loads(value)
    except ValueError:
        bad(name, "is not valid JSON")
        return
    if not isinstance(parsed, dict):
        bad(name, "must be a JSON object of keys and values")
    elif any(isinstance(item, dict | list) for item in parsed.values()):
        bad(name, "values must be strings, numbers, booleans or null, not objects or arrays")


def _check_periods(row: dict[str, str], bad: _Bad) -> None:
    times = {name: row.get(name, "") for name in ("ChargePeriodStart", "ChargePeriodEnd",
                                                  "BillingPeriodStart", "BillingPeriodEnd")}
    if not all(_TIME.fullmatch(value) for value in times.values()):
        return  # already reported
    # The fixed format sorts as it compares.
    for period in ("Charge", "Billing"):
        if times[f"{period}PeriodStart"] >= times[f"{period}PeriodEnd"]:
            bad(f"{period}PeriodEnd", f"{times[f'{period}PeriodEnd']} is not after "
                                      f"{period}PeriodStart {times[f'{period}PeriodStart']}")
    if not (times["BillingPeriodStart"] <= times["ChargePeriodStart"]
            and times["ChargePeriodEnd"] <= times["BillingPeriodEnd"]):
        bad("ChargePeriodStart", "the charge period is not inside the billing period")


def _check_conditional(row: dict[str, str], numbers: dict[str, Decimal], bad: _Bad) -> None:
    category, correction = row.get("ChargeCategory"), row.get("ChargeClass") == "Correction"
    if category in _PRICED_CATEGORIES and not correction:
        for name in _REQUIRED_WHEN_PRICED:
            if name in row and row[name] == "":
                bad(name, f"must not be empty in a {category} row that is not a Correction")
    if category == "Tax":
        for name in ("PricingQuantity", "ListUnitPrice"):
            if row.get(name):
                bad(name, "must be empty in a Tax row")
    if category != "Usage" and row.get("ConsumedQuantity"):
        bad("ConsumedQuantity", f"must be empty in a {category} row (only Usage consumes)")
    for quantity, unit in (("PricingQuantity", "PricingUnit"),
                           ("ConsumedQuantity", "ConsumedUnit")):
        if row.get(quantity) and not row.get(unit):
            bad(unit, f"must not be empty when {quantity} is given")
    if correction:
        return
    pricing_quantity = numbers.get("PricingQuantity")
    for cost_name, price_name in _PRODUCTS:
        price, cost = numbers.get(price_name), numbers.get(cost_name)
        if price is None or pricing_quantity is None or cost is None:
            continue
        with localcontext() as context:
            context.prec = 80  # exact for factors of up to 40 digits each
            product = price * pricing_quantity
        if product != cost:
            bad(cost_name, f"{row[cost_name]} is not {price_name} x PricingQuantity "
                           f"({row[price_name]} x {row['PricingQuantity']} = {product})")
