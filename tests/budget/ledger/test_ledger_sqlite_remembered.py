"""A reservation this process remembers open, closed meanwhile by another process's ledger."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from pathlib import Path

from spendguard._budget.ledger import Settlement
from spendguard._budget.ledger.sqlite import SqliteLedger
from tests.budget.ledger.test_ledger import EXPIRY, LATER, claims
from tests.ledger_helpers import START, call_info


def _reserved(path: Path) -> tuple[SqliteLedger, str]:
    ours = SqliteLedger(path)
    reservation_id = ours.reserve(claims(project="10"), Decimal("4"), call_info(), time=START,
                                  expires_at=EXPIRY, tags={})
    SqliteLedger(path).recover_expired(EXPIRY)  # another process: charges the worst case
    return ours, reservation_id


def test_settling_a_reservation_another_process_recovered_corrects_the_charge(
        tmp_path: Path) -> None:
    ours, reservation_id = _reserved(tmp_path / "spend.db")
    ours.settle(reservation_id, Settlement(LATER, Decimal("1.5"), {"input": 10}, False, "t",
                                           0.1, None, "ok"))
    assert ours.totals("project", "all").spent_usd == Decimal("1.5")
    assert [(r.status, r.actual_usd) for r in ours.records()] == [
        ("recovered", Decimal("4")), ("adjustment", Decimal("-2.5"))]
    assert ours.verify() == []


def test_releasing_a_reservation_another_process_recovered_refunds_it(tmp_path: Path) -> None:
    ours, reservation_id = _reserved(tmp_path / "spend.db")
    assert ours.release(reservation_id, reason="http 500", time=LATER + timedelta(seconds=1))
    assert ours.totals("project", "all").spent_usd == 0
    assert ours.verify() == []
