"""Prices as functions of the call's time: dated changes in force from their day, through theirs."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import respx

import spendguard
from spendguard import PriceFileError, PriceTable, Usage
from tests.provider_bodies import chat_completion

OPENAI_CHAT = "https://api.openai.com/v1/chat/completions"
LAST_3X = datetime(2027, 2, 28, 23, 59, 59, tzinfo=UTC)
FIRST_6X = datetime(2027, 3, 1, 0, 0, 0, tzinfo=UTC)
ULTRAFAST = Usage(input_tokens=100_000, output_tokens=100_000, service_tier="ultrafast")


def test_ultrafast_is_3x_through_february_2027_and_6x_from_march() -> None:
    # gpt-6.2-sol: $2 in, $10 out per million; (0.2 + 1) x 3 = 3.6, then x 6 = 7.2
    before = spendguard.cost("gpt-6.2-sol", ULTRAFAST, at=LAST_3X)
    after = spendguard.cost("gpt-6.2-sol", ULTRAFAST, at=FIRST_6X)
    assert before.total == Decimal("3.6") and after.total == Decimal("7.2")
    assert before.effective_from is None and after.effective_from == date(2027, 3, 1)
    table = PriceTable.bundled()
    assert before.table_version == table.version
    assert after.table_version == f"{table.version}@2027-03-01"
    assert after.as_dict()["effective_from"] == "2027-03-01"


def test_the_call_day_is_read_in_utc() -> None:
    # 20:00 on 28 February at UTC-5 is already 1 March in UTC
    evening = datetime(2027, 2, 28, 20, 0, tzinfo=timezone(timedelta(hours=-5)))
    assert spendguard.cost("gpt-6.2-sol", ULTRAFAST, at=evening).total == Decimal("7.2")
    assert spendguard.cost("gpt-6.2-sol", ULTRAFAST, at=date(2027, 2, 28)).total == Decimal(
        "3.6")


def test_a_change_with_an_end_day_returns_to_the_entry_rates_after_it() -> None:
    table = PriceTable.bundled().with_overrides({"models": {"gpt-5": {
        "changes": [{"from": "2027-01-10", "until": "2027-01-20",
                     "usd_per_million": {"input": "1"}, "source": "https://example.com/promo",
                     "note": "launch promotion"}],
        "source": "https://example.com/promo", "as_of": "2026-12-06"}}})
    prices = table.periods("gpt-5")
    assert [(p.effective_from, p.effective_until) for p in prices] == [
        (None, date(2027, 1, 9)), (date(2027, 1, 10), date(2027, 1, 20)),
        (date(2027, 1, 21), date(2027, 2, 28)), (date(2027, 3, 1), None)]
    rates = [table.get("gpt-5", day).input_usd_per_million
             for day in (date(2027, 1, 9), date(2027, 1, 10), date(2027, 1, 20),
                         date(2027, 1, 21))]
    assert rates == [Decimal("1.25"), 1, 1, Decimal("1.25")]
    promo = table.get("gpt-5", date(2027, 1, 15))
    assert promo.source == "https://example.com/promo" and promo.change == "launch promotion"
    assert table.get("gpt-5", date(2027, 1, 9)).change is None
    # the default's ultrafast change still applies to the entry, on its own day
    assert table.get("gpt-5", date(2027, 3, 1)).modifier("ultrafast").multiplier == 6


def test_a_change_that_ends_before_it_starts_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "mine.toml"
    path.write_text('[models."house"]\nprovider = "openai"\n'
                    "usd_per_million = { input = 1, output = 2 }\n"
                    "context_window = 1000\nmax_output_tokens = 100\n"
                    'source = "rate card"\nas_of = 2026-11-01\n'
                    'changes = [{ from = 2027-02-01, until = 2027-01-01, '
                    'usd_per_million = { input = 2 }, source = "rate card" }]\n')
    with pytest.raises(PriceFileError, match=r"changes: .*cannot end before it starts"):
        spendguard.load_price_file(path)


def test_a_change_without_a_source_is_refused() -> None:
    with pytest.raises(PriceFileError, match=r"changes\.\d+\.source: Field required"):
        PriceTable.bundled().with_overrides({"models": {"gpt-5": {
            "changes": [{"from": "2027-01-10", "usd_per_million": {"input": "1"}}],
            "source": "t", "as_of": "2026-12-06"}}})


def test_a_file_without_dated_changes_loads_as_before(tmp_path: Path) -> None:
    path = tmp_path / "plain.toml"
    path.write_text('[models."house"]\nprovider = "openai"\n'
                    "usd_per_million = { input = 1, output = 2 }\n"
                    "context_window = 1000\nmax_output_tokens = 100\n"
                    'source = "rate card"\nas_of = 2026-11-01\n')
    table = spendguard.load_price_file(path)
    assert table.periods("house") == (table.get("house"),)
    assert table.get("house", date(2030, 1, 1)).table_version == table.version


def _ultrafast_call(ledger_url: str, now: datetime) -> tuple[spendguard.Budget, Any]:
    budget = spendguard.Budget("100", ledger=ledger_url, clock=lambda: now)
    client = spendguard.OpenAI(api_key="sk-test", budget=budget)
    body = {**chat_completion("gpt-6.2-sol", prompt_tokens=10, completion_tokens=500),
            "service_tier": "ultrafast"}
    with respx.mock:
        route = respx.post(OPENAI_CHAT).respond(200, json=body)
        client.chat.completions.create(model="gpt-6.2-sol", messages=[
            {"role": "user", "content": "Say hi"}], max_tokens=500,
            extra_body={"service_tier": "ultrafast"})
        assert route.called
    return budget, route


@pytest.mark.parametrize(("now", "multiplier", "suffix"), [(LAST_3X, 3, ""),
                                                           (FIRST_6X, 6, "@2027-03-01")])
def test_the_guard_estimates_and_settles_at_the_rates_of_the_call_time(
        tmp_path: Path, now: datetime, multiplier: int, suffix: str) -> None:
    ledger_url = f"sqlite:///{tmp_path / 'ledger.db'}"
    budget, _ = _ultrafast_call(ledger_url, now)
    # 10 in x $2 + 500 out x $10, per million, x the ultrafast multiplier of that day
    assert budget.spent == Decimal("0.00502") * multiplier
    [record] = spendguard.open_ledger(ledger_url).records()
    assert record.actual_usd == Decimal("0.00502") * multiplier
    assert record.table_version == PriceTable.bundled().version + suffix
    # the reservation at the same day's rates: the 10 input tokens written to the cache at
    # $2.50, 500 output tokens at $10
    assert record.estimated_usd == Decimal("0.005025") * multiplier


def test_deepseek_bills_one_list_since_the_night_discount_ended_and_the_v3_2_cut_after() -> None:
    usage = Usage(input_tokens=400, cache_read_tokens=600, output_tokens=500)
    by_day = {day: spendguard.cost("deepseek/deepseek-chat", usage, at=day).total
              for day in (date(2025, 9, 4), date(2025, 9, 5), date(2025, 9, 28),
                          date(2025, 9, 29), date(2026, 12, 6))}
    assert by_day == {
        date(2025, 9, 4): Decimal("0.000700"),     # 400 x 0.27 + 600 x 0.07 + 500 x 1.10
        date(2025, 9, 5): Decimal("0.001106"),     # 400 x 0.56 + 600 x 0.07 + 500 x 1.68
        date(2025, 9, 28): Decimal("0.001106"),
        date(2025, 9, 29): Decimal("0.0003388"),   # 400 x 0.28 + 600 x 0.028 + 500 x 0.42
        date(2026, 12, 6): Decimal("0.0003388"),
    }
    reasoner = spendguard.cost("deepseek/deepseek-reasoner", usage, at=date(2026, 12, 6))
    assert reasoner.total == by_day[date(2026, 12, 6)]  # one list for both models
