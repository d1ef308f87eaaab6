"""The FOCUS validator: every problem named by row and column."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from click.testing import CliRunner

from spendguard import Budget, ConfigError, FocusProblem, export_spend, validate_focus
from spendguard.cli import main
from tests.finance_helpers import book, read_csv
from tests.ledger_helpers import FakeClock

Row = dict[str, str]


@pytest.fixture
def good_rows(tmp_path: Path) -> list[Row]:
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    b = Budget("10", ledger=url, scope="team", clock=FakeClock())
    book(b, "gpt-4o-mini", {"input": 1000, "cache_read": 24, "output": 300})
    book(b, "claude-haiku-4-5", {"input": 10, "cache_write_1h": 2048, "output": 7})
    export_spend(tmp_path / "good.csv", format="focus", ledger=url)
    return read_csv(tmp_path / "good.csv")


def write(path: Path, rows: list[Row], header: list[str] | None = None) -> Path:
    with path.open("w", encoding="utf-8", newline="") as stream:
        writer = csv.DictWriter(stream, fieldnames=header or list(rows[0]), extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    return path


def broken(tmp_path: Path, rows: list[Row], row: int, **changes: str) -> list[FocusProblem]:
    rows = [dict(r) for r in rows]
    rows[row - 1].update(changes)
    return validate_focus(write(tmp_path / "broken.csv", rows))


def test_a_spendguard_export_conforms(good_rows: list[Row], tmp_path: Path) -> None:
    assert validate_focus(write(tmp_path / "again.csv", good_rows)) == []


@pytest.mark.parametrize(("row", "changes", "column", "says"), [
    (2, {"ListCost": "0.1"}, "ListCost", "ListUnitPrice x PricingQuantity"),
    (3, {"ContractedCost": "1"}, "ContractedCost", "ContractedUnitPrice x PricingQuantity"),
    (1, {"BilledCost": "1.5E-7"}, "BilledCost", "plain decimal"),
    (1, {"BilledCost": "+1"}, "BilledCost", "plain decimal"),
    (1, {"EffectiveCost": "$1"}, "EffectiveCost", "plain decimal"),
    (4, {"BilledCost": ""}, "BilledCost", "must not be empty"),
    (1, {"ChargePeriodStart": "2031-01-31 23:00:00"}, "ChargePeriodStart", "YYYY-MM-DD"),
    (1, {"ChargePeriodEnd": "2031-01-31T22:00:00Z"}, "ChargePeriodEnd", "is not after"),
    (1, {"BillingPeriodEnd": "2031-01-31T23:30:00Z"}, "ChargePeriodStart", "inside the billing"),
    (2, {"ChargeCategory": "Fee"}, "ChargeCategory", "is not one of"),
    (2, {"ChargeClass": "Refund"}, "ChargeClass", "is not one of"),
    (2, {"ServiceCategory": "AI"}, "ServiceCategory", "is not one of"),
    (5, {"BillingCurrency": "usd"}, "BillingCurrency", "ISO 4217"),
    (1, {"Tags": "{not json"}, "Tags", "not valid JSON"),
    (1, {"Tags": '{"a": [1]}'}, "Tags", "not objects or arrays"),
    (1, {"SkuPriceDetails": "[]"}, "SkuPriceDetails", "JSON object"),
    (3, {"PricingQuantity": ""}, "PricingQuantity", "not a Correction"),
    (3, {"ConsumedUnit": ""}, "ConsumedUnit", "must not be empty"),
    (3, {"SkuPriceId": ""}, "SkuPriceId", "not a Correction"),
    (2, {"ChargeCategory": "Tax"}, "PricingQuantity", "Tax row"),
    (2, {"ChargeCategory": "Credit"}, "ConsumedQuantity", "only Usage consumes"),
])
def test_each_broken_rule_is_named_by_row_and_column(
        good_rows: list[Row], tmp_path: Path, row: int, changes: Row, column: str,
        says: str) -> None:
    problems = broken(tmp_path, good_rows, row, **changes)
    assert any(p.row == row and p.column == column and says in p.message
               for p in problems), problems
    assert {p.row for p in problems} == {row}


def test_a_correction_may_differ_from_its_unit_price(good_rows: list[Row],
                                                     tmp_path: Path) -> None:
    assert broken(tmp_path, good_rows, 1, ChargeClass="Correction", ListCost="9",
                  PricingQuantity="") == []


def test_header_problems_are_row_zero(good_rows: list[Row], tmp_path: Path) -> None:
    header = [name for name in good_rows[0] if name != "ServiceName"] + ["Team"]
    rows = [{**row, "Team": "x"} for row in good_rows]
    problems = validate_focus(write(tmp_path / "h.csv", rows, header))
    assert [(p.row, p.column) for p in problems] == [(0, "ServiceName"), (0, "Team")]
    assert str(problems[1]) == ("header, column Team: is not a FOCUS column; custom columns "
                                "must start with 'x_'")


def test_a_short_row_and_an_empty_file_are_problems(good_rows: list[Row],
                                                    tmp_path: Path) -> None:
    path = write(tmp_path / "s.csv", good_rows)
    with path.open("a", encoding="utf-8") as stream:
        stream.write("1,2,3\r\n")
    (problem,) = validate_focus(path)
    assert (problem.row, problem.column) == (len(good_rows) + 1, "(all)")
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    assert validate_focus(empty)[0].message.startswith("the file is empty")


def test_an_unreadable_file_is_a_config_error(tmp_path: Path) -> None:
    binary = tmp_path / "x.csv"
    binary.write_bytes(b"\xff\xfe\x00bad")
    with pytest.raises(ConfigError, match=r"^path: cannot read"):
        validate_focus(binary)


def test_the_cli_prints_problems_and_exits_1(good_rows: list[Row], tmp_path: Path) -> None:
    runner = CliRunner()
    good = write(tmp_path / "good2.csv", good_rows)
    ok = runner.invoke(main, ["export", "validate", str(good)])
    assert ok.exit_code == 0 and "conforms to FOCUS 1.2" in ok.output
    bad_rows = [dict(r) for r in good_rows]
    bad_rows[1]["ListCost"] = "7"
    bad = write(tmp_path / "bad.csv", bad_rows)
    failed = runner.invoke(main, ["export", "validate", str(bad)])
    assert failed.exit_code == 1
    assert "row 2, column ListCost: 7 is not ListUnitPrice x PricingQuantity" in failed.output
    as_json = runner.invoke(main, ["export", "validate", "--json", str(bad)])
    assert as_json.exit_code == 1 and '"column": "ListCost"' in as_json.output
