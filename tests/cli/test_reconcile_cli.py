"""``spendguard reconcile``: the differences table, --accept, --json, and option errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from spendguard import open_ledger
from spendguard.cli import main
from tests.reconcile_helpers import openai_files, openai_ledger


@pytest.fixture
def url(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    openai_ledger(url)
    return url


def test_the_table_shows_each_day_and_model_and_what_to_do(url: str, tmp_path: Path) -> None:
    files = [str(f) for f in openai_files(tmp_path)]
    result = CliRunner().invoke(main, ["reconcile", *files, "--provider", "openai",
                                       "--ledger", url])
    assert result.exit_code == 1, result.output  # a difference waits to be accepted
    out = result.output
    assert "2031-01-10  gpt-4o " in out and "+$0.025 !" in out and "input +10,000" in out
    assert "Credit (not a model)" in out
    assert "match" in out
    assert "Run again with --accept to record the 1 dollar difference(s)" in out
    assert not [r for r in open_ledger(url).records() if r.status == "adjustment"]


def test_accept_records_the_adjustments(url: str, tmp_path: Path) -> None:
    files = [str(f) for f in openai_files(tmp_path)]
    result = CliRunner().invoke(main, ["reconcile", *files, "--provider", "openai",
                                       "--ledger", url, "--accept"])
    assert result.exit_code == 0, result.output
    assert "Recorded 1 adjustment(s), +$0.025 in all" in result.output
    (adjustment,) = [r for r in open_ledger(url).records() if r.status == "adjustment"]
    assert adjustment.model == "gpt-4o"
    again = CliRunner().invoke(main, ["reconcile", *files, "--provider", "openai",
                                      "--ledger", url, "--json"])
    assert again.exit_code == 0, again.output
    data = json.loads(again.output)
    assert data["accepted"] == [] and data["unresolved"] == 0
    assert {row["model"]: row["usd_difference"] for row in data["rows"]}["gpt-4o"] == "0"


@pytest.mark.parametrize(("args", "option", "fix"), [
    (["--provider", "cohere"], "'--provider'", "'openai', 'anthropic'"),
    (["--provider", "openai", "--tolerance", "a cent"], "'--tolerance'", "0.01"),
    (["--provider", "openai", "--period", "daily"], "'--period'", "--scope"),
    (["--provider", "openai", "--scope", "app"], "'--scope'", "--accept"),
    (["--provider", "openai", "--ledger", "x.db"], "'--ledger'", "sqlite:///"),
])
def test_bad_options_name_the_option_and_the_fix(tmp_path: Path, args: list[str],
                                                 option: str, fix: str) -> None:
    report = tmp_path / "r.json"
    report.write_text("{}")
    result = CliRunner().invoke(main, ["reconcile", str(report), *args])
    assert result.exit_code == 2, result.output
    assert option in result.output and fix in result.output


def test_an_unreadable_report_is_an_error_naming_it(tmp_path: Path) -> None:
    report = tmp_path / "broken.json"
    report.write_text('{"data": "nope"}')
    result = CliRunner().invoke(main, ["reconcile", str(report), "--provider", "openai",
                                       "--ledger", "memory://"])
    assert result.exit_code == 1
    assert "broken.json: page 0 has no 'data' list" in result.output
