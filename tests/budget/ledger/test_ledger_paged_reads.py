"""Reads go through the ledger a page at a time; the page's size changes nothing they give.

The pages are made tiny here (two rows, two events) so that a dozen calls cross many page
boundaries, on every backend: records come back the same and in the same order, and
``verify()`` finds the same things, sound or not.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import spendguard
from spendguard._budget.ledger import open_ledger
from tests.ledger_backends import LedgerBackend
from tests.postgres_helpers import (
    PG_SERVER,
    fixture_postgres_schema,  # noqa: F401 - a fixture: pytest finds it here
    postgres_url,
    requires_postgres,
)
from tests.report_helpers import varied_ledger


@pytest.fixture
def tiny_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every backend's read pages two rows (records) or two events (verify) long."""
    monkeypatch.setattr("spendguard._budget.ledger.replay.PAGE_SIZE", 2)
    monkeypatch.setattr("spendguard._budget.ledger.sqlite._PAGE_ROWS", 2)
    monkeypatch.setattr("spendguard._budget.ledger.postgres._PAGE_ROWS", 2)
    monkeypatch.setattr("spendguard._budget.ledger.redis.reads._PAGE", 2)
    monkeypatch.setattr("spendguard._budget.ledger.redis.reads._EVENTS_PAGE", 2)


def _reads(url: str) -> tuple[list[spendguard.SpendRecord], list[str], list[int]]:
    ledger = open_ledger(url, read_only=True)
    heard: list[int] = []
    return list(ledger.records()), ledger.verify(progress=heard.append), heard


def test_records_and_verify_are_the_same_in_pages_of_two(ledger_backend: LedgerBackend,
                                                         request: pytest.FixtureRequest) -> None:
    url = ledger_backend.url()
    varied_ledger(url)
    records, problems, heard = _reads(url)
    assert len(records) == 12 and problems == []
    assert heard == [24]  # a reserve and a settle per call, told after the one page

    request.getfixturevalue("tiny_pages")
    paged, paged_problems, paged_heard = _reads(url)
    assert paged == records
    assert paged_problems == []
    assert paged_heard == list(range(2, 25, 2))  # told after each page


def _broken_postgres_ledger(schema: str) -> tuple[str, str]:
    """A PostgreSQL ledger (its event log a table of its own) with one total changed by hand
    and one call's settle event deleted; returns its URL and that call's id."""
    import psycopg

    url = postgres_url(schema)
    varied_ledger(url)
    with psycopg.connect(PG_SERVER, autocommit=True, connect_timeout=5) as db:
        found = db.execute(f'SELECT call_id FROM "{schema}".events WHERE kind = %s '
                           f"ORDER BY id LIMIT 1 OFFSET 5", ("settle",)).fetchone()
        assert found is not None
        call_id = str(found[0])
        db.execute(f'DELETE FROM "{schema}".events WHERE call_id = %s AND kind = %s',
                   (call_id, "settle"))
        db.execute(f"UPDATE \"{schema}\".totals SET spent_usd = 99 WHERE scope = 'org'")
    return url, call_id


@pytest.mark.postgres
@requires_postgres
def test_verify_finds_the_same_problems_in_pages_of_two(postgres_schema: str, tiny_pages: None,
                                                        monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    url, call_id = _broken_postgres_ledger(postgres_schema)
    paged = open_ledger(url, read_only=True).verify()
    monkeypatch.setattr("spendguard._budget.ledger.replay.PAGE_SIZE", 1000)
    whole = open_ledger(url, read_only=True).verify()
    assert paged == whole
    assert f"call {call_id} is settled but its events say open" in paged
    assert any(problem.startswith("totals of 'org' in ") for problem in paged)


def test_sqlite_verify_finds_a_changed_total_in_pages_of_two(tmp_path: Path, tiny_pages: None,
                                                             monkeypatch: pytest.MonkeyPatch
                                                             ) -> None:
    # SQLite's log is read from the calls' rows, a page of calls at a time.
    path = tmp_path / "broken.db"
    varied_ledger(f"sqlite:///{path}")
    with sqlite3.connect(path) as db:
        db.execute("UPDATE totals SET spent_usd = '99' WHERE scope = 'org'")
    db.close()
    paged = open_ledger(f"sqlite:///{path}", read_only=True).verify()
    monkeypatch.setattr("spendguard._budget.ledger.replay.PAGE_SIZE", 1000)
    whole = open_ledger(f"sqlite:///{path}", read_only=True).verify()
    assert paged == whole
    assert paged and all(problem.startswith("totals of 'org' in ") for problem in paged)


@pytest.mark.postgres
@requires_postgres
def test_verify_names_an_event_of_no_call_whichever_page_it_is_on(postgres_schema: str,
                                                                  tiny_pages: None) -> None:
    import psycopg

    url = postgres_url(postgres_schema)
    varied_ledger(url)
    with psycopg.connect(PG_SERVER, autocommit=True, connect_timeout=5) as db:
        db.execute(f'INSERT INTO "{postgres_schema}".events (call_id, kind, time, amount_usd) '
                   f"VALUES ('nosuchcall', 'settle', '2026-01-01T00:00:00+00:00', 1)")
    assert open_ledger(url, read_only=True).verify() == [
        "event settle refers to unknown call nosuchcall"]
