"""``spendguard export``: formats, the default ledger, and errors that name the option."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest
from click.testing import CliRunner

from spendguard import Budget, validate_focus
from spendguard.cli import main
from tests.finance_helpers import book, csv_rows, list_cost, read_csv, total
from tests.ledger_helpers import FakeClock

D = Decimal


def test_export_reads_the_default_ledger_as_open_ledger_resolves_it(tmp_path: Path) -> None:
    b = Budget("10", scope="app", clock=FakeClock())  # the default ledger in $SPENDGUARD_HOME
    book(b, "gpt-4o-mini", {"input": 1000, "output": 100})
    result = CliRunner().invoke(main, ["export"])
    assert result.exit_code == 0, result.output
    (row,) = csv_rows(result.stdout)
    assert D(row["actual_usd"]) == b.spent
    assert "wrote 1 csv rows" in result.stderr


def test_spendguard_ledger_names_the_ledger(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"sqlite:///{tmp_path / 'elsewhere.db'}"
    book(Budget("10", ledger=url, clock=FakeClock()), "gpt-4o", {"input": 10})
    monkeypatch.setenv("SPENDGUARD_LEDGER", url)
    assert len(csv_rows(CliRunner().invoke(main, ["export"]).stdout)) == 1
    monkeypatch.delenv("SPENDGUARD_LEDGER")
    assert csv_rows(CliRunner().invoke(main, ["export"]).stdout) == []
    assert len(csv_rows(CliRunner().invoke(main, ["export", "--ledger", url]).stdout)) == 1


def test_a_focus_export_to_a_file_validates_and_matches_the_ledger(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'l.db'}"
    clock = FakeClock()
    b = Budget("10", ledger=url, scope="team:search", clock=clock)
    book(b, "claude-haiku-4-5", {"input": 100, "cache_read": 5000, "output": 300})
    clock.advance(days=2)
    book(b, "gpt-4o-mini", {"input": 100, "output": 3})
    out = tmp_path / "focus.csv"
    result = CliRunner().invoke(main, [
        "export", "--format", "focus", "--ledger", url, "--aggregate", "day",
        "--account", "anthropic=org-123", "--since", "2031-01", "--until", "2031-01-31",
        "-o", str(out)])
    assert result.exit_code == 0, result.output
    rows = read_csv(out)
    assert {row["BillingAccountId"] for row in rows} == {"org-123"}
    # the gpt-4o-mini call, in February, is left out
    assert total(rows, "BilledCost") == b.spent - list_cost("gpt-4o-mini",
                                                            {"input": 100, "output": 3})
    assert validate_focus(out) == []
    assert f"to {out}" in result.stderr


@pytest.mark.parametrize(("args", "option", "fix"), [
    (["--format", "xlsx"], "'--format'", "'csv', 'jsonl', 'focus'"),
    (["--since", "yesterday"], "'--since'", "write 2026-05"),
    (["--until", "2031-02-30"], "'--until'", "2026-05-21T10:00:00Z"),
    (["--tag", "a b"], "'--tag'", "key=value"),
    (["--ledger", "mysql://x"], "'--ledger'", "sqlite:///"),
    (["--aggregate", "day"], "'--aggregate'", "--format focus"),
    (["--format", "focus", "--account", "openai"], "'--account'", "openai=org-abc123"),
])
def test_bad_arguments_name_the_option_and_the_fix(args: list[str], option: str,
                                                   fix: str) -> None:
    result = CliRunner().invoke(main, ["export", *args])
    assert result.exit_code == 2
    assert option in result.output and fix in result.output


def test_since_after_until_is_refused() -> None:
    result = CliRunner().invoke(main, ["export", "--since", "2031-02", "--until", "2031-01"])
    assert result.exit_code == 1
    assert "until:" in result.output and "swap them" in result.output
