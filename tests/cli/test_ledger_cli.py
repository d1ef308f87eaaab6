"""`spendguard ledger verify | recover | drain`."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

from click.testing import CliRunner

import spendguard
from spendguard._budget.ledger import CallInfo
from spendguard._budget.reservations import reserve_call
from spendguard.cli import main


def _spend(url: str, n: int) -> spendguard.Budget:
    budget = spendguard.Budget("10", ledger=url, scope="team")
    for _ in range(n):
        reserve_call(budget, Decimal("0.5"), call=CallInfo("openai", "gpt-4o-mini", "chat")
                     ).settle(actual_usd=Decimal("0.25"), tokens={"input": 10, "output": 5},
                              usage_estimated=False, table_version="t", latency_s=0.1)
    return budget


def test_verify_says_the_books_agree(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'l.db'}"
    _spend(url, 2)
    result = CliRunner().invoke(main, ["ledger", "verify", "--ledger", url])
    assert result.exit_code == 0, result.output
    assert "agree" in result.output


def test_drain_copies_each_call_once(tmp_path: Path) -> None:
    source, archive = f"sqlite:///{tmp_path / 'a.db'}", f"sqlite:///{tmp_path / 'b.db'}"
    _spend(source, 3)
    first = CliRunner().invoke(main, ["ledger", "drain", archive, "--ledger", source])
    again = CliRunner().invoke(main, ["ledger", "drain", archive, "--ledger", source])
    assert "wrote 3 new" in first.output
    assert "wrote 0 new" in again.output
    assert len(list(spendguard.open_ledger(archive).records())) == 3


def test_recover_charges_an_abandoned_call(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'l.db'}"
    past = datetime.now(UTC) - timedelta(days=1)
    budget = spendguard.Budget("10", ledger=url, scope="team", clock=lambda: past)
    reserve_call(budget, Decimal("0.5"), call=CallInfo("openai", "gpt-4o-mini", "chat"))
    result = CliRunner().invoke(main, ["ledger", "recover", "--ledger", url])
    assert "1 abandoned call(s)" in result.output
    assert spendguard.Budget("10", ledger=url, scope="team").spent == Decimal("0.5")


def test_drain_into_an_unknown_kind_of_ledger_names_the_problem(tmp_path: Path) -> None:
    source = f"sqlite:///{tmp_path / 'a.db'}"
    _spend(source, 1)
    result = CliRunner().invoke(main, ["ledger", "drain", "ftp://nowhere", "--ledger", source])
    assert result.exit_code == 2
    assert "ftp" in result.output
