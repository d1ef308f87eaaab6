"""What the ledger keeps for finance: each scope's limit on a record, adjustments by model.

``ledger`` (``tests/ledger_backends.py``) runs each test on memory, SQLite and Redis.
"""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from pathlib import Path

from spendguard import open_ledger
from spendguard._budget.ledger import Ledger, ScopeClaim, Settlement
from spendguard._budget.ledger.sqlite import SqliteLedger
from tests.ledger_helpers import START, call_info

D = Decimal


def test_a_record_carries_the_limit_of_each_scope_it_was_charged_to(ledger: Ledger) -> None:
    claims = [ScopeClaim("project", "all", D("10"), D("8")), ScopeClaim("run", "2031-01-31")]
    reservation = ledger.reserve(claims, D("1"), call_info(), time=START,
                                 expires_at=START + timedelta(minutes=15), tags={})
    ledger.settle(reservation, Settlement(START, D("0.5"), {"input": 1}, False, "t", 0.1))
    (record,) = ledger.records()
    assert record.scopes == ("project", "run")
    assert record.period_keys == ("all", "2031-01-31")
    assert record.limits_usd == (D("10"), None)


def test_an_adjustment_can_name_the_provider_and_model_it_corrects(ledger: Ledger) -> None:
    ledger.adjust([ScopeClaim("project", "all", D("10"))], D("-0.25"), time=START,
                  note="reconciled", provider="openai", model="gpt-4o-mini")
    ledger.adjust([], D("0.5"), time=START, note="manual")
    (record,) = ledger.records(model="gpt-4o-mini")
    assert (record.provider, record.model, record.status) == ("openai", "gpt-4o-mini",
                                                              "adjustment")
    assert record.limits_usd == (D("10"),)
    assert sorted(r.model for r in ledger.records()) == ["", "gpt-4o-mini"]
    assert ledger.verify() == []


def test_the_fields_survive_reopening_a_sqlite_ledger(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'l.db'}"
    first = SqliteLedger(tmp_path / "l.db", url=url)
    first.adjust([ScopeClaim("team", "2031-01", D("3"))], D("1"), time=START, note="n",
                 provider="anthropic", model="claude-haiku-4-5")
    first.close()
    (record,) = open_ledger(url).records()
    assert (record.provider, record.model, record.limits_usd) == (
        "anthropic", "claude-haiku-4-5", (D("3"),))
