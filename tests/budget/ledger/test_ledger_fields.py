"""A stored call's fields are declared once; every backend's encoding follows the declaration."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import fields
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import psycopg
import pytest

from spendguard._budget.ledger import CallInfo, ScopeClaim, Settlement, SpendRecord, open_ledger
from spendguard._budget.ledger.engine import CallRow
from spendguard._budget.ledger.fields import COLUMNS, FIELDS
from spendguard._budget.ledger.postgres import PostgresLedger
from spendguard._budget.ledger.redis.codec import open_record_json, record_from_json, record_json
from tests.postgres_helpers import (
    PG_SERVER,
    fixture_postgres_schema,  # noqa: F401 - a fixture: pytest finds it here
    postgres_url,
    requires_postgres,
)

D = Decimal
NOW = datetime(2026, 5, 21, 10, tzinfo=UTC)


def test_the_declaration_names_every_field_of_a_record_and_of_its_stored_row() -> None:
    record = {f.name for f in fields(SpendRecord)}
    row = {f.name for f in fields(CallRow)} - {"record"}
    assert {f.name for f in FIELDS if not f.on_row} == record
    assert {f.name for f in FIELDS if f.on_row} == row
    assert len({f.name for f in FIELDS}) == len(FIELDS)


def test_a_sqlite_ledgers_calls_table_has_the_declared_columns_in_their_order(
        tmp_path: Path) -> None:
    open_ledger(f"sqlite:///{tmp_path / 'l.db'}").close()
    with sqlite3.connect(tmp_path / "l.db") as db:
        columns = [row[1] for row in db.execute("PRAGMA table_info(calls)")]
    assert columns == [f.name for f in COLUMNS]


@pytest.mark.postgres
@requires_postgres
def test_a_postgres_ledgers_calls_table_has_the_declared_columns_in_their_order(
        postgres_schema: str) -> None:
    PostgresLedger(postgres_url(postgres_schema)).close()
    with psycopg.connect(PG_SERVER, autocommit=True) as db:
        columns = [name for (name,) in db.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = %s AND "
            "table_name = 'calls' ORDER BY ordinal_position", (postgres_schema,))]
    assert columns == [f.name for f in COLUMNS]


def _settled_record(url: str) -> SpendRecord:
    ledger = open_ledger(url)
    call = CallInfo("openai", "gpt-4o-mini", "chat", attempt=2, request_id="req-1",
                    prompt_hash="abc", prompt_text="hi", estimated_input_tokens=10,
                    estimated_output_tokens=20, input_exact=False)
    claims = [ScopeClaim("team", "2026-05", D("8.00"), D("6"), 5)]
    rid = ledger.reserve(claims, D("0.5"), call, time=NOW, expires_at=NOW, tags={"a": "b"})
    ledger.settle(rid, Settlement(NOW, D("0.25"), {"input": 10}, True, "v1", 1.5,
                                  status="error", note="why"))
    [record] = list(ledger.records())
    return record


def test_every_field_of_a_record_round_trips_through_sqlite_and_the_redis_codec(
        tmp_path: Path) -> None:
    record = _settled_record(f"sqlite:///{tmp_path / 'l.db'}")
    assert (record.provider, record.attempt, record.request_id, record.prompt_text,
            record.estimated_output_tokens, record.input_exact, record.tags, record.tokens,
            record.usage_estimated, record.table_version, record.latency_s, record.status,
            record.note, record.limits_usd) == (
        "openai", 2, "req-1", "hi", 20, False, {"a": "b"}, {"input": 10}, True, "v1", 1.5,
        "error", "why", (D("8.00"),))
    assert record_from_json(record_json(record)) == record


def test_the_redis_codecs_record_of_a_new_reservation_has_every_field_of_a_record() -> None:
    claims = (ScopeClaim("team", "2026-05", D("8"), None),)
    text = open_record_json("c1", claims, D("0.5"), CallInfo("openai", "gpt-4o-mini", "chat"),
                            NOW, {})
    assert set(json.loads(text)) == {f.name for f in fields(SpendRecord)}
    assert record_from_json(text).limits_usd == (D("8"),)
