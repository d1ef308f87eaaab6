"""The SQLite ledger: location, URLs, migrations, crash recovery, what is (never) stored."""

from __future__ import annotations

import os
import signal
import sqlite3
import warnings
from collections.abc import Iterator
from dataclasses import fields
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest

import spendguard
from spendguard import Budget, BudgetExceeded, ConfigError, LedgerError, SpendRecord, open_ledger
from spendguard._budget.ledger import Totals, default_ledger_path
from spendguard._budget.ledger import migrations as migrations_module
from spendguard._budget.ledger.migrations import migrate
from spendguard._budget.ledger.sqlite import SqliteLedger, records_query
from spendguard._budget.reservations import reserve_call
from tests.ledger_helpers import START, FakeClock, call_info, settle, spend, worker

D = Decimal


def tables(db_path: Path) -> dict[str, list[str]]:
    db = sqlite3.connect(db_path)
    try:
        names = [name for (name,) in db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
            "ORDER BY name")]
        return {name: [column[1] for column in db.execute(f"PRAGMA table_info({name})")]
                for name in names}
    finally:
        db.close()


def test_the_default_ledger_is_a_sqlite_file_in_spendguard_home(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch
                                                                 ) -> None:
    monkeypatch.setenv("SPENDGUARD_HOME", str(tmp_path / "home"))
    ledger = open_ledger()
    assert isinstance(ledger, SqliteLedger)
    assert ledger.path == tmp_path / "home" / "ledger.db" == default_ledger_path()
    assert ledger.path.exists()


def test_without_spendguard_home_the_ledger_lives_in_the_user_data_dir(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import platformdirs

    monkeypatch.delenv("SPENDGUARD_HOME")
    monkeypatch.setattr(platformdirs, "user_data_dir",
                        lambda name, appauthor: str(tmp_path / "data" / name))
    assert default_ledger_path() == tmp_path / "data" / "spendguard" / "ledger.db"


def test_spendguard_ledger_names_the_default_ledger(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPENDGUARD_LEDGER", f"sqlite:///{tmp_path}/elsewhere.db")
    ledger = open_ledger()
    assert isinstance(ledger, SqliteLedger) and ledger.path == tmp_path / "elsewhere.db"
    monkeypatch.setenv("SPENDGUARD_LEDGER", "memory://shared-by-env")
    assert open_ledger() is open_ledger("memory://shared-by-env")


def test_one_ledger_instance_per_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    absolute = open_ledger(f"sqlite:///{tmp_path}/a.db")
    assert open_ledger("sqlite:///a.db") is absolute  # relative to the working directory
    assert open_ledger(tmp_path / "a.db") is absolute
    assert open_ledger("memory://x") is open_ledger("memory://x")
    assert open_ledger("memory://") is not open_ledger("memory://")


@pytest.mark.parametrize("url", ["mysql://db", "ledger.db", "sqlite://", "sqlite:///"])
def test_a_bad_ledger_url_is_a_config_error_saying_what_to_write(url: str) -> None:
    with pytest.raises(ConfigError, match=r"ledger: .*sqlite:///"):
        open_ledger(url)


def test_an_unwritable_location_is_a_ledger_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a directory")
    with pytest.raises(LedgerError, match="cannot open the ledger"):
        SqliteLedger(tmp_path / "file" / "ledger.db")


def test_migrations_build_the_schema_once_and_record_their_names(tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    SqliteLedger(path).close()
    SqliteLedger(path).close()  # a second open applies nothing
    schema = tables(path)
    assert sorted(schema) == ["_migrations", "batch_items", "batch_jobs", "calls",
                              "calls_parked", "crossings", "events", "totals"]
    assert schema["events"] == ["id", "call_id", "kind", "time", "amount_usd", "detail"]
    assert schema["totals"] == ["scope", "period_key", "spent_usd", "reserved_usd", "calls"]
    db = sqlite3.connect(path)
    assert [name for (name,) in db.execute("SELECT name FROM _migrations")] == [
        "m001_initial", "m002_batch_jobs", "m003_call_counts",
        "m004_events_without_autoincrement", "m005_open_calls_held_apart",
        "m006_events_read_from_calls", "m007_calls_keyed_by_id",
        "m008_time_index_by_second"]
    assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    db.close()


def test_a_new_migration_is_applied_on_open_to_an_existing_ledger(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "ledger.db"
    SqliteLedger(path).close()

    def m002_add_notes(db: sqlite3.Connection) -> None:
        db.execute("ALTER TABLE calls ADD COLUMN reviewer TEXT")

    monkeypatch.setattr(migrations_module, "MIGRATIONS",
                        [*migrations_module.MIGRATIONS, m002_add_notes])
    SqliteLedger(path).close()
    assert "reviewer" in tables(path)["calls"]
    db = sqlite3.connect(path, isolation_level=None)
    assert migrate(db) == []
    db.close()


def test_an_old_ledger_keeps_its_events_and_their_ids_when_upgraded(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "old.db"
    url = f"sqlite:///{path}"
    with monkeypatch.context() as before:  # a file made before the events table was rebuilt
        before.setattr(migrations_module, "MIGRATIONS", migrations_module.MIGRATIONS[:3])
        budget = Budget("10", scope="project", ledger=SqliteLedger(path, url=url))
        spend(budget, "1", "0.25")
        reserve_call(budget, D("1"), call=call_info()).release("http 500")
        budget.ledger.close()
    db = sqlite3.connect(path)
    old_events = db.execute("SELECT * FROM events ORDER BY id").fetchall()
    assert "AUTOINCREMENT" in db.execute(
        "SELECT sql FROM sqlite_master WHERE name = 'events'").fetchone()[0]
    db.close()

    upgraded = Budget("10", scope="project", ledger=SqliteLedger(path, url=url))
    spend(upgraded, "1", "0.5")
    db = sqlite3.connect(path)
    events = db.execute("SELECT * FROM events ORDER BY id").fetchall()
    schema = db.execute("SELECT sql FROM sqlite_master WHERE name = 'events'").fetchone()[0]
    db.close()
    assert "AUTOINCREMENT" not in schema
    # Kept as they were; the calls made since are their own log (read from their rows).
    assert events == old_events
    assert upgraded.ledger.totals("project", "all").spent_usd == D("0.75")
    assert upgraded.ledger.verify() == []


def test_a_settle_closes_its_own_reservation_after_the_file_renumbered_its_rows(
        tmp_path: Path) -> None:
    ledger = SqliteLedger(tmp_path / "ledger.db")
    budget = Budget("10", scope="project", ledger=ledger)
    first = reserve_call(budget, D("1"), call=call_info())
    second = reserve_call(budget, D("2"), call=call_info())
    other = sqlite3.connect(tmp_path / "ledger.db", isolation_level=None)
    # What a VACUUM may do to a table's rowids: the two open rows trade theirs.
    other.execute("UPDATE calls SET rowid = 1000 WHERE rowid = 1")
    other.execute("UPDATE calls SET rowid = 1 WHERE rowid = 2")
    other.execute("UPDATE calls SET rowid = 2 WHERE rowid = 1000")
    other.close()
    settle(first, "0.5")
    assert ledger.totals("project", "all") == Totals(D("0.5"), D("2"), 2)
    assert [(record.estimated_usd, record.actual_usd) for record in ledger.records()] == [
        (D("1"), D("0.5"))]
    settle(second, "1.5")
    assert ledger.totals("project", "all") == Totals(D("2.0"), D("0"), 2)
    assert ledger.verify() == []


def test_a_failing_migration_leaves_the_ledger_as_it_was(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "ledger.db"
    SqliteLedger(path).close()

    def m002_broken(db: sqlite3.Connection) -> None:
        db.execute("CREATE TABLE half_done (x)")
        db.execute("SELECT * FROM no_such_table")

    monkeypatch.setattr(migrations_module, "MIGRATIONS",
                        [*migrations_module.MIGRATIONS, m002_broken])
    with pytest.raises(LedgerError):
        SqliteLedger(path)
    assert "half_done" not in tables(path)


def test_spending_survives_reopening_the_file(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/ledger.db"
    spend(Budget("10", scope="project", ledger=url), "1", "0.25")
    reopened = SqliteLedger(tmp_path / "ledger.db")  # a new instance, as another process has
    assert reopened.totals("project", "all").spent_usd == D("0.25")
    assert [record.actual_usd for record in reopened.records()] == [D("0.25")]


def test_a_new_ledger_file_has_small_pages_and_writers_sync_only_at_checkpoints(
        tmp_path: Path) -> None:
    ledger = SqliteLedger(tmp_path / "ledger.db")
    db = ledger._connection()
    assert db.execute("PRAGMA page_size").fetchone() == (1024,)
    assert db.execute("PRAGMA synchronous").fetchone() == (1,)  # NORMAL
    # Checkpoints every 4 MiB of WAL (1,024 commits of up to 4 pages) on their own thread;
    # the writers' own automatic checkpoint is the backstop, at 16 MiB.
    assert ledger._checkpointer is not None and ledger._checkpointer.every == 1024
    assert db.execute("PRAGMA wal_autocheckpoint").fetchone() == (16384,)
    ledger.close()


def test_a_ledger_made_with_other_pages_keeps_them_and_checkpoints_every_4_mib(
        tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA page_size=4096")
    db.execute("PRAGMA journal_mode=WAL")
    migrate(db)
    db.close()
    ledger = SqliteLedger(path)
    connection = ledger._connection()
    assert connection.execute("PRAGMA page_size").fetchone() == (4096,)
    assert ledger._checkpointer is not None and ledger._checkpointer.every == 256
    assert connection.execute("PRAGMA wal_autocheckpoint").fetchone() == (4096,)
    ledger.close()


def _rows_in_the_file_alone(path: Path, copy_to: Path) -> int:
    """The calls in the database file without its WAL: what checkpoints copied back."""
    copy_to.write_bytes(path.read_bytes())
    db = sqlite3.connect(copy_to)
    try:
        return int(db.execute("SELECT count(*) FROM calls").fetchone()[0])
    finally:
        db.close()


def test_the_wal_is_copied_back_on_a_thread_of_its_own_not_by_a_call(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/ledger.db"
    ledger = open_ledger(url)
    assert isinstance(ledger, SqliteLedger) and ledger._checkpointer is not None
    checkpointer = ledger._checkpointer
    checkpointer.every = 8  # a reserve and a settle are two commits: a checkpoint each 4 calls
    budget = Budget("100", scope="project", ledger=url)
    for _ in range(4):
        spend(budget, "0.5", "0.25")
    assert checkpointer.wait_for_runs(1, timeout=30)
    assert checkpointer.last is not None and checkpointer.last[0] == 0  # not busy
    assert checkpointer.last[1] == checkpointer.last[2] > 0  # every frame copied back
    assert _rows_in_the_file_alone(tmp_path / "ledger.db", tmp_path / "copy.db") == 4
    # Copied whole before the next commit: that commit starts the WAL from its top.
    spend(budget, "0.5", "0.25")
    frames = sqlite3.connect(tmp_path / "ledger.db", isolation_level=None).execute(
        "PRAGMA wal_checkpoint(PASSIVE)").fetchall()[0][1]
    assert 0 < frames < checkpointer.last[1]
    assert [r.actual_usd for r in ledger.records()] == [D("0.25")] * 5
    ledger.close()


def test_a_failed_background_checkpoint_is_logged_and_the_calls_go_on(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    url = f"sqlite:///{tmp_path}/ledger.db"
    ledger = open_ledger(url)
    assert isinstance(ledger, SqliteLedger) and ledger._checkpointer is not None
    checkpointer = ledger._checkpointer
    checkpointer.every = 2
    checkpointer._target = tmp_path / "no such folder" / "ledger.db"  # cannot be opened
    budget = Budget("100", scope="project", ledger=url)
    spend(budget, "0.5", "0.25")  # a reserve and a settle: two commits, one checkpoint
    assert checkpointer.wait_for_runs(1, timeout=30)
    spend(budget, "0.5", "0.25")
    assert checkpointer.wait_for_runs(2, timeout=30)
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1  # said once, not at every attempt
    assert "background checkpoint" in warnings[0] and str(tmp_path / "ledger.db") in warnings[0]
    assert ledger.totals("project", budget.period_key).spent_usd == D("0.5")
    ledger.close()


def test_a_forked_child_checkpoints_on_a_thread_of_its_own(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/ledger.db"
    ledger = SqliteLedger(tmp_path / "ledger.db", url=url)
    assert ledger._checkpointer is not None
    checkpointer = ledger._checkpointer
    checkpointer.every = 2
    budget = Budget("100", scope="project", ledger=ledger)
    spend(budget, "0.5", "0.25")
    assert checkpointer.wait_for_runs(1, timeout=30)  # the parent's thread is running
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork with the thread running
        pid = os.fork()
    if pid == 0:  # the child: the same ledger object, no thread of its parent's
        code = 1
        try:
            spend(budget, "0.5", "0.25")
            ran = checkpointer.wait_for_runs(2, timeout=30)
            code = 0 if ran and checkpointer._thread is not None \
                and checkpointer._thread.is_alive() else 2
        finally:
            os._exit(code)  # never return into pytest from a forked child
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    assert [r.actual_usd for r in open_ledger(url, read_only=True).records()] == [D("0.25")] * 2
    spend(budget, "0.5", "0.25")  # the parent's thread still copies back the parent's commits
    assert checkpointer.wait_for_runs(2, timeout=30)
    ledger.close()


def test_closing_the_ledger_stops_its_checkpoint_thread_and_a_later_call_starts_one(
        tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/ledger.db"
    ledger = open_ledger(url)
    assert isinstance(ledger, SqliteLedger) and ledger._checkpointer is not None
    checkpointer = ledger._checkpointer
    checkpointer.every = 2
    budget = Budget("100", scope="project", ledger=url)
    spend(budget, "0.5", "0.25")
    assert checkpointer.wait_for_runs(1, timeout=30)
    thread = checkpointer._thread
    assert thread is not None and thread.is_alive()
    ledger.close()
    assert not thread.is_alive()
    spend(budget, "0.5", "0.25")
    assert checkpointer.wait_for_runs(2, timeout=30)
    assert checkpointer._thread is not None and checkpointer._thread is not thread
    ledger.close()


def test_verify_reads_while_another_process_holds_the_write_lock(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/ledger.db"
    spend(Budget("10", scope="project", ledger=url), "1", "0.25")
    other = sqlite3.connect(tmp_path / "ledger.db", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # a writer mid-transaction, as another process may be
    try:
        assert SqliteLedger(tmp_path / "ledger.db", read_only=True).verify() == []
        assert open_ledger(url).verify() == []
    finally:
        other.execute("ROLLBACK")
        other.close()


@pytest.mark.parametrize("bounds", [(None, None), (START, None), (None, START),
                                    (START, START + timedelta(days=1))],
                         ids=["all", "since", "until", "since-and-until"])
def test_records_are_read_through_the_time_index(
        tmp_path: Path, bounds: tuple[datetime | None, datetime | None]) -> None:
    """The statement records() runs, as SQLite plans it: the index on time gives the order
    and the range (no sort of every call: only the calls within one second are sorted)."""
    SqliteLedger(tmp_path / "ledger.db").close()
    sql, params = records_query(since=bounds[0], until=bounds[1])
    db = sqlite3.connect(tmp_path / "ledger.db")
    plan = [step[3] for step in db.execute(f"EXPLAIN QUERY PLAN {sql}", params)]
    db.close()
    assert any("USING INDEX calls_time" in step for step in plan), plan
    assert "USE TEMP B-TREE FOR ORDER BY" not in plan, plan
    if bounds != (None, None):
        assert any(step.startswith("SEARCH calls USING INDEX calls_time (<expr>") for step in plan)


def test_records_between_two_times_are_exactly_those_times_in_time_order(
        tmp_path: Path) -> None:
    """Calls a microsecond either side of a bound, in the same second, and across seconds:
    the index narrows by whole seconds, the exact times decide."""
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    clock = FakeClock()
    budget = Budget("100", ledger=url, clock=clock)
    offsets_us = [2_000_001, 2_000_000, 1_000_000, 999_999, 1, 0, -1, -1_000_001]
    for offset in offsets_us:  # written out of order: read back in order
        clock.now = START + timedelta(microseconds=offset)
        spend(budget, "0.01", "0.01")
    ledger = open_ledger(url)
    read = [record.time for record in ledger.records(
        since=START, until=START + timedelta(microseconds=2_000_000))]
    everything = [record.time for record in ledger.records()]
    ledger.close()
    assert read == [START + timedelta(microseconds=offset)
                    for offset in (0, 1, 999_999, 1_000_000)]
    assert everything == sorted(START + timedelta(microseconds=offset)
                                for offset in offsets_us)


def test_no_field_or_column_could_hold_a_credential(tmp_path: Path) -> None:
    SqliteLedger(tmp_path / "x.db").close()
    names = {f.name for f in fields(SpendRecord)} | set(tables(tmp_path / "x.db")["calls"])
    assert not any(word in name for name in names
                   for word in ("api", "auth", "header", "secret", "password", "credential"))


def test_prompt_text_is_stored_only_when_the_call_carries_it(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/ledger.db"
    budget = Budget("10", scope="p", ledger=url)
    spend(budget, "1", "1", prompt_hash="abc")
    spend(budget, "1", "1", prompt_hash="def", prompt_text="hello")
    stored = [(r.prompt_hash, r.prompt_text) for r in budget.ledger.records()]
    assert sorted(stored) == [("abc", None), ("def", "hello")]


@pytest.fixture
def killed_holder(tmp_path: Path) -> Iterator[tuple[str, str, datetime]]:
    """A process that reserved $4 of scope 'proj' at a made-up time, then was SIGKILLed."""
    url = f"sqlite:///{tmp_path}/ledger.db"
    reserved_at = FakeClock().now
    process = worker("hold", url, "proj", "10", "4", reserved_at.isoformat())
    assert process.stdout is not None
    reservation_id = process.stdout.readline().strip()
    process.kill()
    process.communicate()
    assert process.returncode == -signal.SIGKILL, reservation_id
    yield url, reservation_id, reserved_at


def test_a_killed_processs_reservation_counts_until_it_expires_then_is_charged_in_full(
        killed_holder: tuple[str, str, datetime]) -> None:
    url, reservation_id, reserved_at = killed_holder
    clock = FakeClock(reserved_at + timedelta(minutes=14))
    budget = Budget("10", scope="proj", ledger=url, clock=clock, warn_at=None)
    assert (budget.spent, budget.reserved) == (D(0), D("4"))
    with pytest.raises(BudgetExceeded):
        reserve_call(budget, D("6.5"), call=call_info())
    clock.advance(minutes=1)  # 15 minutes after the reservation: it has expired
    spend(budget, "6", "6")
    assert (budget.spent, budget.reserved) == (D("10"), D(0))
    recovered = next(r for r in budget.ledger.records() if r.id == reservation_id)
    assert (recovered.status, recovered.actual_usd) == ("recovered", D("4"))
    assert recovered.note is not None and "pid" in recovered.note
    assert budget.ledger.verify() == []


def test_opening_the_ledger_recovers_reservations_already_expired(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/ledger.db"
    long_ago = (datetime.now(UTC) - timedelta(hours=1)).isoformat()
    process = worker("hold", url, "proj", "10", "4", long_ago)
    assert process.stdout is not None
    reservation_id = process.stdout.readline().strip()
    process.kill()
    process.communicate()
    reopened = SqliteLedger(tmp_path / "ledger.db")
    assert reopened.totals("proj", "all").spent_usd == D("4")
    assert [(r.id, r.status) for r in reopened.records()] == [(reservation_id, "recovered")]


def test_the_public_names_are_exported() -> None:
    for name in ("Budget", "tags", "open_ledger", "SpendRecord", "BudgetWarning"):
        assert name in spendguard.__all__
        assert getattr(spendguard, name) is not None


def test_call_ids_are_32_hex_digits_that_sort_in_the_order_the_calls_were_made(
        tmp_path: Path) -> None:
    ledger = SqliteLedger(tmp_path / "ledger.db")
    budget = Budget("10", scope="project", ledger=ledger)
    ids = [spend(budget, "0.1", "0.1").id for _ in range(50)]
    assert all(len(call_id) == 32 and int(call_id, 16) >= 0 for call_id in ids)
    assert ids == sorted(ids) and len(set(ids)) == len(ids)


def test_a_spendguard_that_still_writes_events_refuses_a_ledger_that_reads_them_from_calls(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "ledger.db"
    budget = Budget("10", scope="project", ledger=SqliteLedger(path))
    spend(budget, "1", "0.25")
    budget.ledger.close()
    with monkeypatch.context() as older:
        older.setattr(migrations_module, "MIGRATIONS",
                      migrations_module.MIGRATIONS[:migrations_module.MIGRATIONS.index(
                          migrations_module.m006_events_read_from_calls)])
        with pytest.raises(LedgerError, match="newer spendguard"):
            SqliteLedger(path)
    reopened = SqliteLedger(path)
    assert reopened.verify() == []
    with reopened._snapshot() as tx:  # the log, read from the one call's row
        assert [(event.kind, event.amount_usd) for event in tx.all_events()] == [
            ("reserve", D("1")), ("settle", D("0.25"))]
    reopened.close()
