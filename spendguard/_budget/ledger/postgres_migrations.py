"""The PostgreSQL ledger's schema, grown by named migration functions applied on open.

Every table lives in the ledger's own schema (``spendguard`` unless the URL names another), so
the ledger shares a database with an application without sharing a table name with it. The
migrations run in one transaction under an advisory lock of the schema's own, so two processes
opening a new ledger at once cannot both apply one; each applied migration's name is recorded in
``_migrations`` and the schema version (how many there are) in ``ledger_meta``. A ledger whose
version is above the number this spendguard knows was migrated by a newer one: it is refused,
naming both versions, rather than written by code that does not know its tables.

Money is ``NUMERIC`` (exact, with the scale it was written with); times are ``TIMESTAMPTZ``;
tags and token counts are ``json`` (kept as written, key order included); a call's claims are
the same JSON text the SQLite ledger stores. Never edit a released migration: add the next one.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from spendguard._budget.ledger.schema import newer_schema_error
from spendguard._core.errors import LedgerError

if TYPE_CHECKING:
    import psycopg

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "lock_key", "migrate", "migration"]

Migration = Callable[["psycopg.Cursor[Any]", str], None]
MIGRATIONS: list[Migration] = []


def migration(function: Migration) -> Migration:
    """Register ``function`` as the next migration; its name is its identity forever."""
    MIGRATIONS.append(function)
    return function


def lock_key(*parts: str) -> int:
    """A signed 64-bit advisory-lock key for ``parts`` (a schema, a scope): stable everywhere.

    Two keys that collide only make two unrelated writers wait for each other, never let
    two writers of one scope in at once.
    """
    digest = hashlib.blake2b("\0".join(("spendguard", *parts)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def migrate(db: psycopg.Connection[Any], schema: str, ledger: str = "") -> list[str]:
    """Apply the migrations the ledger in ``schema`` lacks, atomically; returns their names.

    ``db`` must be in autocommit mode. A ledger a newer spendguard has migrated is refused
    (:func:`~spendguard._budget.ledger.schema.newer_schema_error`, naming ``ledger``).
    """
    ledger = ledger or f"in schema {schema}"
    with db.cursor() as cursor:
        applied = _applied(cursor, schema)
        if applied is not None and _pending(applied) == []:
            _check_version(cursor, applied, schema, ledger)
            return []  # the common case: no lock taken, nothing written
        with db.transaction():
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", (lock_key(schema, "migrate"),))
            cursor.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"; '
                           f'CREATE TABLE IF NOT EXISTS "{schema}"._migrations '
                           f"(name TEXT PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL); "
                           f'CREATE TABLE IF NOT EXISTS "{schema}".ledger_meta '
                           f"(key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            applied = _applied(cursor, schema) or set()  # again, under the lock
            _check_version(cursor, applied, schema, ledger)
            pending = _pending(applied)
            for function in pending:
                function(cursor, schema)
                cursor.execute(f'INSERT INTO "{schema}"._migrations VALUES (%s, %s)',
                               (function.__name__, datetime.now(UTC)))
            cursor.execute(f'INSERT INTO "{schema}".ledger_meta VALUES (%s, %s) ON CONFLICT '
                           f"(key) DO UPDATE SET value = EXCLUDED.value",
                           ("schema_version", str(len(MIGRATIONS))))
    return [function.__name__ for function in pending]


def _applied(cursor: psycopg.Cursor[Any], schema: str) -> set[str] | None:
    """The names of the migrations applied, or None when the ledger has no tables yet."""
    cursor.execute("SELECT to_regclass(%s)", (f'"{schema}"._migrations',))
    row = cursor.fetchone()
    if row is None or row[0] is None:
        return None
    cursor.execute(f'SELECT name FROM "{schema}"._migrations')
    return {name for (name,) in cursor.fetchall()}


def _pending(applied: set[str]) -> list[Migration]:
    return [function for function in MIGRATIONS if function.__name__ not in applied]


def _check_version(cursor: psycopg.Cursor[Any], applied: set[str], schema: str,
                   ledger: str) -> None:
    """Refuse a ledger stamped with a schema newer than this spendguard's (or with none)."""
    cursor.execute(f'SELECT value FROM "{schema}".ledger_meta WHERE key = %s',
                   ("schema_version",))
    row = cursor.fetchone()
    stamped = "0" if row is None else row[0]
    if not stamped.isdigit():
        raise LedgerError(f"the PostgreSQL ledger {ledger} is stamped with schema "
                          f"{stamped!r}: not a spendguard ledger; name another ?schema=")
    known = {function.__name__ for function in MIGRATIONS}
    if not applied <= known or int(stamped) > len(MIGRATIONS):
        raise newer_schema_error(ledger, max(len(applied), int(stamped)), len(MIGRATIONS))


@migration
def q001_initial(cursor: psycopg.Cursor[Any], schema: str) -> None:
    # One round trip: the statements go together (a new ledger is made by every test).
    # calls: one row per reservation (and per correction), closed in place when it ends.
    # Only open reservations expire: a partial index keeps the per-reserve probe cheap.
    cursor.execute(f"""
        CREATE TABLE "{schema}".calls (
            id TEXT PRIMARY KEY,
            time TIMESTAMPTZ NOT NULL,
            state TEXT NOT NULL,
            expires_at TIMESTAMPTZ,
            owner_pid INTEGER,
            owner_host TEXT,
            claims TEXT NOT NULL,
            scopes TEXT[] NOT NULL,
            period_keys TEXT[] NOT NULL,
            tags JSON NOT NULL,
            provider TEXT NOT NULL,
            model TEXT NOT NULL,
            endpoint TEXT NOT NULL,
            attempt INTEGER NOT NULL,
            request_id TEXT,
            prompt_hash TEXT,
            prompt_text TEXT,
            estimated_input_tokens BIGINT,
            estimated_output_tokens BIGINT,
            input_exact BOOLEAN,
            estimated_usd NUMERIC NOT NULL,
            actual_usd NUMERIC NOT NULL,
            tokens JSON NOT NULL,
            usage_estimated BOOLEAN NOT NULL,
            table_version TEXT NOT NULL,
            latency_s DOUBLE PRECISION,
            status TEXT NOT NULL,
            note TEXT
        );
        CREATE INDEX calls_time ON "{schema}".calls (time);
        CREATE INDEX calls_open_expiry ON "{schema}".calls (expires_at) WHERE state = 'open';
        CREATE TABLE "{schema}".events (
            id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            call_id TEXT NOT NULL,
            kind TEXT NOT NULL,
            time TIMESTAMPTZ NOT NULL,
            amount_usd NUMERIC NOT NULL,
            detail TEXT
        );
        CREATE TABLE "{schema}".totals (
            scope TEXT NOT NULL,
            period_key TEXT NOT NULL,
            spent_usd NUMERIC NOT NULL,
            reserved_usd NUMERIC NOT NULL,
            calls BIGINT NOT NULL,
            PRIMARY KEY (scope, period_key)
        );
        CREATE TABLE "{schema}".crossings (
            scope TEXT NOT NULL,
            period_key TEXT NOT NULL,
            warn_usd TEXT NOT NULL,
            time TIMESTAMPTZ NOT NULL,
            PRIMARY KEY (scope, period_key, warn_usd)
        )""")


@migration
def q002_batch_jobs(cursor: psycopg.Cursor[Any], schema: str) -> None:
    # Batch jobs outlive the process that submitted them: the job and each request's state
    # live here, as in the SQLite ledger (see spendguard._budget.ledger.jobs).
    cursor.execute(f"""
        CREATE TABLE "{schema}".batch_jobs (
            id TEXT PRIMARY KEY,
            seq BIGINT GENERATED ALWAYS AS IDENTITY,
            provider TEXT NOT NULL,
            endpoint TEXT NOT NULL,
            state TEXT NOT NULL,
            created_at TIMESTAMPTZ NOT NULL,
            updated_at TIMESTAMPTZ NOT NULL,
            request_count INTEGER NOT NULL,
            worst_usd NUMERIC NOT NULL,
            provider_batch_id TEXT,
            provider_status TEXT,
            input_file_id TEXT,
            submitted_at TIMESTAMPTZ,
            ended_at TIMESTAMPTZ,
            deadline TIMESTAMPTZ,
            fallback BOOLEAN NOT NULL,
            fallback_lead_s DOUBLE PRECISION NOT NULL,
            cancel_requested BOOLEAN NOT NULL,
            counts JSON NOT NULL,
            note TEXT,
            owner_pid INTEGER,
            owner_host TEXT
        );
        CREATE INDEX batch_jobs_created ON "{schema}".batch_jobs (created_at);
        CREATE TABLE "{schema}".batch_items (
            job_id TEXT NOT NULL,
            custom_id TEXT NOT NULL,
            position INTEGER NOT NULL,
            model TEXT NOT NULL,
            worst_usd NUMERIC NOT NULL,
            holds JSON NOT NULL,
            hold TEXT NOT NULL,
            state TEXT NOT NULL,
            route TEXT NOT NULL,
            body JSON,
            result JSON,
            usage JSON,
            actual_usd NUMERIC,
            note TEXT,
            delivered BOOLEAN NOT NULL,
            PRIMARY KEY (job_id, custom_id)
        )""")


SCHEMA_VERSION = len(MIGRATIONS)
"""The schema version this spendguard writes: how many migrations it knows."""
