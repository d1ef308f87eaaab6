"""Sharing a call's cost over its token kinds: exact sums, proportional shares, consistent
FOCUS rows for any call."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal, localcontext

import pytest
from hypothesis import given
from hypothesis import strategies as st

from spendguard import SpendRecord
from spendguard._costing.prices import default_table
from spendguard._reporting.export.allocation import QUANTUM_USD, split_cost
from spendguard._reporting.export.focus import focus_rows

D = Decimal
amounts = st.decimals(min_value=D("-1000"), max_value=D("1000"), places=15,
                      allow_nan=False, allow_infinity=False)
weights = st.lists(st.decimals(min_value=D(0), max_value=D("100"), places=9,
                               allow_nan=False, allow_infinity=False), min_size=1, max_size=7)


@given(amounts, weights)
def test_shares_always_add_up_to_the_total_exactly(total: Decimal, parts: list[Decimal]) -> None:
    assert sum(split_cost(total, parts), D(0)) == total


@given(amounts, weights)
def test_each_share_is_proportional_within_the_rounding(total: Decimal,
                                                        parts: list[Decimal]) -> None:
    whole = sum(parts, D(0))
    if whole == 0:
        return
    shares = split_cost(total, parts)
    for share, weight in zip(shares, parts, strict=True):
        assert abs(share - total * weight / whole) <= QUANTUM_USD * len(parts)


@pytest.mark.parametrize(("total", "parts", "expected"), [
    ("0.0015", ["0.001", "0.002"], ["0.0005", "0.001"]),
    ("1", ["1", "1", "1"], ["0.333333333334", "0.333333333333", "0.333333333333"]),
    ("0.3", ["0", "0"], ["0.15", "0.15"]),
    ("-0.25", ["3", "1"], ["-0.1875", "-0.0625"]),
])
def test_exact_splits(total: str, parts: list[str], expected: list[str]) -> None:
    assert split_cost(D(total), [D(p) for p in parts]) == [D(e) for e in expected]


def test_nothing_to_share_over_is_only_allowed_for_zero() -> None:
    assert split_cost(D(0), []) == []
    with pytest.raises(ValueError, match="no parts"):
        split_cost(D(1), [])
    with pytest.raises(ValueError, match=">= 0"):
        split_cost(D(1), [D(-1)])


kinds = st.fixed_dictionaries({}, optional={
    "input": st.integers(0, 10**9), "cache_read": st.integers(0, 10**9),
    "cache_write_5m": st.integers(0, 10**8), "cache_write_1h": st.integers(0, 10**8),
    "output": st.integers(0, 10**8), "reasoning": st.integers(0, 10**8)})


@given(kinds, st.decimals(min_value=D(0), max_value=D("10000"), places=12,
                          allow_nan=False, allow_infinity=False),
       st.sampled_from(["claude-haiku-4-5", "claude-sonnet-4-5", "gpt-retired"]),
       st.booleans())
def test_focus_rows_of_any_call_add_up_to_its_ledger_amount(
        tokens: dict[str, int], actual: Decimal, model: str, batch: bool) -> None:
    record = SpendRecord(
        id="c1", time=datetime(2031, 1, 1, tzinfo=UTC), scopes=("app",), tags={},
        provider="anthropic", model=model, endpoint="batch" if batch else "messages",
        tokens=tokens, estimated_usd=actual, actual_usd=actual, usage_estimated=False,
        table_version="t", latency_s=0.1, request_id=None, attempt=1, status="ok")
    rows = list(focus_rows([record], table=default_table()))
    assert sum((row["BilledCost"] for row in rows), D(0)) == actual
    for row in rows:
        with localcontext() as context:
            context.prec = 80
            assert row["ListUnitPrice"] * row["PricingQuantity"] == row["ListCost"]
        assert row["ConsumedQuantity"] > 0 or row["PricingUnit"] == "Requests"
