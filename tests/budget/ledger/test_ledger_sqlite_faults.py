"""A SQLite ledger file that cannot be used: each fault is a LedgerError naming the file, the
cause and the fix; what was recorded stays; spent never silently resets.

The tests run as any user (root included), so where the operating system would refuse, SQLite
is made to meet the same condition: a page limit is a full disk to SQLite, a ``mode=ro``
connection is a read-only file, and "unable to open database file" is what a read-only
folder gives (its -wal/-shm files cannot be created).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import spendguard
from spendguard import Budget, LedgerError
from spendguard._budget.ledger.sqlite import SqliteLedger
from spendguard._budget.reservations import reserve_call
from spendguard.cli import main
from tests.ledger_helpers import call_info, spend

_real_connect: Callable[..., sqlite3.Connection] = sqlite3.connect


def _ledger_with_one_call(tmp_path: Path) -> tuple[Path, str]:
    path = tmp_path / "ledger.db"
    ledger = SqliteLedger(path)
    spend(Budget("10", scope="team", ledger=ledger), "0.5", "0.25")
    ledger.close()
    return path, f"sqlite:///{path}"


def _patch_writable_connects(monkeypatch: pytest.MonkeyPatch,
                             change: Callable[[Any, dict[str, Any]], sqlite3.Connection],
                             path: Path | None = None) -> None:
    """Make ``change`` open every writable connection (to ``path`` only, if given); read-only
    (URI) ones stay real."""
    def connect(target: Any, *args: Any, **kwargs: Any) -> sqlite3.Connection:
        if kwargs.get("uri") or (path is not None and Path(target) != path):
            return _real_connect(target, *args, **kwargs)
        return change(target, kwargs)
    monkeypatch.setattr(sqlite3, "connect", connect)


def test_a_full_disk_refuses_the_call_naming_the_file_and_keeps_what_was_recorded(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path, _ = _ledger_with_one_call(tmp_path)
    ledger = SqliteLedger(path)
    budget = Budget("10", scope="team", ledger=ledger)

    def full(target: Any, kwargs: dict[str, Any]) -> sqlite3.Connection:
        db = _real_connect(target, **kwargs)
        pages = db.execute("PRAGMA page_count").fetchone()[0]
        db.execute(f"PRAGMA max_page_count = {pages}")  # no room to grow: SQLITE_FULL
        return db

    ledger.close()
    _patch_writable_connects(monkeypatch, full)
    held = []
    with pytest.raises(LedgerError) as caught:
        for _ in range(200):  # the first calls may still fit in free pages
            held.append(reserve_call(budget, Decimal("0.01"), call=call_info()))
    message = str(caught.value)
    assert str(path) in message and "full" in message and "free some space" in message
    assert "cannot rollback" not in message
    monkeypatch.undo()
    ledger.close()
    assert ledger.verify() == []
    assert [r.actual_usd for r in ledger.records(scope="team")] == [Decimal("0.25")]
    assert budget.spent == Decimal("0.25")
    assert budget.reserved == Decimal("0.01") * len(held)  # the refused one holds nothing


def test_a_read_only_ledger_file_refuses_writes_but_report_export_and_verify_read_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path, url = _ledger_with_one_call(tmp_path)
    _patch_writable_connects(monkeypatch, lambda target, kwargs: _real_connect(
        f"file:{target}?mode=ro", **{**kwargs, "uri": True}))
    with pytest.raises(LedgerError, match="read-only") as caught:
        spend(Budget("10", scope="team", ledger=SqliteLedger(path)), "0.5", "0.25")
    assert str(path) in str(caught.value)
    runner = CliRunner()
    report = runner.invoke(main, ["report", "--ledger", url, "--by", "scope"])
    assert report.exit_code == 0, report.output
    assert "team" in report.output and "$0.25" in report.output
    export = runner.invoke(main, ["export", "--ledger", url])
    assert export.exit_code == 0 and "0.25" in export.output
    verify = runner.invoke(main, ["ledger", "verify", "--ledger", url])
    assert verify.exit_code == 0 and "agree" in verify.output


def test_a_read_only_folder_is_named_as_the_cause_and_read_commands_still_work(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path, url = _ledger_with_one_call(tmp_path)

    def no_folder_access(target: Any, kwargs: dict[str, Any]) -> sqlite3.Connection:
        raise sqlite3.OperationalError("unable to open database file")

    _patch_writable_connects(monkeypatch, no_folder_access, path)
    with pytest.raises(LedgerError) as caught:
        SqliteLedger(path)
    assert str(path) in str(caught.value) and "writable" in str(caught.value)
    result = CliRunner().invoke(main, ["report", "--ledger", url, "--json"])
    assert result.exit_code == 0, result.output
    assert '"spent_usd": "0.25"' in result.output
    copy = f"sqlite:///{tmp_path / 'elsewhere.db'}"  # and it can be moved somewhere writable
    drained = CliRunner().invoke(main, ["ledger", "drain", copy, "--ledger", url])
    assert drained.exit_code == 0 and "wrote 1 new" in drained.output, drained.output


def test_an_empty_file_where_a_ledger_was_is_refused_not_taken_as_a_new_ledger(
        tmp_path: Path) -> None:
    path, url = _ledger_with_one_call(tmp_path)
    path.write_bytes(b"")  # truncated: its spending is gone, and must not read as $0 spent
    with pytest.raises(LedgerError, match="empty") as caught:
        SqliteLedger(path)
    assert str(path) in str(caught.value) and "backup" in str(caught.value)
    assert path.stat().st_size == 0  # left as found, for whoever restores it
    result = CliRunner().invoke(main, ["report", "--ledger", url])
    assert result.exit_code == 1 and "empty" in result.output


def test_a_new_ledger_file_is_never_seen_empty(tmp_path: Path) -> None:
    path = tmp_path / "new" / "ledger.db"
    SqliteLedger(path).close()
    SqliteLedger(path).close()  # a second process opening it finds a whole ledger
    assert path.stat().st_size > 0
    assert sorted(p.name for p in path.parent.iterdir()) == ["ledger.db"]


def test_a_ledger_with_corrupted_pages_is_refused_on_open_and_reads_raise_ledger_errors(
        tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    ledger = SqliteLedger(path)
    budget = Budget("100", scope="team", ledger=ledger)
    for _ in range(40):
        spend(budget, "0.5", "0.25")
    ledger.close()
    data = bytearray(path.read_bytes())
    page = 4096
    data[3 * page:6 * page] = b"\xa5" * (3 * page)  # damage pages 4-6; the header survives
    path.write_bytes(bytes(data))
    with pytest.raises(LedgerError, match="corrupted") as caught:
        SqliteLedger(path)
    assert str(path) in str(caught.value)
    with pytest.raises(LedgerError, match="corrupted"):
        list(spendguard.open_ledger(f"sqlite:///{path}", read_only=True).records())
    result = CliRunner().invoke(main, ["export", "--ledger", f"sqlite:///{path}"])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert result.output.startswith("Error: ") and str(path) in result.output


def test_a_thread_that_cannot_open_its_connection_gets_a_ledger_error_naming_the_cause(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path, _ = _ledger_with_one_call(tmp_path)
    ledger = SqliteLedger(path)  # this thread's connection is made

    def no_folder_access(target: Any, kwargs: dict[str, Any]) -> sqlite3.Connection:
        raise sqlite3.OperationalError("unable to open database file")

    _patch_writable_connects(monkeypatch, no_folder_access, path)
    caught: list[BaseException] = []

    def reserve_in_a_new_thread() -> None:
        try:
            reserve_call(Budget("10", scope="team", ledger=ledger), Decimal("0.5"),
                         call=call_info())
        except BaseException as exc:  # handed to the test's thread
            caught.append(exc)

    thread = threading.Thread(target=reserve_in_a_new_thread)
    thread.start()
    thread.join()
    assert len(caught) == 1 and isinstance(caught[0], LedgerError), caught
    assert str(path) in str(caught[0]) and "writable" in str(caught[0])
    monkeypatch.undo()
    assert ledger.totals("team", "all").spent_usd == Decimal("0.25")
    ledger.close()
