"""``spendguard report``: the terminal table, --json, --html, and option errors."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest
from click.testing import CliRunner

from spendguard import open_ledger
from spendguard.cli import main
from tests.report_helpers import varied_ledger

D = Decimal


@pytest.fixture
def url(tmp_path: Path) -> str:
    varied_ledger(f"sqlite:///{tmp_path / 'ledger.db'}")
    return f"sqlite:///{tmp_path / 'ledger.db'}"


def test_the_table_shows_groups_budgets_and_the_ledgers_total(url: str) -> None:
    result = CliRunner().invoke(main, ["report", "--ledger", url, "--by", "model"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    header = next(line for line in lines if line.startswith("BY MODEL"))
    assert header.split() == ["BY", "MODEL", "CALLS", "INPUT", "TOK", "OUTPUT", "TOK",
                              "CACHE", "HIT", "SPENT", "SHARE"]
    total = sum((r.actual_usd for r in open_ledger(url).records()), D(0))
    total_line = next(line for line in lines if line.startswith("TOTAL"))
    assert f"${total:.4f}" in total_line and "100.0%" in total_line
    assert any(line.startswith("org/support") and "$0.50" in line for line in lines)
    assert "ESTIMATES" in result.output


def test_json_and_html_outputs(url: str, tmp_path: Path) -> None:
    page = tmp_path / "spend.html"
    result = CliRunner().invoke(main, ["report", "--ledger", url, "--by", "day", "--json",
                                       "--since", "2031-02-01", "--html", str(page)])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [g["name"] for g in data["groups"]] == ["2031-02-01", "2031-02-02", "2031-02-03"]
    assert page.read_text().startswith("<!DOCTYPE html>")
    assert f"wrote the report page to {page}" in result.stderr


@pytest.mark.parametrize(("args", "option", "fix"), [
    (["--by", "week"], "'--by'", "tag:KEY"),
    (["--since", "2031-1-5"], "'--since'", "2026-05-21"),
    (["--tag", "x y"], "'--tag'", "key=value"),
    (["--ledger", "file.db"], "'--ledger'", "sqlite:///"),
])
def test_bad_options_name_the_option_and_the_fix(args: list[str], option: str,
                                                 fix: str) -> None:
    result = CliRunner().invoke(main, ["report", *args])
    assert result.exit_code == 2
    assert option in result.output and fix in result.output
