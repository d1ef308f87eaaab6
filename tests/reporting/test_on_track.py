""""Are we on track this month?": spent so far, the forecast at the period's end, when the
limit runs out, the last period, refused and would-refuse calls — and the forecast backtested
on ledgers with a known trend."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pytest
from click.testing import CliRunner

import spendguard
from spendguard import Budget, BudgetWarning
from spendguard._budget.budget import CallInfo
from spendguard._budget.reservations import reserve_call
from spendguard._reporting.report import OnTrack, render_html
from spendguard.cli import main
from tests.finance_helpers import book
from tests.ledger_helpers import FakeClock

D = Decimal
JUNE = datetime(2031, 6, 1, 12, tzinfo=UTC)


def _month(url: str, scope: str, daily: list[str], *, limit: str = "100",
           start: datetime = JUNE, enforce: bool = True) -> None:
    """One call a day at noon, costing ``daily[d]`` on day d + 1."""
    clock = FakeClock(start)
    budget = Budget(limit, ledger=url, scope=scope, period="monthly", clock=clock,
                    enforce=enforce, warn_at=None)
    for amount in daily:
        book(budget, "gpt-4o-mini", {"input": 10, "output": 10}, actual_usd=amount,
             worst_usd=amount)
        clock.advance(days=1)


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> str:
    url = f"sqlite:///{tmp_path_factory.mktemp('on-track') / 'ledger.db'}"
    _month(url, "flat", ["1"] * 30)                                       # $1 a day
    _month(url, "growing", [str(D("0.1") * day) for day in range(1, 31)])  # $0.1 x day
    _month(url, "flat", ["2"] * 31, start=datetime(2031, 5, 1, 12, tzinfo=UTC))
    _month(url, "capped", ["1"] * 15, limit="20")                        # $1 a day to the 15th
    return url


def _track(url: str, scope: str, day: int) -> OnTrack:
    report = spendguard.report_spend(url, now=datetime(2031, 6, day, tzinfo=UTC))
    (found,) = [track for track in report.on_track if track.scope == scope]
    return found


def test_steady_spending_is_forecast_exactly_with_the_day_the_limit_runs_out(url: str) -> None:
    track = _track(url, "flat", 16)  # June 1-15 spent, 15 days left
    assert (track.period_key, track.spent_usd, track.daily_rate_usd) == ("2031-06", D(15), D(1))
    june = {use.scope: use.spent_usd for use in spendguard.report_spend(url).budgets}
    assert track.forecast_usd == D(30) == june["flat"]  # the backtest's error: none
    assert track.status == "on track" and track.runs_out_at is None
    assert (track.last_period_key, track.last_period_usd) == ("2031-05", D(62))
    assert track.elapsed_share == pytest.approx(0.5)
    capped = _track(url, "capped", 16)
    assert (capped.spent_usd, capped.forecast_usd, capped.status) == (D(15), D(30),
                                                                      "will exceed")
    assert capped.runs_out_at == datetime(2031, 6, 21, tzinfo=UTC)  # $20 at $1 a day


@pytest.mark.parametrize(("day", "forecast", "error"), [
    (8, "12", "-0.7419"), (16, "30", "-0.3548"), (24, "41.6", "-0.1054")])
def test_backtest_on_a_growing_ledger_trails_the_trend_by_a_known_error(
        url: str, day: int, forecast: str, error: str) -> None:
    actual = D("0.1") * sum(range(1, 31))  # what June really cost: $46.50
    track = _track(url, "growing", day)
    assert track.forecast_usd == D(forecast)
    assert ((track.forecast_usd - actual) / actual).quantize(D("0.0001")) == D(error)
    assert track.status == "on track" and track.runs_out_at is None


def test_refused_and_would_refuse_calls_are_counted_with_their_dollars(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    clock = FakeClock(datetime(2031, 6, 10, tzinfo=UTC))
    tight = Budget("1", ledger=url, scope="tight", period="monthly", clock=clock, warn_at=None)
    book(tight, "gpt-4o-mini", {"input": 10}, actual_usd="0.9", worst_usd="0.9")
    for _ in range(2):
        with pytest.raises(spendguard.BudgetExceeded):
            reserve_call(tight, D("0.25"), call=CallInfo("openai", "gpt-4o-mini", "chat"))
    with pytest.warns(BudgetWarning, match="would have refused"):
        _month(url, "watched", ["0.6", "0.6"], limit="1", enforce=False,
               start=datetime(2031, 6, 10, tzinfo=UTC))
    report = spendguard.report_spend(url, now=datetime(2031, 6, 20, tzinfo=UTC))
    tracks = {track.scope: track for track in report.on_track}
    assert (tracks["tight"].refused_calls, tracks["tight"].refused_usd) == (2, D("0.5"))
    assert (tracks["watched"].would_refuse_calls, tracks["watched"].would_refuse_usd) == (
        1, D("0.6"))
    assert report.total_usd == D("2.1")  # the refusal markers are not money


def test_report_shows_on_track_in_text_json_and_html(url: str, tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    runner = CliRunner()
    text = runner.invoke(main, ["report", "--ledger", url])
    assert text.exit_code == 0, text.output
    assert "ON TRACK" in text.stdout and "FORECAST" in text.stdout
    data = json.loads(runner.invoke(main, ["report", "--json", "--ledger", url]).stdout)
    scopes = {track["scope"] for track in data["on_track"]}
    assert scopes == {"flat", "growing", "capped"}
    assert {"forecast_usd", "runs_out_at", "last_period_usd", "refused_usd",
            "would_refuse_usd"} <= set(data["on_track"][0])
    assert runner.invoke(main, ["report", "--ledger", url, "--html", str(page)]).exit_code == 0
    html = page.read_text()
    assert "On track?" in html and "Forecast" in html and "Runs out" in html


def test_a_report_with_no_calendar_budget_has_no_forecast(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    book(Budget("5", ledger=url, scope="forever", clock=FakeClock()), "gpt-4o-mini",
         {"input": 10})
    assert spendguard.report_spend(url).on_track == []


def test_the_html_page_draws_the_forecast_pace_and_the_last_period(url: str) -> None:
    report = spendguard.report_spend(url, now=datetime(2031, 6, 16, tzinfo=UTC))
    page = render_html(report)
    top = max(report.on_track, key=lambda t: (t.forecast_usd, t.scope))
    assert page.count('class="pace"') == 1
    assert f"forecast pace of {top.scope}: {spendguard.format_usd(top.daily_rate_usd)}/day" \
        in page
    assert "last period 2031-05: $62.00" in page  # "flat" spent $2 a day in May
