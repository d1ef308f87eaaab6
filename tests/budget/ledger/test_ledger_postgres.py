"""What only the PostgreSQL ledger does: its schema, its migrations, its connections, its URL.

Its accounting is checked by every ledger contract test (the ``postgres`` backend of
``tests/ledger_backends.py``); the processes and kill tests are in
``test_ledger_postgres_processes.py``.
"""

from __future__ import annotations

import multiprocessing
import uuid
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from typing import Any

import psycopg
import pytest
from click.testing import CliRunner

import spendguard
from spendguard._budget.ledger.postgres import PostgresLedger
from spendguard._budget.ledger.postgres_migrations import MIGRATIONS, SCHEMA_VERSION
from spendguard.cli import main
from tests.ledger_helpers import spend
from tests.postgres_helpers import (
    PG_SERVER,
    drop_schema,
    fixture_postgres_ledger_url,  # noqa: F401 - a fixture: pytest finds it here
    fixture_postgres_schema,  # noqa: F401 - a fixture: pytest finds it here
    fresh_schema,
    postgres_url,
    requires_postgres,
)

D = Decimal
pytestmark = [pytest.mark.postgres, requires_postgres]


def _query(sql: str, *params: Any) -> list[tuple[Any, ...]]:
    with psycopg.connect(PG_SERVER, autocommit=True) as db:
        cursor = db.execute(sql, params)
        return [] if cursor.description is None else cursor.fetchall()


def test_the_schema_is_built_once_by_named_migrations_and_its_version_stamped(
        postgres_schema: str) -> None:
    url = postgres_url(postgres_schema)
    first = PostgresLedger(url)
    PostgresLedger(url).close()  # a second open applies nothing again
    first.close()
    applied = _query(f'SELECT name FROM "{postgres_schema}"._migrations ORDER BY name')
    assert [name for (name,) in applied] == [function.__name__ for function in MIGRATIONS]
    assert _query(f'SELECT value FROM "{postgres_schema}".ledger_meta '
                  f"WHERE key = 'schema_version'") == [(str(SCHEMA_VERSION),)]
    tables = {name for (name,) in _query(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = %s",
        postgres_schema)}
    assert {"calls", "events", "totals", "crossings", "batch_jobs", "batch_items"} <= tables


def test_a_ledger_a_newer_spendguard_migrated_is_refused_for_writing_naming_both_versions(
        postgres_schema: str) -> None:
    url = postgres_url(postgres_schema)
    spend(spendguard.Budget("5", scope="team", ledger=PostgresLedger(url)), "1", "0.25")
    _query(f'INSERT INTO "{postgres_schema}"._migrations VALUES (%s, now())',
           "q999_from_the_future")
    _query(f'UPDATE "{postgres_schema}".ledger_meta SET value = %s', str(SCHEMA_VERSION + 1))
    with pytest.raises(spendguard.LedgerError) as refused:
        PostgresLedger(url)  # as a fresh process's open_ledger does
    message = str(refused.value)
    assert f"has schema {SCHEMA_VERSION + 1}" in message
    assert f"knows schema {SCHEMA_VERSION} at most" in message
    assert "upgrade spendguard" in message and postgres_schema in message
    # Reports still read it; writing commands are refused without a traceback.
    report = CliRunner().invoke(main, ["report", "--ledger", url])
    assert report.exit_code == 0 and "$0.25" in report.output, report.output
    recover = CliRunner().invoke(main, ["ledger", "recover", "--ledger", url])
    assert recover.exit_code != 0 and "upgrade spendguard" in recover.output
    assert "Traceback" not in recover.output


def test_a_schema_stamped_with_no_spendguard_version_is_refused(postgres_schema: str) -> None:
    url = postgres_url(postgres_schema)
    PostgresLedger(url).close()
    _query(f'UPDATE "{postgres_schema}".ledger_meta SET value = %s', "banana")
    with pytest.raises(spendguard.LedgerError, match="not a spendguard ledger"):
        PostgresLedger(url)


def test_threads_opening_a_new_ledger_at_once_migrate_it_once(postgres_schema: str) -> None:
    url = postgres_url(postgres_schema)
    with ThreadPoolExecutor(6) as pool:
        ledgers = list(pool.map(lambda _: PostgresLedger(url), range(6)))
    for opened in ledgers:
        opened.close()
    assert _query(f'SELECT count(*) FROM "{postgres_schema}"._migrations') == [
        (len(MIGRATIONS),)]


def test_two_schemas_in_one_database_are_two_separate_ledgers() -> None:
    schemas = fresh_schema(), fresh_schema()
    try:
        one, two = (spendguard.Budget("1", scope="team", ledger=postgres_url(schema))
                    for schema in schemas)
        spend(one, "0.4", "0.25")
        assert (one.spent, two.spent) == (D("0.25"), D(0))
    finally:
        for schema in schemas:
            spendguard.open_ledger(postgres_url(schema)).close()
        drop_schema(*schemas)


def test_spending_survives_a_new_process_opening_the_ledger(postgres_ledger_url: str) -> None:
    spend(spendguard.Budget("5", scope="team", ledger=PostgresLedger(postgres_ledger_url)),
          "1", "0.123456789012345678")
    again = spendguard.Budget("5", scope="team", ledger=PostgresLedger(postgres_ledger_url))
    assert again.spent == D("0.123456789012345678")  # NUMERIC: exact, every digit
    (record,) = again.ledger.records()
    assert record.actual_usd == D("0.123456789012345678")


def test_a_ledger_heals_after_the_server_drops_its_connections(
        postgres_ledger_url: str) -> None:
    name = f"sgtest-{uuid.uuid4().hex[:8]}"
    ledger = PostgresLedger(f"{postgres_ledger_url}&application_name={name}")
    budget = spendguard.Budget("50", scope="team", ledger=ledger, warn_at=None)
    with ThreadPoolExecutor(8) as pool:  # several connections left idle in the pool
        list(pool.map(lambda _: spend(budget, "1", "1"), range(16)))
    dropped = _query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                     "WHERE application_name = %s", name)
    assert dropped and all(done for (done,) in dropped)  # as a server restart would
    spend(budget, "1", "1")  # the cut connections are dropped, the step run again
    assert budget.spent == D("17") and ledger.verify() == []
    ledger.close()


def test_an_unreachable_server_fails_closed_without_showing_the_password() -> None:
    url = "postgresql://root:hunter2@127.0.0.1:1/test?connect_timeout=2"
    with pytest.raises(spendguard.LedgerUnavailable) as refused:
        spendguard.open_ledger(url)
    assert "hunter2" not in str(refused.value) and "127.0.0.1:1" in str(refused.value)
    result = CliRunner().invoke(main, ["ledger", "verify", "--ledger", url])
    assert result.exit_code != 0
    assert "Traceback" not in result.output and "hunter2" not in result.output
    assert "cannot connect to the PostgreSQL ledger" in result.output


@pytest.mark.parametrize(("query", "field"), [("schema=Bad-Name", "schema"),
                                              ("pool_size=0", "pool_size")])
def test_a_bad_option_in_the_url_is_a_config_error_naming_it(query: str, field: str) -> None:
    with pytest.raises(spendguard.ConfigError, match=field):
        spendguard.open_ledger(f"{PG_SERVER}?{query}")


def test_the_cli_verifies_and_recovers_a_postgres_ledger(postgres_ledger_url: str) -> None:
    spend(spendguard.Budget("5", scope="team", ledger=postgres_ledger_url), "1", "0.5")
    verified = CliRunner().invoke(main, ["ledger", "verify", "--ledger", postgres_ledger_url])
    assert verified.exit_code == 0, verified.output
    assert "agree" in verified.output
    recovered = CliRunner().invoke(main, ["ledger", "recover", "--ledger", postgres_ledger_url])
    assert recovered.exit_code == 0 and "0 abandoned call(s)" in recovered.output


def _forked_child(ledger: PostgresLedger, answers: Any) -> None:
    budget = spendguard.Budget("0", scope="child", ledger=ledger, warn_at=None)
    try:
        spend(budget, "0.01", "0.01")
        answers.put("granted")
    except spendguard.BudgetExceeded:
        answers.put("refused")


def test_a_forked_process_opens_its_own_connections(postgres_ledger_url: str) -> None:
    ledger = PostgresLedger(postgres_ledger_url)
    parent = spendguard.Budget("100", scope="parent", ledger=ledger, warn_at=None)
    spend(parent, "0.01", "0.01")  # an idle connection of the parent's is in the pool
    context = multiprocessing.get_context("fork")
    answers = context.Queue()
    child = context.Process(target=_forked_child, args=(ledger, answers))
    child.start()
    for _ in range(20):
        spend(parent, "0.01", "0.01")
    assert answers.get(timeout=60) == "refused"
    child.join(timeout=60)
    assert child.exitcode == 0
    assert parent.calls == 21 and ledger.verify() == []
    ledger.close()


def test_a_process_opens_at_most_pool_size_connections_however_many_threads_call(
        postgres_ledger_url: str) -> None:
    name = f"sgtest-{uuid.uuid4().hex[:8]}"
    ledger = PostgresLedger(f"{postgres_ledger_url}&application_name={name}&pool_size=2")
    budget = spendguard.Budget("100", scope="team", ledger=ledger, warn_at=None)
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda _: spend(budget, "0.5", "0.25"), range(40)))
    # Healthy connections stay open in the pool: the ones there are all it ever opened.
    assert _query("SELECT count(*) FROM pg_stat_activity WHERE application_name = %s",
                  name) in ([(1,)], [(2,)])
    assert budget.calls == 40 and ledger.verify() == []
    ledger.close()


def test_reading_a_schema_with_no_ledger_says_so_and_creates_nothing(
        postgres_schema: str) -> None:
    url = postgres_url(postgres_schema)
    result = CliRunner().invoke(main, ["report", "--ledger", url])
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert f"no ledger in schema '{postgres_schema}'" in result.output
    assert _query("SELECT count(*) FROM information_schema.schemata WHERE schema_name = %s",
                  postgres_schema) == [(0,)]
    spend(spendguard.Budget("5", scope="team", ledger=url), "1", "0.5")
    reread = spendguard.open_ledger(url, read_only=True)
    assert [record.actual_usd for record in reread.records()] == [D("0.5")]
