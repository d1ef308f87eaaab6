"""Rent, break-even against a hosted API, and the comparison with real spend from the ledger."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from spendguard import ConfigError, UnknownModelError, breakeven, open_ledger
from spendguard._budget.ledger.base import CallInfo, ScopeClaim, Settlement
from spendguard._sizing import ledger_spend
from spendguard.sizing import compare_with_ledger, monthly_rent, serving_capacity, spend_from_ledger

NOW = datetime(2026, 9, 1, tzinfo=UTC)


@pytest.mark.parametrize(("gpus", "hours", "gpu_hours", "usd"), [
    (1, 24, 720, "1800"), (8, 4, 960, "2400"), (8, 24, 5760, "14400"), (32, 24, 23040, "57600"),
])
def test_rent_table_of_seed_003(gpus: int, hours: int, gpu_hours: int, usd: str) -> None:
    rent = monthly_rent(gpus, "2.50", hours_per_day=hours)
    assert rent.gpu_hours == gpu_hours
    assert rent.monthly_cost_usd == Decimal(usd)


def test_always_on_node_breaks_even_at_960_million_output_tokens() -> None:
    result = breakeven(gpu="h100", count=8, usd_per_gpu_hour="2.50",
                       api_output_usd_per_million="15.00")
    assert result.monthly_cost_usd == Decimal("14400")
    assert result.breakeven_output_tokens_per_month == 960_000_000
    assert result.breakeven_output_tokens_per_day == 32_000_000  # "≈ 30 M a day"


def test_money_stays_decimal_and_floats_are_refused() -> None:
    result = breakeven(count=1, usd_per_gpu_hour=Decimal("2.5"), api_output_usd_per_million=15)
    assert isinstance(result.monthly_cost_usd, Decimal)
    with pytest.raises(ConfigError, match="usd_per_gpu_hour"):
        breakeven(count=1, usd_per_gpu_hour=2.5, api_output_usd_per_million=15)  # type: ignore[arg-type]


def test_utilisation_needed_compares_break_even_with_capacity() -> None:
    result = breakeven(count=8, usd_per_gpu_hour="2.50", api_output_usd_per_million="15",
                       capacity_tok_s=1000)
    capacity = 1000 * 3600 * 24 * 30
    assert result.capacity_output_tokens_per_month == capacity
    assert result.utilisation_needed == pytest.approx(960_000_000 / capacity)


def test_part_time_rental_counts_only_the_rented_hours() -> None:
    result = breakeven(count=8, usd_per_gpu_hour="2.50", api_output_usd_per_million="15",
                       hours_per_day=4, capacity_tok_s=1000)
    assert result.monthly_cost_usd == Decimal("2400")
    assert result.capacity_output_tokens_per_month == 1000 * 3600 * 4 * 30


def test_self_hosting_that_can_never_pay_needs_more_than_full_utilisation() -> None:
    result = breakeven(count=32, usd_per_gpu_hour="2.50", api_output_usd_per_million="0.50",
                       capacity_tok_s=100)
    assert result.utilisation_needed is not None and result.utilisation_needed > 1


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"count": 0}, "count"),
    ({"hours_per_day": 25}, "hours_per_day"),
    ({"hours_per_day": "often"}, "hours_per_day"),
    ({"api_output_usd_per_million": "0"}, "api_output_usd_per_million"),
    ({"capacity_tok_s": -1.0}, "capacity_tok_s"),
])
def test_bad_breakeven_arguments_name_the_field(kwargs: dict[str, object], field: str) -> None:
    arguments: dict[str, object] = {"count": 8, "usd_per_gpu_hour": "2.5",
                                    "api_output_usd_per_million": "15", **kwargs}
    with pytest.raises(ConfigError, match=f"^{field}:"):
        breakeven(**arguments)  # type: ignore[arg-type]


def test_unknown_gpu_lists_close_matches() -> None:
    with pytest.raises(UnknownModelError) as info:
        breakeven(gpu="h-100", count=1, usd_per_gpu_hour="2", api_output_usd_per_million="1")
    assert info.value.kind == "gpu"
    assert "h100" in info.value.suggestions


def test_serving_capacity_fills_memory_then_reads_the_roofline() -> None:
    capacity = serving_capacity("llama-3.1-70b", gpu="h100", count=8, precision="fp8")
    assert 1 <= capacity.batch <= 256
    assert capacity.tok_s == pytest.approx(capacity.roofline.decode_tok_s)


def test_serving_capacity_refuses_hardware_too_small() -> None:
    with pytest.raises(ConfigError, match="count:"):
        serving_capacity("kimi-k3", gpu="h100", count=8)


@given(gpus=st.integers(1, 1024), hours=st.integers(1, 24),
       rate=st.decimals(min_value=Decimal("0.01"), max_value=Decimal(100), places=2))
def test_rent_is_gpus_times_hours_times_rate(gpus: int, hours: int, rate: Decimal) -> None:
    rent = monthly_rent(gpus, rate, hours_per_day=hours)
    assert rent.monthly_cost_usd == gpus * hours * 30 * rate


@dataclass(frozen=True)
class _Record:
    model: str
    time: datetime
    actual_usd: Decimal
    tokens: dict[str, int] = field(default_factory=dict)


def test_ledger_spend_sums_one_models_records_in_the_window() -> None:
    records = [
        _Record("gpt-x", NOW - timedelta(days=1), Decimal("3.00"), {"input": 100_000,
                                                                    "cache_read": 50_000,
                                                                    "output": 100_000}),
        _Record("gpt-x", NOW - timedelta(days=40), Decimal("99"), {"output": 1}),
        _Record("other", NOW - timedelta(days=1), Decimal("99"), {"output": 1}),
    ]
    spend = ledger_spend(records, model="gpt-x", since=NOW - timedelta(days=30), until=NOW)
    assert (spend.calls, spend.actual_usd) == (1, Decimal("3.00"))
    assert (spend.input_tokens, spend.output_tokens) == (150_000, 100_000)
    assert spend.usd_per_million_output == Decimal("30")


def test_ledger_comparison_reads_the_real_ledger() -> None:
    ledger = open_ledger("memory://")
    for day in (1, 2, 45):
        rid = ledger.reserve([ScopeClaim("global", "all")], Decimal("1"),
                             CallInfo("openai", "gpt-x", "/v1/chat/completions"),
                             time=NOW - timedelta(days=day),
                             expires_at=NOW, tags={})
        ledger.settle(rid, Settlement(time=NOW - timedelta(days=day), actual_usd=Decimal("600"),
                                      tokens={"input": 10_000_000, "output": 20_000_000},
                                      usage_estimated=False, table_version="t", latency_s=1.0))
    spend = spend_from_ledger(ledger, model="gpt-x", now=NOW)
    assert spend.actual_usd == Decimal("1200") and spend.output_tokens == 40_000_000
    comparison = compare_with_ledger(spend, gpu="h100", count=1, usd_per_gpu_hour="2.50",
                                     capacity_tok_s=100, candidate="llama-3.1-8b")
    assert comparison.self_host_usd == Decimal("1800.00")
    assert comparison.saving_usd == Decimal("-600.00")
    assert comparison.breakeven.api_output_usd_per_million == Decimal("30")
    assert comparison.breakeven.breakeven_output_tokens_per_month == 60_000_000
    assert comparison.utilisation == pytest.approx(40_000_000 / (100 * 3600 * 24 * 30))
    sentence = comparison.sentence()
    assert "The last 30 days on gpt-x cost $1,200.00" in sentence
    assert "self-hosting llama-3.1-8b on 1 × h100 would cost $1,800.00" in sentence


def test_ledger_comparison_without_output_tokens_says_so() -> None:
    spend = ledger_spend([], model="gpt-x", since=NOW - timedelta(days=30), until=NOW)
    with pytest.raises(ConfigError, match="no output tokens"):
        compare_with_ledger(spend, count=1, usd_per_gpu_hour="2")
