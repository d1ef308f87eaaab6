"""The records a call leaves, field for field, whichever way it was closed and by whom.

The transactional ledgers carry one call object from its reserve to its close and build its
record only when it is read; these pin that what they keep is exactly what the call was
reserved and closed with, on memory and on SQLite, also when the close is made by another
instance reading the reservation from the file.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path

from spendguard import SpendRecord
from spendguard._budget.ledger import CallInfo, ScopeClaim, Settlement
from spendguard._budget.ledger.memory import MemoryLedger
from spendguard._budget.ledger.sqlite import SqliteLedger
from tests.ledger_helpers import START

D = Decimal
EXPIRY = START + timedelta(minutes=15)
INFO = CallInfo(provider="openai", model="gpt-test", endpoint="chat", attempt=2,
                request_id="req-sent", prompt_hash="h-1", prompt_text="hello",
                estimated_input_tokens=10, estimated_output_tokens=100, input_exact=False,
                end_user="user-7")
CLAIMS = [ScopeClaim("project", "all", D("10.00"), D("8")), ScopeClaim("run", "all")]


def _reserve(ledger: MemoryLedger | SqliteLedger, *, expires_at: datetime = EXPIRY) -> str:
    return ledger.reserve(CLAIMS, D("2.50"), INFO, time=START, expires_at=expires_at,
                          tags={"team": "search"})


def _expected(call_id: str, **closed: object) -> SpendRecord:
    fields: dict[str, object] = {
        "id": call_id, "time": START, "scopes": ("project", "run"), "tags": {"team": "search"},
        "provider": "openai", "model": "gpt-test", "endpoint": "chat", "tokens": {},
        "estimated_usd": D("2.50"), "actual_usd": D(0), "usage_estimated": False,
        "table_version": "", "latency_s": None, "request_id": "req-sent", "attempt": 2,
        "status": "open", "prompt_hash": "h-1", "prompt_text": "hello",
        "estimated_input_tokens": 10, "estimated_output_tokens": 100, "input_exact": False,
        "note": None, "period_keys": ("all", "all"), "limits_usd": (D("10.00"), None)}
    fields.update(closed)
    return SpendRecord(**fields)  # type: ignore[arg-type]


def _ledgers(tmp_path: Path) -> list[tuple[MemoryLedger | SqliteLedger,
                                           MemoryLedger | SqliteLedger]]:
    """(the reserving ledger, the closing one): the same one, and two SQLite instances."""
    memory = MemoryLedger()
    sqlite = SqliteLedger(tmp_path / "one.db")
    return [(memory, memory), (sqlite, sqlite),
            (SqliteLedger(tmp_path / "two.db"), SqliteLedger(tmp_path / "two.db"))]


def test_a_settled_record_keeps_what_was_reserved_and_what_the_settle_said(
        tmp_path: Path) -> None:
    for reserving, closing in _ledgers(tmp_path):
        call_id = _reserve(reserving)
        closing.settle(call_id, Settlement(START + timedelta(seconds=3), D("0.75"),
                                           {"input": 12, "output": 30}, True, "t-2", 1.5,
                                           None, "stream_broken", "usage estimated"))
        (record,) = reserving.records()
        assert record == _expected(call_id, tokens={"input": 12, "output": 30},
                                   actual_usd=D("0.75"), usage_estimated=True,
                                   table_version="t-2", latency_s=1.5, status="stream_broken",
                                   note="usage estimated")
        assert str(record.limits_usd[0]) == "10.00"  # an amount keeps the text it came in
        assert reserving.verify() == [] and closing.verify() == []


def test_a_released_record_keeps_what_was_reserved_and_the_reason(tmp_path: Path) -> None:
    for reserving, closing in _ledgers(tmp_path):
        call_id = _reserve(reserving)
        assert closing.release(call_id, reason="connect failed", time=START)
        (record,) = reserving.records()
        assert record == _expected(call_id, status="released", note="connect failed")
        assert reserving.verify() == [] and closing.verify() == []


def test_a_recovered_record_keeps_what_was_reserved_and_is_charged_its_worst_case(
        tmp_path: Path) -> None:
    for reserving, closing in _ledgers(tmp_path):
        call_id = _reserve(reserving, expires_at=START)
        assert closing.recover_expired(START + timedelta(minutes=1)) == [call_id]
        (record,) = reserving.records()
        assert record.note is not None and record.note.startswith("recovered: ")
        assert record == _expected(call_id, actual_usd=D("2.50"), usage_estimated=True,
                                   status="recovered", note=record.note)
        assert reserving.verify() == [] and closing.verify() == []
