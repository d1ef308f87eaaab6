"""Reconciliation with the providers' own reports: differences by day and model, adjustments."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pytest

import spendguard
from spendguard import (
    Budget,
    ConfigError,
    export_spend,
    open_ledger,
    reconcile_spend,
    report_spend,
    validate_focus,
)
from tests.finance_helpers import book, read_csv, total
from tests.ledger_helpers import FakeClock
from tests.reconcile_helpers import (
    DAY1,
    DAY2,
    anthropic_cost,
    anthropic_page,
    anthropic_usage,
    openai_cost,
    openai_files,
    openai_ledger,
    openai_page,
    openai_usage,
    write_json,
)

D = Decimal
NOW = datetime(2031, 1, 20, 12, tzinfo=UTC)


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'ledger.db'}"


def test_openai_reports_are_compared_per_day_and_model(url: str, tmp_path: Path) -> None:
    openai_ledger(url)
    result = reconcile_spend(openai_files(tmp_path), provider="openai", ledger=url)
    rows = {(d.day, d.model): d for d in result.differences}
    assert set(rows) == {(DAY1, "Credit"), (DAY1, "gpt-4o"), (DAY1, "gpt-4o-mini"),
                         (DAY2, "gpt-4o-mini")}
    mini = rows[(DAY1, "gpt-4o-mini")]  # the dated snapshot met its alias
    assert (mini.ledger_usd, mini.provider_usd, mini.token_differences) == (
        D("0.000435"), D("0.000435"), {})
    bypassed = rows[(DAY1, "gpt-4o")]
    assert bypassed.usd_difference == D("0.025")
    assert bypassed.token_differences == {"input": 10_000}
    credit = rows[(DAY1, "Credit")]
    assert not credit.attributable and credit.provider_usd == D("-5")
    assert [(d.day, d.model) for d in result.to_accept] == [(DAY1, "gpt-4o")]
    assert result.ledger_usd == D("0.035645")
    assert result.provider_usd == D("0.035645") + D("0.025") - 5


def test_accepting_records_explicit_adjustments_and_a_rerun_finds_nothing_more(
        url: str, tmp_path: Path) -> None:
    b = openai_ledger(url)
    before = {r.id: r for r in open_ledger(url).records()}
    files = openai_files(tmp_path)
    accepted = reconcile_spend(files, provider="openai", ledger=url, accept=True, now=NOW)
    (adjustment_id,) = accepted.accepted
    records = {r.id: r for r in open_ledger(url).records()}
    assert {k: v for k, v in records.items() if k in before} == before  # nothing edited
    adjustment = records[adjustment_id]
    assert (adjustment.status, adjustment.actual_usd, adjustment.provider, adjustment.model,
            adjustment.time, adjustment.scopes) == (
        "adjustment", D("0.025"), "openai", "gpt-4o", datetime(2031, 1, 10, tzinfo=UTC), ())
    assert adjustment.tags == {"reconciled": "openai"}
    assert adjustment.note is not None and "accepted 2031-01-20T12:00:00Z" in adjustment.note
    assert b.spent == D("0.035645")  # no budget was charged without scope=
    again = reconcile_spend(files, provider="openai", ledger=url)
    assert again.to_accept == []
    assert [d.model for d in again.mismatched] == ["Credit", "gpt-4o"]  # tokens still differ
    assert open_ledger(url).verify() == []
    # Exports and reports carry the adjustment, and still total the ledger.
    export_spend(tmp_path / "focus.csv", format="focus", ledger=url)
    rows = read_csv(tmp_path / "focus.csv")
    assert total(rows, "BilledCost") == D("0.035645") + D("0.025")
    (row,) = [r for r in rows if r["ChargeCategory"] == "Adjustment"]
    assert (row["SkuId"], row["BilledCost"], row["ChargePeriodStart"]) == (
        "gpt-4o", "0.025", "2031-01-10T00:00:00Z")
    assert validate_focus(tmp_path / "focus.csv") == []
    by_model = {g.name: g.spent_usd for g in report_spend(url).groups}
    assert by_model["gpt-4o"] == D("0.06")


def test_accepted_adjustments_can_be_charged_to_a_budget(url: str, tmp_path: Path) -> None:
    openai_ledger(url)
    reconcile_spend(openai_files(tmp_path), provider="openai", ledger=url, accept=True,
                    scope="app", period="monthly", now=NOW)
    ledger = open_ledger(url)
    assert ledger.totals("app", "2031-01").spent_usd == D("0.025")
    assert ledger.totals("app", "all").spent_usd == D("0.035645")


def test_anthropic_json_reports_are_read_in_cents_with_cache_writes(url: str,
                                                                   tmp_path: Path) -> None:
    clock = FakeClock(datetime(2031, 1, 10, 9, tzinfo=UTC))
    b = Budget("100", ledger=url, clock=clock)
    tokens = {"input": 1_000, "cache_read": 4_000, "cache_write_5m": 2_000,
              "cache_write_1h": 1_000, "output": 300}
    book(b, "claude-haiku-4-5", tokens)  # $0.001 + 0.0004 + 0.0025 + 0.002 + 0.0015
    usage = anthropic_page({DAY1: [anthropic_usage("claude-haiku-4-5-20251001", uncached=1_000,
                                                   cache_read=4_000, write_5m=2_000,
                                                   write_1h=1_000, output=300)]})
    costs = anthropic_page({DAY1: [
        anthropic_cost("claude-haiku-4-5-20251001", "uncached_input_tokens", "0.1"),
        anthropic_cost("claude-haiku-4-5-20251001", "cache_read_input_tokens", "0.04"),
        anthropic_cost("claude-haiku-4-5-20251001", "cache_creation.ephemeral_5m_input_tokens",
                       "0.25"),
        anthropic_cost("claude-haiku-4-5-20251001", "cache_creation.ephemeral_1h_input_tokens",
                       "0.2"),
        anthropic_cost("claude-haiku-4-5-20251001", "output_tokens", "0.15"),
        anthropic_cost(None, None, "2.5", cost_type="web_search",
                       description="Web search requests")]})
    result = reconcile_spend([write_json(tmp_path / "u.json", usage),
                              write_json(tmp_path / "c.json", costs)],
                             provider="anthropic", ledger=url)
    rows = {d.model: d for d in result.differences}
    haiku = rows["claude-haiku-4-5"]
    assert haiku.provider_usd == haiku.ledger_usd == D("0.0074")
    assert haiku.token_differences == {}
    assert haiku.ledger_tokens == {"input": 1_000, "cache_read": 4_000, "cache_write": 3_000,
                                   "output": 300}
    assert rows["Web search requests"].provider_usd == D("0.025")
    assert not rows["Web search requests"].attributable
    assert result.to_accept == []


def test_anthropic_cost_csv_is_read_like_the_json(url: str, tmp_path: Path) -> None:
    clock = FakeClock(datetime(2031, 1, 11, 9, tzinfo=UTC))
    book(Budget("100", ledger=url, clock=clock), "claude-sonnet-4-5",
         {"input": 1_000, "output": 1_000})  # $0.018
    csv_file = tmp_path / "cost.csv"
    csv_file.write_text(
        "starting_at,model,token_type,cost_type,amount,currency\n"
        "2031-01-11T00:00:00Z,claude-sonnet-4-5-20250929,uncached_input_tokens,tokens,0.3,USD\n"
        "2031-01-11T00:00:00Z,claude-sonnet-4-5-20250929,output_tokens,tokens,3.5,USD\n")
    usage_csv = tmp_path / "usage.csv"
    usage_csv.write_text(
        "date,model,uncached_input_tokens,cache_read_input_tokens,"
        "cache_creation.ephemeral_5m_input_tokens,output_tokens\n"
        "2031-01-11,claude-sonnet-4-5,1000,0,0,1100\n")
    result = reconcile_spend([csv_file, usage_csv], provider="anthropic", ledger=url,
                             accept=True, now=NOW)
    (row,) = result.differences
    assert (row.day, row.usd_difference, row.token_differences) == (DAY2, D("0.02"),
                                                                    {"output": 100})
    assert len(result.accepted) == 1


@pytest.mark.parametrize(("write", "provider", "says"), [
    (lambda p: write_json(p, anthropic_page({DAY1: []})), "openai",
     "use --provider anthropic"),
    (lambda p: write_json(p, openai_page({DAY1: []})), "anthropic", "use --provider openai"),
    (lambda p: write_json(p, openai_page({DAY1: [openai_cost("gpt-4o, input", "1")]})
                          | {"data": [{"start_time": 1, "end_time": 2, "results": [
                              {"object": "organization.costs.result", "line_item": "x, input",
                               "amount": {"value": "abc", "currency": "usd"}}]}]}),
     "openai", "data[0].results[0].amount.value: 'abc' is not an amount"),
    (lambda p: write_json(p, openai_page({DAY1: [openai_usage("gpt-4o", input_tokens=1)
                                                 | {"input_tokens": "many"}]})),
     "openai", "results[0].input_tokens: 'many' is not a token count"),
    (lambda p: write_json(p, anthropic_page({DAY1: [anthropic_cost("m", "output_tokens", "1")
                                                    | {"currency": "EUR"}]})),
     "anthropic", "'EUR'; spendguard keeps USD only"),
    (lambda p: write_json(p, {"data": []}), "openai", "covers no time"),
    (lambda p: p.write_text("not json {"), "openai", "save the response"),
    (lambda p: write_json(p, openai_page({DAY1: [openai_usage("", input_tokens=1)]})),
     "openai", "group_by=model"),
])
def test_unreadable_reports_name_the_file_and_field(tmp_path: Path,
                                                    write: Callable[[Path], object],
                                                    provider: str, says: str) -> None:
    path = tmp_path / "report.json"
    write(path)
    with pytest.raises(ConfigError, match=r"report\.json") as error:
        reconcile_spend([path], provider=provider, ledger="memory://")
    assert says in str(error.value)


def test_accept_needs_a_cost_report(tmp_path: Path) -> None:
    usage = write_json(tmp_path / "u.json", openai_page({DAY1: []}))
    with pytest.raises(ConfigError, match=r"^accept: .*cost report"):
        reconcile_spend([usage], provider="openai", ledger="memory://", accept=True)


@pytest.mark.parametrize(("options", "field"), [
    ({"provider": "mistral"}, "provider"), ({"tolerance_usd": "-1"}, "tolerance_usd"),
    ({"period": "weekly", "scope": "x"}, "period"), ({"period": "daily"}, "period")])
def test_bad_arguments_name_the_field(tmp_path: Path, options: dict[str, object],
                                      field: str) -> None:
    path = write_json(tmp_path / "c.json", openai_page({DAY1: []}))
    arguments: dict[str, object] = {"provider": "openai", **options}
    with pytest.raises(ConfigError, match=rf"^{field}: "):
        reconcile_spend([path], ledger="memory://", **arguments)  # type: ignore[arg-type]


def test_reconcile_spend_is_public() -> None:
    assert spendguard.reconcile_spend is reconcile_spend
