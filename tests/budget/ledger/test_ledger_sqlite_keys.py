"""The SQLite ledger's rows keyed by their ids, and its open calls found in the tail or parked."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from datetime import datetime, timedelta
from decimal import Decimal
from itertools import count
from pathlib import Path

import pytest

from spendguard import LedgerError
from spendguard._budget.ledger import Settlement, engine
from spendguard._budget.ledger import migrations as migrations_module
from spendguard._budget.ledger.sqlite import SqliteLedger, records_query
from spendguard._budget.ledger.sqlite_keys import TAIL_ROWS, call_key
from tests.budget.ledger.test_ledger import EXPIRY, LATER, claims
from tests.ledger_helpers import START, call_info

D = Decimal


def _reserve(ledger: SqliteLedger, amount: str = "1", *, expires_at: datetime = EXPIRY) -> str:
    return ledger.reserve(claims(project="1000"), D(amount), call_info(), time=START,
                          expires_at=expires_at, tags={})


def _settle(ledger: SqliteLedger, reservation_id: str, actual: str = "0.5") -> None:
    ledger.settle(reservation_id, Settlement(LATER, D(actual), {"input": 10}, False, "t", 0.1,
                                             None, "ok"))


def _rows(path: Path) -> list[tuple[int, str, str]]:
    with sqlite3.connect(path) as db:
        return db.execute("SELECT rowid, id, state FROM calls ORDER BY rowid").fetchall()


def _parked(path: Path) -> list[str]:
    with sqlite3.connect(path) as db:
        return [call_id for (call_id,) in db.execute("SELECT call_id FROM calls_parked")]


def _indexes(path: Path) -> list[str]:
    with sqlite3.connect(path) as db:
        return [name for (name,) in db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'calls' "
            "ORDER BY name")]


def _renumber(path: Path) -> None:
    """Rowids 1, 2, 3... in the rows' order, as the table had before its rows were keyed."""
    with sqlite3.connect(path) as db:
        rowids = [rowid for (rowid,) in db.execute("SELECT rowid FROM calls ORDER BY rowid")]
        db.execute("UPDATE calls SET rowid = -rowid")
        db.executemany("UPDATE calls SET rowid = ? WHERE rowid = ?",
                       [(number, -rowid) for number, rowid in enumerate(rowids, 1)])


def _ids(*heads: str) -> Iterator[str]:
    """Call ids beginning with ``heads`` in turn, each made unique by its last digits."""
    for number, head in zip(count(), heads, strict=False):
        yield f"{head}{number:0{32 - len(head)}x}"


def test_a_reservation_writes_no_index_but_the_one_on_time(tmp_path: Path) -> None:
    ledger = SqliteLedger(tmp_path / "ledger.db")
    _settle(ledger, _reserve(ledger))
    assert _indexes(tmp_path / "ledger.db") == ["calls_time"]
    assert [(rowid, call_id) for rowid, call_id, _ in _rows(tmp_path / "ledger.db")] == [
        (call_key(call_id), call_id) for _, call_id, _ in _rows(tmp_path / "ledger.db")]
    ledger.close()


def test_a_call_is_found_by_its_id_from_another_instance(tmp_path: Path) -> None:
    reservation_id = _reserve(SqliteLedger(tmp_path / "ledger.db"))
    other = SqliteLedger(tmp_path / "ledger.db")  # remembers nothing: reads it by id
    _settle(other, reservation_id)
    assert other.totals("project", "all").spent_usd == D("0.5")
    with pytest.raises(LedgerError, match="already settled"):
        _settle(SqliteLedger(tmp_path / "ledger.db"), reservation_id)
    assert other.verify() == []


def test_ids_that_want_the_same_key_take_the_next_free_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    head = "0123456789abcdef"
    monkeypatch.setattr(engine, "_new_call_id", _ids(head, head, head).__next__)
    ledger = SqliteLedger(tmp_path / "ledger.db")
    first, second, third = (_reserve(ledger) for _ in range(3))
    assert [rowid - call_key(first) for rowid, _, _ in _rows(tmp_path / "ledger.db")] == [
        0, 1, 2]
    other = SqliteLedger(tmp_path / "ledger.db")
    for reservation_id in (third, first, second):
        _settle(other, reservation_id)
    assert [state for _, _, state in _rows(tmp_path / "ledger.db")] == ["settled"] * 3
    assert other.verify() == []


def test_an_id_is_stored_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine, "_new_call_id", lambda: "0123456789abcdef" + "0" * 16)
    ledger = SqliteLedger(tmp_path / "ledger.db")
    _reserve(ledger)
    with pytest.raises(LedgerError, match="UNIQUE"):
        _reserve(ledger)
    assert ledger.totals("project", "all").reserved_usd == D("1")  # the refused one rolled back


def test_ids_that_are_not_hex_have_keys_too(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    names = iter(["call one", "call two", "x"])
    monkeypatch.setattr(engine, "_new_call_id", names.__next__)
    ledger = SqliteLedger(tmp_path / "ledger.db")
    reserved = [_reserve(ledger) for _ in range(3)]
    other = SqliteLedger(tmp_path / "ledger.db")
    for reservation_id in reserved:
        _settle(other, reservation_id)
    assert other.totals("project", "all").spent_usd == D("1.5")
    assert sorted(record.id for record in other.records()) == sorted(reserved)


def test_a_call_that_outlives_the_tail_is_parked_and_recovered_when_it_expires(
        tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    ledger = SqliteLedger(path)
    long_call = _reserve(ledger, "4")
    for _ in range(TAIL_ROWS + 3):
        _settle(ledger, _reserve(ledger, expires_at=EXPIRY + timedelta(hours=1)))
    assert _parked(path) == [long_call]
    other = SqliteLedger(path)  # another process, after the call's expiry
    assert other.recover_expired(EXPIRY - timedelta(microseconds=1)) == []
    assert other.recover_expired(EXPIRY) == [long_call]
    assert _parked(path) == []
    assert other.totals("project", "all").spent_usd == D("4") + D("0.5") * (TAIL_ROWS + 3)
    assert other.verify() == []


def test_the_next_reservation_recovers_an_expired_parked_call(tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    ledger = SqliteLedger(path)
    long_call = _reserve(ledger, "4")
    for _ in range(TAIL_ROWS):
        _settle(ledger, _reserve(ledger, expires_at=EXPIRY + timedelta(hours=1)))
    assert _parked(path) == [long_call]
    other = SqliteLedger(path)
    other.reserve(claims(project="1000"), D("1"), call_info(), time=EXPIRY,
                  expires_at=EXPIRY + timedelta(minutes=15), tags={})
    assert other.totals("project", "all").reserved_usd == D("1")
    assert [r.id for r in other.records() if r.status == "recovered"] == [long_call]
    assert _parked(path) == []


def test_a_parked_call_settled_in_time_is_charged_once(tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    ledger = SqliteLedger(path)
    long_call = _reserve(ledger, "4")
    for _ in range(TAIL_ROWS):
        _settle(ledger, _reserve(ledger, expires_at=EXPIRY + timedelta(hours=1)))
    _settle(ledger, long_call, "2")
    assert _parked(path) == [long_call]  # left for the next look at expired calls
    assert ledger.recover_expired(EXPIRY + timedelta(days=1)) == []
    assert _parked(path) == []
    assert ledger.totals("project", "all").spent_usd == D("2") + D("0.5") * TAIL_ROWS
    assert ledger.verify() == []


def test_a_call_reserved_below_the_tail_is_parked_as_it_is_inserted(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "ledger.db"
    ledger = SqliteLedger(path)
    for _ in range(TAIL_ROWS):
        _settle(ledger, _reserve(ledger))
    # An id older than every row's (a clock set back): its key is below the tail.
    monkeypatch.setattr(engine, "_new_call_id", lambda: "0000000000001" + "0" * 19)
    early = _reserve(ledger, "3")
    assert _rows(path)[0][1] == early
    assert _parked(path) == [early]
    assert SqliteLedger(path).recover_expired(EXPIRY) == [early]


def test_a_ledger_whose_rows_were_renumbered_is_keyed_again_when_opened(tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    ledger = SqliteLedger(path)
    open_id = _reserve(ledger)
    _settle(ledger, _reserve(ledger))
    ledger.close()
    _renumber(path)  # what a VACUUM that did not keep rowids would leave
    assert [rowid for rowid, _, _ in _rows(path)] == [1, 2]
    reopened = SqliteLedger(path)
    assert [(rowid, call_id) for rowid, call_id, _ in _rows(path)] == [
        (call_key(call_id), call_id) for _, call_id, _ in _rows(path)]
    _settle(reopened, open_id)
    assert reopened.verify() == []


def test_an_older_ledger_is_keyed_by_id_and_parks_its_open_calls_when_upgraded(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "old.db"
    with monkeypatch.context() as before:  # a file made before m007: rowids 1, 2, 3
        before.setattr(migrations_module, "MIGRATIONS", migrations_module.MIGRATIONS[:6])
        ledger = SqliteLedger(path)
        _settle(ledger, _reserve(ledger))
        still_open = _reserve(ledger, "4")
        _settle(ledger, _reserve(ledger))
        ledger.close()
        _renumber(path)
    assert "calls_open_expiry" in _indexes(path)
    old_rows = [(call_id, state) for _, call_id, state in _rows(path)]

    upgraded = SqliteLedger(path)
    assert [(call_id, state) for _, call_id, state in _rows(path)] == old_rows
    assert [(rowid, call_id) for rowid, call_id, _ in _rows(path)] == [
        (call_key(call_id), call_id) for _, call_id, _ in _rows(path)]
    assert _indexes(path) == ["calls_time"]
    assert _parked(path) == [still_open]
    assert upgraded.totals("project", "all").reserved_usd == D("4")
    assert upgraded.verify() == []
    assert SqliteLedger(path).recover_expired(EXPIRY) == [still_open]
    assert upgraded.totals("project", "all").spent_usd == D("5")
    with sqlite3.connect(path) as db:
        assert [name for (name,) in db.execute(
            "SELECT name FROM _migrations ORDER BY rowid DESC LIMIT 2")] == [
            "m008_time_index_by_second", "m007_calls_keyed_by_id"]


def test_a_ledger_upgraded_to_the_time_index_by_second_reads_the_same_records(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "old.db"
    with monkeypatch.context() as before:  # a file made before m008: the index on the text
        before.setattr(migrations_module, "MIGRATIONS", migrations_module.MIGRATIONS[:7])
        ledger = SqliteLedger(path)
        for seconds in (7200, 0, 3600, 0.5, 1):
            at = START + timedelta(seconds=seconds)
            reservation_id = ledger.reserve(claims(), D("1"), call_info(), time=at,
                                            expires_at=EXPIRY, tags={})
            _settle(ledger, reservation_id)
        old_records = list(ledger.records())
        old_window = list(ledger.records(since=START + timedelta(seconds=0.5),
                                         until=START + timedelta(seconds=3600)))
        ledger.close()
    with sqlite3.connect(path) as db:
        assert "strftime" not in _index_sql(db)
    # Read as it is (a reader migrates nothing), through the index the file has.
    reader = SqliteLedger(path, read_only=True)
    assert list(reader.records()) == old_records
    assert not reader._time_by_second()  # so it reads by the time text, which is indexed
    reader.close()
    with sqlite3.connect(path) as db:
        assert "strftime" not in _index_sql(db)
        for bounds in ((None, None), (START, START + timedelta(hours=1))):
            sql, params = records_query(since=bounds[0], until=bounds[1], by_second=False)
            plan = [step[3] for step in db.execute(f"EXPLAIN QUERY PLAN {sql}", params)]
            assert any("USING INDEX calls_time" in step for step in plan), plan
            assert "USE TEMP B-TREE FOR ORDER BY" not in plan, plan
        sql, params = records_query()  # by the second, on an index of the text: sorts all
        plan = [step[3] for step in db.execute(f"EXPLAIN QUERY PLAN {sql}", params)]
        assert "USE TEMP B-TREE FOR ORDER BY" in plan, plan

    upgraded = SqliteLedger(path)
    assert list(upgraded.records()) == old_records
    assert [r.time - START for r in old_records] == [
        timedelta(seconds=s) for s in (0, 0.5, 1, 3600, 7200)]
    assert list(upgraded.records(since=START + timedelta(seconds=0.5),
                                 until=START + timedelta(seconds=3600))) == old_window
    assert [r.time - START for r in old_window] == [timedelta(seconds=0.5),
                                                    timedelta(seconds=1)]
    assert upgraded.verify() == []
    assert upgraded._time_by_second()
    upgraded.close()
    with sqlite3.connect(path) as db:
        assert "strftime('%s', time)" in _index_sql(db)


def _index_sql(db: sqlite3.Connection) -> str:
    (sql,) = db.execute("SELECT sql FROM sqlite_master WHERE name = 'calls_time'").fetchone()
    return str(sql)
