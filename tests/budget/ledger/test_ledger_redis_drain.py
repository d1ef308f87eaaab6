"""Draining a Redis ledger into SQLite and PostgreSQL for keeps: complete, exact, idempotent;
and reseeding a Redis ledger from such a copy."""

from __future__ import annotations

import socket
import uuid
from collections.abc import Iterator
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

import spendguard._budget.ledger
from spendguard import ConfigError, LedgerError, SpendRecord, drain_ledger, open_ledger
from spendguard._budget.ledger import ScopeClaim, Settlement
from spendguard._budget.ledger.drain import DrainResult
from spendguard._budget.ledger.drain_postgres import PostgresArchive
from spendguard._budget.ledger.redis import RedisLedger
from spendguard._budget.ledger.redis.reseed import reseed
from spendguard._budget.ledger.sqlite import SqliteLedger
from tests.ledger_helpers import START, call_info
from tests.redis_helpers import (
    drop_prefix,
    fixture_redis_prefix,  # noqa: F401 - a fixture: pytest finds it here
    fixture_redis_url,  # noqa: F401 - a fixture: pytest finds it here
    ledger_url,
    requires_redis,
)

D = Decimal
EXPIRY = START + timedelta(minutes=15)
PG_ROOT = "postgresql://root@127.0.0.1:5432/test"
pytestmark = [pytest.mark.redis, requires_redis]


def _postgres_up() -> bool:
    try:
        with socket.create_connection(("127.0.0.1", 5432), timeout=0.5):
            pass
        import psycopg  # noqa: F401
    except (OSError, ImportError):
        return False
    return True


requires_postgres = pytest.mark.skipif(
    not _postgres_up(), reason="no PostgreSQL on 127.0.0.1:5432 (database 'test', trust auth) "
                               "or psycopg missing (pip install 'spendguard-llm[postgres]')")


@pytest.fixture
def source(redis_url: str) -> Iterator[RedisLedger]:
    """A Redis ledger holding one call of every kind, and one still in flight."""
    ledger = RedisLedger(redis_url)
    project = ScopeClaim("project", "2031-01", D("100"), D("80"))
    run = ScopeClaim("run:7", "all")

    def reserve(worst: str, minute: int, *claims: ScopeClaim) -> str:
        return ledger.reserve(list(claims), D(worst), call_info(f"model-{minute}"),
                              time=START + timedelta(minutes=minute),
                              expires_at=EXPIRY + timedelta(minutes=minute),
                              tags={"team": "search"})

    done = Settlement(START, D("0.123456789012345"), {"input": 7}, False, "t-1", 0.5, "req")
    ledger.settle(reserve("1", 0, project, run), done)
    ledger.release(reserve("1", 1, project), reason="http 429", time=START)
    late = reserve("2", 2, project)
    ledger.recover_expired(EXPIRY + timedelta(minutes=2))
    ledger.settle(late, done)  # a late settle: its correction is a record too
    ledger.adjust([project], D("-0.5"), time=START + timedelta(minutes=3), note="credit",
                  provider="openai", model="gpt-4o-mini")
    reserve("3", 4, project)  # in flight: not a record yet
    yield ledger
    ledger.close()


def comparable(record: SpendRecord) -> tuple[Any, ...]:
    return (record.id, record.time, record.status, record.scopes, record.period_keys,
            record.limits_usd, dict(record.tags), record.model, dict(record.tokens),
            record.estimated_usd, record.actual_usd, record.note, record.request_id)


def test_draining_into_sqlite_copies_every_record_and_keeps_the_books_sound(
        source: RedisLedger, tmp_path: Path) -> None:
    archive_url = f"sqlite:///{tmp_path}/archive.db"
    result = drain_ledger(source, archive_url)
    assert result == DrainResult(read=5, written=5)
    archive = open_ledger(archive_url)
    assert [comparable(r) for r in archive.records()] == [
        comparable(r) for r in source.records()]
    assert sorted(r.status for r in archive.records()) == [
        "adjustment", "adjustment", "ok", "recovered", "released"]
    assert archive.verify() == []
    assert archive.totals("project", "2031-01").spent_usd == (
        source.totals("project", "2031-01").spent_usd)
    assert archive.totals("project", "2031-01").reserved_usd == 0  # in-flight calls stay out


def test_draining_twice_never_duplicates(source: RedisLedger, tmp_path: Path) -> None:
    archive = SqliteLedger(tmp_path / "archive.db")
    drain_ledger(source, archive, batch_size=2)
    source.settle(next(iter(_open_ids(source))), Settlement(START, D("1"), {}, False, "t", 0.1))
    again = drain_ledger(source, archive)
    assert (again.read, again.written, again.already_there) == (6, 1, 5)
    assert len(list(archive.records())) == 6
    assert archive.verify() == []
    archive.close()


def test_drain_ledger_is_public_and_drains_a_window(source: RedisLedger, tmp_path: Path) -> None:
    archive_url = f"sqlite:///{tmp_path}/archive.db"
    result = spendguard.drain_ledger(
        source, archive_url, since=START + timedelta(minutes=1),
        until=START + timedelta(minutes=3))
    assert result.written == 2  # the release and the recovered call
    assert isinstance(result, DrainResult)


def test_a_destination_that_is_not_an_archive_is_refused(source: RedisLedger) -> None:
    with pytest.raises(ConfigError, match="not a SQLite ledger"):
        drain_ledger(source, source.options.url.replace("prefix=", "prefix=other"))
    with pytest.raises(ConfigError, match="batch_size"):
        drain_ledger(source, "memory://", batch_size=0)


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A PostgreSQL URL whose tables land in a schema of this test's own, dropped afterwards."""
    import psycopg

    schema = f"sgtest_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(PG_ROOT, autocommit=True) as db:
        db.execute(f"CREATE SCHEMA {schema}")
    yield f"{PG_ROOT}?options=-csearch_path%3D{schema}"
    with psycopg.connect(PG_ROOT, autocommit=True) as db:
        db.execute(f"DROP SCHEMA {schema} CASCADE")


@requires_postgres
def test_draining_into_postgresql_keeps_exact_money_and_never_duplicates(
        source: RedisLedger, pg_url: str) -> None:
    import psycopg

    assert drain_ledger(source, pg_url) == DrainResult(read=5, written=5)
    assert drain_ledger(source, pg_url) == DrainResult(read=5, written=0)
    with psycopg.connect(pg_url) as db:
        rows = db.execute("SELECT id, status, scopes, period_keys, limits_usd, tags, "
                          "estimated_usd, actual_usd, source FROM spendguard_records "
                          "ORDER BY time, id").fetchall()
        applied = db.execute("SELECT name FROM spendguard_migrations").fetchall()
        by_scope = db.execute("SELECT sum(actual_usd) FROM spendguard_records "
                              "WHERE 'project' = ANY(scopes)").fetchone()
    assert [(row[0], row[1]) for row in rows] == [(r.id, r.status) for r in source.records()]
    (first,) = [row for row in rows if row[1] == "ok"]
    assert first[2:8] == (["project", "run:7"], ["2031-01", "all"], [D("100"), None],
                          {"team": "search"}, D("1"), D("0.123456789012345"))
    assert first[8] == source.url and "***" not in first[8]
    assert applied == [("p001_records",)]
    assert by_scope == (source.totals("project", "2031-01").spent_usd,)


@requires_postgres
def test_the_postgresql_table_is_made_once_by_its_migration(pg_url: str) -> None:
    first = PostgresArchive(pg_url)
    second = PostgresArchive(pg_url)
    assert (first.migrated, second.migrated) == (["p001_records"], [])
    first.close()
    second.close()


@requires_postgres
def test_a_postgresql_archive_a_newer_spendguard_migrated_is_not_written(pg_url: str) -> None:
    import psycopg

    PostgresArchive(pg_url).close()
    with psycopg.connect(pg_url, autocommit=True) as db:
        db.execute("INSERT INTO spendguard_migrations VALUES ('p999_from_the_future', now())")
    with pytest.raises(LedgerError, match=r"has schema 2.*knows schema 1 at most.*upgrade"):
        PostgresArchive(pg_url)


def _open_ids(ledger: RedisLedger) -> list[str]:
    ids: Any = ledger._session.client.zrange(f"{ledger.options.prefix}open", 0, -1)
    return [str(call_id) for call_id in ids]


@pytest.fixture
def target_url() -> Iterator[str]:
    """An empty Redis ledger under a prefix of this test's own: where a reseed writes."""
    prefix = f"sgtest:{uuid.uuid4().hex[:12]}:"
    yield ledger_url(prefix, timeout="2")
    drop_prefix(prefix)


def _reseeded_matches(source: RedisLedger, copy: str, target_url: str) -> None:
    result = reseed(target_url, copy)
    assert (result.read, result.written) == (5, 5)
    assert reseed(target_url, copy).written == 0  # re-run: nothing twice
    target = RedisLedger(target_url)
    try:
        assert [comparable(r) for r in target.records()] == [
            comparable(r) for r in source.records()]
        settled = source.totals("project", "2031-01")
        assert target.totals("project", "2031-01").spent_usd == settled.spent_usd
        assert target.totals("project", "2031-01").reserved_usd == 0  # in flight: not copied
        assert target.verify() == []
    finally:
        target.close()


def test_a_ledger_reseeded_from_its_sqlite_copy_has_its_records_and_totals(
        source: RedisLedger, target_url: str, tmp_path: Path) -> None:
    copy = f"sqlite:///{tmp_path / 'copy.db'}"
    drain_ledger(source, copy)
    _reseeded_matches(source, copy, target_url)


@requires_postgres
def test_a_ledger_reseeded_from_its_postgresql_copy_has_its_records_and_totals(
        source: RedisLedger, target_url: str, pg_url: str) -> None:
    drain_ledger(source, pg_url)
    _reseeded_matches(source, pg_url, target_url)
