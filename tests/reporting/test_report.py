"""Spend reports: exact totals, groupings, cache, batch, estimates and budgets."""

from __future__ import annotations

import json
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import respx

import spendguard
from spendguard import Budget, ConfigError, open_ledger, render_report_text, report_spend
from spendguard._budget.budget import CallInfo
from spendguard._budget.reservations import reserve_call
from tests.finance_helpers import book, list_cost
from tests.ledger_helpers import FakeClock
from tests.provider_bodies import anthropic_message, chat_completion
from tests.report_helpers import varied_ledger

D = Decimal


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'ledger.db'}"


def ledger_total(url: str) -> Decimal:
    return sum((r.actual_usd for r in open_ledger(url).records()), D(0))


@respx.mock
def test_a_report_of_calls_through_guarded_clients_totals_the_ledger(url: str) -> None:
    respx.post("https://api.openai.com/v1/chat/completions").respond(200, json=chat_completion(
        prompt_tokens=1000, cached_tokens=400, completion_tokens=50))
    respx.post("https://api.anthropic.com/v1/messages").respond(200, json=anthropic_message(
        input_tokens=100, output_tokens=20, cache_read=900))
    b = Budget("1", ledger=url, scope="app")
    messages: Any = [{"role": "user", "content": "hi"}]
    spendguard.OpenAI(api_key="sk-x", budget=b).chat.completions.create(
        model="gpt-4o-mini", messages=messages, max_tokens=60)
    spendguard.Anthropic(api_key="sk-x", budget=b).messages.create(
        model="claude-haiku-4-5", messages=messages, max_tokens=60)
    report = report_spend(url)
    assert report.total_usd == b.spent == ledger_total(url)
    assert sum((g.spent_usd for g in report.groups), D(0)) == report.total_usd
    assert report.total.calls == 2
    # 400 of 1,000 OpenAI input tokens and 900 of 1,000 Anthropic ones came from the cache
    assert report.total.cache_hit_rate == pytest.approx(1300 / 2000)
    (budget_use,) = report.budgets
    assert (budget_use.scope, budget_use.spent_usd, budget_use.limit_usd) == ("app", b.spent,
                                                                             D("1"))


def test_totals_equal_the_ledger_after_crash_recovery_and_late_settles(url: str) -> None:
    org, clock = varied_ledger(url)
    vanished = reserve_call(org, D("0.0123"), call=CallInfo(
        provider="openai", model="gpt-4o", endpoint="chat", estimated_input_tokens=100,
        estimated_output_tokens=1000))
    late = reserve_call(org, D("0.02"), call=CallInfo(provider="openai", model="gpt-4o",
                                                      endpoint="chat"))
    clock.advance(hours=1)
    assert len(open_ledger(url).recover_expired(clock())) == 2
    late.settle(actual_usd=D("0.0051"), tokens={"input": 10, "output": 500},
                usage_estimated=False, table_version="t", latency_s=3600.0)
    for by in ("model", "day", "provider", "tag:feature"):
        report = report_spend(url, by=by)
        assert report.total_usd == ledger_total(url)
        assert sum((g.spent_usd for g in report.groups), D(0)) == report.total_usd
    report = report_spend(url)
    assert report.recovered_usd == D("0.0323")
    assert report.adjustments_usd == D("0.0051") - D("0.02")
    assert vanished.id in {r.id for r in open_ledger(url).records() if r.status == "recovered"}
    text = render_report_text(report)
    assert "charged for calls whose process vanished" in text
    assert f"${report.total_usd:.4f}" in text.replace(",", "")


def test_groupings(url: str) -> None:
    varied_ledger(url)
    by_model = report_spend(url, by="model")
    spends = [g.spent_usd for g in by_model.groups]
    assert spends == sorted(spends, reverse=True)  # the largest first
    assert {g.name: g.calls for g in by_model.groups} == {
        "gpt-4o": 3, "gpt-4o-mini": 3, "claude-haiku-4-5": 3, "claude-sonnet-4-5": 3}
    by_day = report_spend(url, by="day")
    assert [g.name for g in by_day.groups] == ["2031-01-31", "2031-02-01", "2031-02-02",
                                              "2031-02-03"]
    by_scope = report_spend(url, by="scope")
    assert by_scope.overlapping
    scopes = {g.name: g.spent_usd for g in by_scope.groups}
    assert scopes["org"] == scopes["org/search"] + scopes["org/support"] == \
        by_scope.total_usd
    by_tag = {g.name for g in report_spend(url, by="tag").groups}
    assert by_tag == {"feature=chat", "feature=summaries"}
    assert {g.name for g in report_spend(url, by="tag:feature").groups} == {"chat",
                                                                             "summaries"}
    assert {g.name for g in report_spend(url, by="tag:team").groups} == {"(no team)"}
    assert {g.name for g in report_spend(url, by="provider").groups} == {"anthropic",
                                                                          "openai"}


def test_cache_hit_rate_batch_share_and_estimate_error(url: str) -> None:
    b = Budget("10", ledger=url, scope="app", clock=FakeClock())
    book(b, "gpt-4o-mini", {"input": 600, "cache_read": 400, "output": 10},
         estimated_input=1100)
    batch_tokens = {"input": 1000, "output": 10}
    book(b, "gpt-4o-mini", batch_tokens, endpoint="batch", estimated_input=900,
         actual_usd=list_cost("gpt-4o-mini", batch_tokens, batch=True))
    report = report_spend(url)
    assert report.total.cache_hit_rate == pytest.approx(400 / 2000)
    assert report.batch_share == pytest.approx(
        float(list_cost("gpt-4o-mini", batch_tokens, batch=True) / report.total_usd))
    (check,) = report.estimates
    assert (check.estimated_input_tokens, check.actual_input_tokens) == (2000, 2000)
    assert check.input_error == 0
    assert check.reserved_usd == sum((r.estimated_usd for r in open_ledger(url).records()),
                                     D(0))


def test_budgets_show_each_scopes_latest_period_against_its_limit(url: str) -> None:
    clock = FakeClock()
    daily = Budget("0.5", ledger=url, scope="daily", period="daily", clock=clock)
    book(daily, "gpt-4o", {"input": 10_000})
    clock.advance(days=1)
    book(daily, "gpt-4o", {"input": 20_000})
    (use,) = report_spend(url).budgets
    assert (use.period_key, use.spent_usd, use.limit_usd) == ("2031-02-01", D("0.05"), D("0.5"))
    assert use.used == pytest.approx(0.1)
    text = render_report_text(report_spend(url))
    assert "daily   2031-02-01" in text and "10.0%" in text


def test_zero_dollar_markers_are_not_spend(url: str) -> None:
    book(Budget("1", ledger=url, clock=FakeClock()), "gpt-4o", {"input": 10})
    open_ledger(url).adjust([], D(0), time=FakeClock()() + timedelta(seconds=1),
                            note="cascade outcome", tags={"cascade.outcome": "pass"})
    report = report_spend(url, by="tag")
    assert [g.name for g in report.groups] == ["(untagged)"]
    assert report.total.calls == 1


def test_as_dict_is_exact_json(url: str) -> None:
    varied_ledger(url)
    data = json.loads(json.dumps(report_spend(url).as_dict()))
    assert D(data["total"]["spent_usd"]) == ledger_total(url)
    assert {b["scope"] for b in data["budgets"]} == {"org", "org/search", "org/support"}


@pytest.mark.parametrize(("options", "field"), [
    ({"by": "colour"}, "by"), ({"since": "soon"}, "since"), ({"tag": "=x"}, "tag")])
def test_bad_arguments_name_the_field(url: str, options: dict[str, Any], field: str) -> None:
    with pytest.raises(ConfigError, match=rf"^{field}: "):
        report_spend(url, **options)


def test_report_spend_is_public() -> None:
    assert spendguard.report_spend is report_spend


def test_the_period_shown_includes_both_ends(url: str) -> None:
    varied_ledger(url)
    text = render_report_text(report_spend(url, since="2031-02-01", until="2031-02"))
    assert text.startswith("spendguard report: 2031-02-01 to 2031-02-28 (UTC)")
