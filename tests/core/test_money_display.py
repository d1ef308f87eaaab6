"""Money shown to people: never a non-zero amount as $0.0000, any amount a ledger can hold,
limits within a sane range, and ledger text that cannot drive the terminal."""

from __future__ import annotations

import json
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

import spendguard
from spendguard import BudgetConfigError, format_usd
from spendguard._budget.ledger.base import ScopeClaim, Settlement
from spendguard._budget.ledger.sqlite import SqliteLedger
from spendguard._budget.reservations import reserve_call
from spendguard._core.money import MAX_LIMIT_USD, normalised
from spendguard._core.terminal import printable
from spendguard.cli import main
from tests.ledger_helpers import START, call_info

D = Decimal


@pytest.mark.parametrize(("amount", "shown"), [
    ("1234.56789", "$1,234.57"),                # $1 or more: to the cent
    ("250000", "$250,000.00"),
    ("0", "$0.00"),
    ("0.157508", "$0.1575"),                    # under $1: four significant digits
    ("0.5", "$0.50"),                           # ... trailing zeros dropped down to cents
    ("0.046180", "$0.04618"),
    ("0.00000123", "$0.00000123"),
    ("0.000007", "$0.000007"),
    ("-0.00004", "-$0.00004"),
    ("0.99996", "$1.00"),                       # rounds up to a dollar: the dollar rule
    ("-5", "-$5.00"),
    ("999000000000000000", "$999,000,000,000,000,000.00"),
    ("1e25", "$1.000000E+25"),
])
def test_format_usd_follows_the_one_money_rule(amount: str, shown: str) -> None:
    assert format_usd(D(amount)) == shown


def test_the_python_api_returns_normalised_decimals() -> None:
    assert [str(normalised(D(text))) for text in ("0E-7", "0.1000000", "1E+2", "-0.00")] == [
        "0", "0.1", "100", "0"]


@given(st.decimals(allow_nan=False, allow_infinity=False, min_value=D("-1e40"),
                   max_value=D("1e40")))
def test_a_non_zero_amount_is_never_shown_as_zero(amount: Decimal) -> None:
    shown = format_usd(amount)
    digits = shown.split("E")[0]
    assert (amount != 0) == any(ch in "123456789" for ch in digits)
    assert shown.startswith("-$") == (amount < 0 and digits.strip("-$0.,") != "")


def test_a_limit_above_the_range_is_a_budget_config_error_naming_the_field() -> None:
    with pytest.raises(BudgetConfigError, match="largest amount") as caught:
        spendguard.Budget("1e25")
    assert caught.value.field == "limit_usd"
    assert spendguard.Budget(MAX_LIMIT_USD).limit_usd == MAX_LIMIT_USD
    with pytest.raises(BudgetConfigError, match="limit_usd"):
        spendguard.Budget("10").child("run", limit_usd="1e13")


def _ledger_holding_extreme_amounts(path: Path) -> str:
    """Amounts a ledger written by anything may hold: huge, tiny, more digits than 28."""
    ledger = SqliteLedger(path)
    amounts = [("1e25", "1e24", "1e25"), ("0.001", "0.000000001", None),
               ("5", "1.123456789012345678901234567890123", "1e30")]
    for worst, actual, limit in amounts:
        claim = ScopeClaim("team", "all", None if limit is None else D(limit), None)
        call_id = ledger.reserve([claim], D(worst), call_info("gpt-4o"), time=START,
                                 expires_at=START + timedelta(hours=1),
                                 tags={"team": "a\x1b[31mred\x07\u202e"})
        ledger.settle(call_id, Settlement(START, D(actual), {"input": 10**30, "output": 5},
                                          False, "t", 0.1, None, "ok"))
    ledger.close()
    return f"sqlite:///{path}"


def test_reports_and_exports_handle_any_amount_the_ledger_holds_exactly(tmp_path: Path) -> None:
    url = _ledger_holding_extreme_amounts(tmp_path / "ledger.db")
    exact = "1000000000000000000000001.123456790012345678901234567890123"
    runner = CliRunner()
    as_json = runner.invoke(main, ["report", "--ledger", url, "--json"])
    assert as_json.exit_code == 0, as_json.output
    assert json.loads(as_json.stdout)["total"]["spent_usd"] == exact
    for by in ("model", "day", "scope", "tag:team"):
        text = runner.invoke(main, ["report", "--ledger", url, "--by", by,
                                    "--html", str(tmp_path / "r.html")])
        assert text.exit_code == 0, text.output
        assert "$1.000000E+24" in text.stdout
    for form in ("csv", "jsonl", "focus"):
        export = runner.invoke(main, ["export", "--ledger", url, "--format", form])
        assert export.exit_code == 0, export.output
        assert "$1.000000E+24 in all" in export.stderr


def test_tag_values_with_terminal_escapes_are_shown_not_obeyed(tmp_path: Path) -> None:
    url = _ledger_holding_extreme_amounts(tmp_path / "ledger.db")
    result = CliRunner().invoke(main, ["report", "--ledger", url, "--by", "tag:team"])
    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.stdout and "\x07" not in result.stdout
    assert "\u202e" not in result.stdout
    assert r"a\x1b[31mred\x07\u202e" in result.stdout


def test_printable_leaves_ordinary_text_alone_and_escapes_controls() -> None:
    assert printable("team:search/ü 東京") == "team:search/ü 東京"
    assert printable("a\nb\tc\x9b") == r"a\nb\tc\x9b"


def test_a_refusal_of_a_tiny_call_shows_its_amounts_not_zero() -> None:
    budget = spendguard.Budget("0.000001", ledger="memory://", warn_at=None)
    with pytest.raises(spendguard.BudgetExceeded) as caught:
        reserve_call(budget, D("0.0000123"), call=call_info())
    message = str(caught.value)
    assert "$0.0000123" in message and "$0.000001 " in message
