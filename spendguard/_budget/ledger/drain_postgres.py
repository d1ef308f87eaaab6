"""A PostgreSQL table of finished calls, for finance: where :func:`drain` can keep records.

``postgresql://user@host:5432/db`` (libpq's URI, options included, e.g.
``?options=-csearch_path%3Dfinance`` for a schema). One row per record in
``spendguard_records``, keyed by the record's id, so draining the same records again inserts
nothing. Money is ``NUMERIC`` (exact, as written); scopes, period keys and limits are parallel
arrays; tags and tokens are ``JSONB``. The table grows by named migrations, applied on open
under an advisory lock inside one transaction and recorded in ``spendguard_migrations``, so
two drains starting at once cannot both apply one. Never edit a released migration: add the
next one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from spendguard._budget.ledger.base import SpendRecord
from spendguard._budget.ledger.schema import newer_schema_error
from spendguard._core.errors import ConfigError, LedgerError
from spendguard._core.terminal import masked_url

if TYPE_CHECKING:
    import psycopg

__all__ = ["MIGRATIONS", "PostgresArchive", "is_postgres_url"]

Migration = Callable[["psycopg.Cursor[Any]"], None]
MIGRATIONS: list[Migration] = []
_LOCK_KEY = 0x5BE9D6A0  # pg_advisory_xact_lock key for migrations: any constant of our own
_COLUMNS = (
    "id", "time", "status", "scopes", "period_keys", "limits_usd", "tags", "provider", "model",
    "endpoint", "attempt", "request_id", "tokens", "estimated_usd", "actual_usd",
    "usage_estimated", "table_version", "latency_s", "prompt_hash", "prompt_text",
    "estimated_input_tokens", "estimated_output_tokens", "input_exact", "note", "source",
    "drained_at",
)
_INSERT = (f"INSERT INTO spendguard_records ({', '.join(_COLUMNS)}) "
           f"VALUES ({', '.join(['%s'] * len(_COLUMNS))}) ON CONFLICT (id) DO NOTHING")


def migration(function: Migration) -> Migration:
    """Register ``function`` as the next migration; its name is its identity forever."""
    MIGRATIONS.append(function)
    return function


@migration
def p001_records(cursor: psycopg.Cursor[Any]) -> None:
    cursor.execute("""
        CREATE TABLE spendguard_records (
            id TEXT PRIMARY KEY,
            time TIMESTAMPTZ NOT NULL,
            status TEXT NOT NULL,
            scopes TEXT[] NOT NULL,
            period_keys TEXT[] NOT NULL,
            limits_usd NUMERIC[] NOT NULL,
            tags JSONB NOT NULL,
            provider TEXT NOT NULL,
            model TEXT NOT NULL,
            endpoint TEXT NOT NULL,
            attempt INTEGER NOT NULL,
            request_id TEXT,
            tokens JSONB NOT NULL,
            estimated_usd NUMERIC NOT NULL,
            actual_usd NUMERIC NOT NULL,
            usage_estimated BOOLEAN NOT NULL,
            table_version TEXT NOT NULL,
            latency_s DOUBLE PRECISION,
            prompt_hash TEXT,
            prompt_text TEXT,
            estimated_input_tokens BIGINT,
            estimated_output_tokens BIGINT,
            input_exact BOOLEAN,
            note TEXT,
            source TEXT NOT NULL,
            drained_at TIMESTAMPTZ NOT NULL
        )""")
    # Finance reads by month, by model, by scope.
    cursor.execute("CREATE INDEX spendguard_records_time ON spendguard_records (time)")
    cursor.execute("CREATE INDEX spendguard_records_model ON spendguard_records (model, time)")
    cursor.execute("CREATE INDEX spendguard_records_scopes ON spendguard_records USING GIN "
                   "(scopes)")


def is_postgres_url(url: str) -> bool:
    return url.startswith(("postgresql://", "postgres://"))


class PostgresArchive:
    """The ``spendguard_records`` table in one PostgreSQL database, migrated when opened."""

    def __init__(self, url: str, *, connect_timeout_s: int = 5) -> None:
        try:
            import psycopg  # noqa: PLC0415 - optional dependency, loaded on first use
        except ImportError:
            raise ConfigError("drain: a PostgreSQL destination needs psycopg; install it with "
                              "pip install 'spendguard-llm[postgres]'") from None
        self.url = masked_url(url)
        try:
            self._db = psycopg.connect(url, connect_timeout=connect_timeout_s)
        except psycopg.Error as exc:
            raise LedgerError(f"cannot open the PostgreSQL archive {self.url}: {exc}") from exc
        try:
            self.migrated = migrate(self._db, self.url)
        except BaseException as exc:
            self._db.close()
            if not isinstance(exc, psycopg.Error):
                raise
            raise LedgerError(f"cannot open the PostgreSQL archive {self.url}: {exc}") from exc

    def write(self, records: Sequence[SpendRecord], *, source: str) -> int:
        """Insert the records not there yet, in one transaction; returns how many were new."""
        import psycopg  # noqa: PLC0415

        now = datetime.now(UTC)
        try:
            with self._db.transaction(), self._db.cursor() as cursor:
                cursor.executemany(_INSERT, [_row(record, source, now) for record in records])
                return max(cursor.rowcount, 0)
        except psycopg.Error as exc:
            raise LedgerError(f"cannot write the PostgreSQL archive {self.url}: {exc}") from exc

    def records(self) -> Iterator[SpendRecord]:
        """Every record in the table, oldest first (ties by id): what a reseed reads back."""
        import psycopg  # noqa: PLC0415

        columns = _COLUMNS[:-2]  # not where it came from nor when it was drained
        try:
            with self._db.cursor(name="spendguard_reseed") as cursor:
                cursor.execute(f"SELECT {', '.join(columns)} FROM spendguard_records "
                               f"ORDER BY time, id")
                for row in cursor:
                    yield _record(dict(zip(columns, row, strict=True)))
        except psycopg.Error as exc:
            raise LedgerError(f"cannot read the PostgreSQL archive {self.url}: {exc}") from exc

    def close(self) -> None:
        self._db.close()


def migrate(db: psycopg.Connection[Any], url: str = "") -> list[str]:
    """Apply the migrations ``db`` lacks, atomically; returns their names. An archive with
    migrations this spendguard does not know (a newer one made it) is refused."""
    with db.transaction(), db.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
        cursor.execute("CREATE TABLE IF NOT EXISTS spendguard_migrations "
                       "(name TEXT PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL)")
        cursor.execute("SELECT name FROM spendguard_migrations")
        applied = {name for (name,) in cursor.fetchall()}
        if not applied <= {function.__name__ for function in MIGRATIONS}:
            raise newer_schema_error(f"archive {url}", len(applied), len(MIGRATIONS))
        pending = [function for function in MIGRATIONS if function.__name__ not in applied]
        for function in pending:
            function(cursor)
            cursor.execute("INSERT INTO spendguard_migrations VALUES (%s, %s)",
                           (function.__name__, datetime.now(UTC)))
    return [function.__name__ for function in pending]


def _row(record: SpendRecord, source: str, now: datetime) -> tuple[Any, ...]:
    from psycopg.types.json import Jsonb  # noqa: PLC0415

    limits = list(record.limits_usd) + [None] * (len(record.scopes) - len(record.limits_usd))
    return (
        record.id, record.time, record.status, list(record.scopes), list(record.period_keys),
        limits, Jsonb(dict(record.tags)), record.provider, record.model, record.endpoint,
        record.attempt, record.request_id, Jsonb(dict(record.tokens)), record.estimated_usd,
        record.actual_usd, record.usage_estimated, record.table_version, record.latency_s,
        record.prompt_hash, record.prompt_text, record.estimated_input_tokens,
        record.estimated_output_tokens, record.input_exact, record.note, source, now,
    )



def _record(row: dict[str, Any]) -> SpendRecord:
    """A row of ``spendguard_records`` as the record it was drained from."""
    return SpendRecord(
        id=row["id"], time=row["time"].astimezone(UTC), scopes=tuple(row["scopes"]),
        tags=dict(row["tags"]), provider=row["provider"], model=row["model"],
        endpoint=row["endpoint"], tokens=dict(row["tokens"]),
        estimated_usd=row["estimated_usd"], actual_usd=row["actual_usd"],
        usage_estimated=row["usage_estimated"], table_version=row["table_version"],
        latency_s=row["latency_s"], request_id=row["request_id"], attempt=row["attempt"],
        status=row["status"], prompt_hash=row["prompt_hash"], prompt_text=row["prompt_text"],
        estimated_input_tokens=row["estimated_input_tokens"],
        estimated_output_tokens=row["estimated_output_tokens"], input_exact=row["input_exact"],
        note=row["note"], period_keys=tuple(row["period_keys"]),
        limits_usd=tuple(row["limits_usd"]))
