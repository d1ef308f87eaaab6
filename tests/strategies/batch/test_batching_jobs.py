"""The ledger's batch-job store: records, atomic saves, claims once across stores and processes."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest

from spendguard import ConfigError, LedgerError, open_ledger
from spendguard._budget.ledger.jobs import JobItem, JobRecord, JobStore, job_store
from spendguard._budget.ledger.memory import MemoryLedger
from spendguard._budget.ledger.postgres import PostgresLedger
from spendguard._budget.ledger.sqlite import SqliteLedger
from tests.postgres_helpers import (
    drop_schema,
    fixture_postgres_ledger_url,  # noqa: F401 - a fixture: pytest finds it here
    fixture_postgres_schema,  # noqa: F401 - a fixture: pytest finds it here
    fresh_schema,
    postgres_url,
    requires_postgres,
)

T0 = datetime(2031, 3, 1, 12, 0, tzinfo=UTC)


def job(job_id: str = "sgb_1", *, created: datetime = T0, state: str = "reserved") -> JobRecord:
    return JobRecord(job_id, "openai", "/v1/chat/completions", state, created, created, 2,
                     Decimal("0.002"), deadline=created + timedelta(hours=3), fallback=True,
                     fallback_lead_s=600.0, counts={"total": 2}, owner_pid=42,
                     owner_host="here")


def items(job_id: str = "sgb_1") -> list[JobItem]:
    return [JobItem(job_id, f"r{i}", i, "gpt-5.5", Decimal("0.001"),
                    (("sqlite:////tmp/x.db", f"res{i}"),), body={"model": "gpt-5.5", "n": i})
            for i in range(2)]


@pytest.fixture(params=["sqlite", "memory",
                        pytest.param("postgres", marks=[pytest.mark.postgres,
                                                        requires_postgres])])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[JobStore]:
    if request.param == "sqlite":
        ledger = SqliteLedger(tmp_path / "ledger.db")
        yield job_store(ledger)
        ledger.close()
    elif request.param == "postgres":
        schema = fresh_schema()
        opened = PostgresLedger(postgres_url(schema))
        yield job_store(opened)
        opened.close()
        drop_schema(schema)
    else:
        yield job_store(MemoryLedger())


def test_a_job_and_its_items_read_back_as_recorded(store: JobStore) -> None:
    store.add(job(), items())
    assert store.get("sgb_1") == job()
    assert store.items("sgb_1") == items()
    assert store.get("nope") is None


def test_saving_replaces_the_job_and_the_given_items_at_once(store: JobStore) -> None:
    store.add(job(), items())
    first, second = items()
    done = replace(first, state="succeeded", hold="settled", body=None,
                   result={"id": "chatcmpl-1"}, usage={"input_tokens": 5},
                   actual_usd=Decimal("0.0004"))
    store.save(replace(job(), state="submitted", provider_batch_id="batch_1",
                       cancel_requested=True), [done])
    assert store.get("sgb_1") == replace(job(), state="submitted", provider_batch_id="batch_1",
                                         cancel_requested=True)
    assert store.items("sgb_1") == [done, second]


def test_saving_an_unknown_job_or_item_changes_nothing(store: JobStore) -> None:
    store.add(job(), items())
    with pytest.raises(LedgerError):
        store.save(job("sgb_other"))
    stranger = replace(items()[0], custom_id="zzz", state="errored")
    with pytest.raises(LedgerError):
        store.save(replace(job(), state="ended"), [stranger])
    assert store.get("sgb_1") == job()


def test_adding_a_job_twice_is_refused(store: JobStore) -> None:
    store.add(job(), items())
    with pytest.raises(LedgerError, match="already recorded"):
        store.add(job(), [])


def test_items_must_belong_to_the_job_with_unique_ids(store: JobStore) -> None:
    with pytest.raises(ConfigError, match="twice"):
        store.add(job(), [items()[0], items()[0]])
    with pytest.raises(ConfigError, match="belongs to job"):
        store.add(job(), items("sgb_2"))


def test_each_final_result_is_claimed_exactly_once(store: JobStore) -> None:
    store.add(job(), items())
    first, second = items()
    store.save(job(), [replace(first, state="succeeded", result={"ok": 1})])
    claimed = store.claim("sgb_1")
    assert [(i.custom_id, i.result, i.delivered) for i in claimed] == [("r0", {"ok": 1}, True)]
    assert store.claim("sgb_1") == []  # pending r1 is not claimable, r0 already went
    assert store.items("sgb_1")[0].result is None  # dropped once delivered
    store.save(job(), [replace(second, state="errored", result={"error": "x"})])
    assert [i.custom_id for i in store.claim("sgb_1", ["r0", "r1"])] == ["r1"]


def test_claiming_can_be_limited_to_some_items(store: JobStore) -> None:
    store.add(job(), [replace(i, state="succeeded") for i in items()])
    assert [i.custom_id for i in store.claim("sgb_1", ["r1"])] == ["r1"]
    assert [i.custom_id for i in store.claim("sgb_1")] == ["r0"]


def test_jobs_list_newest_first_and_active_ones_on_request(store: JobStore) -> None:
    store.add(job("sgb_old", created=T0), items("sgb_old"))
    store.add(job("sgb_new", created=T0 + timedelta(minutes=1)), items("sgb_new"))
    store.add(job("sgb_done", created=T0 + timedelta(minutes=2), state="ended"),
              [replace(i, state="succeeded", delivered=True) for i in items("sgb_done")])
    store.add(job("sgb_unread", created=T0 + timedelta(minutes=3), state="ended"),
              [replace(i, state="succeeded") for i in items("sgb_unread")])
    assert [j.id for j in store.jobs()] == ["sgb_unread", "sgb_done", "sgb_new", "sgb_old"]
    assert [j.id for j in store.jobs(active=True)] == ["sgb_unread", "sgb_new", "sgb_old"]


def test_jobs_made_at_the_same_moment_list_the_last_recorded_first(store: JobStore) -> None:
    for job_id in ("sgb_b", "sgb_a", "sgb_c"):
        store.add(job(job_id), items(job_id))
    assert [j.id for j in store.jobs()] == ["sgb_c", "sgb_a", "sgb_b"]


def test_bad_states_are_refused_with_the_allowed_ones() -> None:
    with pytest.raises(ConfigError, match="state"):
        job(state="running")
    with pytest.raises(ConfigError, match="route"):
        replace(items()[0], route="express")


def test_a_sqlite_job_survives_reopening_the_file(tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    first = SqliteLedger(path)
    job_store(first).add(job(), items())
    first.close()
    again = job_store(SqliteLedger(path))
    assert again.get("sgb_1") == job()
    assert again.items("sgb_1") == items()


@requires_postgres
@pytest.mark.postgres
def test_a_postgres_claim_made_by_one_ledger_is_seen_by_another(
        postgres_ledger_url: str) -> None:
    first, second = PostgresLedger(postgres_ledger_url), PostgresLedger(postgres_ledger_url)
    try:
        one, two = job_store(first), job_store(second)
        one.add(job(), [replace(i, state="succeeded") for i in items()])
        assert two.get("sgb_1") == job()
        assert len(one.claim("sgb_1")) == 2
        assert two.claim("sgb_1") == []
    finally:
        first.close()
        second.close()


def test_a_claim_in_one_connection_is_seen_by_another(tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    one, two = job_store(SqliteLedger(path)), job_store(SqliteLedger(path))
    one.add(job(), [replace(i, state="succeeded") for i in items()])
    assert len(one.claim("sgb_1")) == 2
    assert two.claim("sgb_1") == []


def test_a_memory_ledger_keeps_one_store_for_its_lifetime() -> None:
    ledger = open_ledger("memory://jobs-test")
    job_store(ledger).add(job(), items())
    assert job_store(open_ledger("memory://jobs-test")).get("sgb_1") == job()
    assert job_store(MemoryLedger()).get("sgb_1") is None


def test_the_tables_come_from_the_migration(tmp_path: Path) -> None:
    SqliteLedger(tmp_path / "ledger.db").close()
    db = sqlite3.connect(tmp_path / "ledger.db")
    names = {name for (name,) in db.execute("SELECT name FROM _migrations")}
    db.close()
    assert "m002_batch_jobs" in names
