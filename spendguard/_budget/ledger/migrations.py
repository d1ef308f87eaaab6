"""The SQLite ledger's schema, grown by named migration functions applied on open.

Each migration runs once, in order, inside the same ``BEGIN IMMEDIATE`` transaction that records
its name in ``_migrations``, so two processes opening a new file at once cannot both apply it.
Never edit a released migration: add the next one.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime
from decimal import Decimal

from spendguard._budget.ledger.schema import newer_schema_error
from spendguard._budget.ledger.sqlite_keys import rekey_calls
from spendguard._core.periods import held_key

__all__ = ["MIGRATIONS", "migrate", "migration"]

Migration = Callable[[sqlite3.Connection], None]
MIGRATIONS: list[Migration] = []


def migration(function: Migration) -> Migration:
    """Register ``function`` as the next migration; its name is its identity forever."""
    MIGRATIONS.append(function)
    return function


def migrate(db: sqlite3.Connection, ledger: str = "") -> list[str]:
    """Apply the migrations ``db`` lacks; returns their names. ``db`` must be in autocommit mode.

    The file's schema version is the number of migrations applied to it, also stamped in
    ``PRAGMA user_version``; a file with migrations this spendguard does not know (a newer one
    wrote it) is refused with :func:`~spendguard._budget.ledger.schema.newer_schema_error`.
    """
    db.execute("CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied_at TEXT)")
    if _pending(db, ledger) == []:
        return []  # the common case: no write lock taken
    db.execute("BEGIN IMMEDIATE")
    try:
        # Again, under the lock: another process may have just migrated.
        pending = _pending(db, ledger)
        for function in pending:
            function(db)
            db.execute("INSERT INTO _migrations (name, applied_at) VALUES (?, ?)",
                       (function.__name__, datetime.now(UTC).isoformat()))
        db.execute(f"PRAGMA user_version = {len(MIGRATIONS)}")
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    return [function.__name__ for function in pending]


def _pending(db: sqlite3.Connection, ledger: str) -> list[Migration]:
    applied = {name for (name,) in db.execute("SELECT name FROM _migrations")}
    known = {function.__name__ for function in MIGRATIONS}
    stamped = db.execute("PRAGMA user_version").fetchone()[0]
    if not applied <= known or stamped > len(MIGRATIONS):
        raise newer_schema_error(ledger or "file", max(len(applied), stamped),
                                 len(MIGRATIONS))
    return [function for function in MIGRATIONS if function.__name__ not in applied]


@migration
def m001_initial(db: sqlite3.Connection) -> None:
    # calls: one row per reservation (and per correction), closed in place when it ends;
    # the columns that identify the call never change after insert. Money is TEXT holding
    # an exact Decimal; times are fixed-width UTC text, so they sort as they compare.
    db.execute("""
        CREATE TABLE calls (
            id TEXT PRIMARY KEY,
            time TEXT NOT NULL,
            state TEXT NOT NULL,
            expires_at TEXT,
            owner_pid INTEGER,
            owner_host TEXT,
            claims TEXT NOT NULL,
            scopes TEXT NOT NULL,
            period_keys TEXT NOT NULL,
            tags TEXT NOT NULL,
            provider TEXT NOT NULL,
            model TEXT NOT NULL,
            endpoint TEXT NOT NULL,
            attempt INTEGER NOT NULL,
            request_id TEXT,
            prompt_hash TEXT,
            prompt_text TEXT,
            estimated_input_tokens INTEGER,
            estimated_output_tokens INTEGER,
            input_exact INTEGER,
            estimated_usd TEXT NOT NULL,
            actual_usd TEXT NOT NULL,
            tokens TEXT NOT NULL,
            usage_estimated INTEGER NOT NULL,
            table_version TEXT NOT NULL,
            latency_s REAL,
            status TEXT NOT NULL,
            note TEXT
        )""")
    # Reports read by time range; every index is one more page written per call, so just one.
    db.execute("CREATE INDEX calls_time ON calls (time)")
    # Only open reservations can expire; a partial index keeps the per-reserve check cheap.
    db.execute("CREATE INDEX calls_open_expiry ON calls (expires_at) WHERE state = 'open'")
    db.execute("""
        CREATE TABLE events (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            call_id TEXT NOT NULL,
            kind TEXT NOT NULL,
            time TEXT NOT NULL,
            amount_usd TEXT NOT NULL,
            detail TEXT
        )""")
    db.execute("""
        CREATE TABLE totals (
            scope TEXT NOT NULL,
            period_key TEXT NOT NULL,
            spent_usd TEXT NOT NULL,
            reserved_usd TEXT NOT NULL,
            PRIMARY KEY (scope, period_key)
        ) WITHOUT ROWID""")
    db.execute("""
        CREATE TABLE crossings (
            scope TEXT NOT NULL,
            period_key TEXT NOT NULL,
            warn_usd TEXT NOT NULL,
            time TEXT NOT NULL,
            PRIMARY KEY (scope, period_key, warn_usd)
        ) WITHOUT ROWID""")


@migration
def m002_batch_jobs(db: sqlite3.Connection) -> None:
    # Batch jobs outlive the process that submitted them (up to the providers' 24 hours), so
    # the job and each request's state live here: a restarted process resumes polling, settles
    # each request's reservation once and hands each result over once. Request bodies and
    # results are kept only while they are needed (until final / until delivered).
    db.execute("""
        CREATE TABLE batch_jobs (
            id TEXT PRIMARY KEY,
            provider TEXT NOT NULL,
            endpoint TEXT NOT NULL,
            state TEXT NOT NULL,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            request_count INTEGER NOT NULL,
            worst_usd TEXT NOT NULL,
            provider_batch_id TEXT,
            provider_status TEXT,
            input_file_id TEXT,
            submitted_at TEXT,
            ended_at TEXT,
            deadline TEXT,
            fallback INTEGER NOT NULL,
            fallback_lead_s REAL NOT NULL,
            cancel_requested INTEGER NOT NULL,
            counts TEXT NOT NULL,
            note TEXT,
            owner_pid INTEGER,
            owner_host TEXT
        )""")
    db.execute("CREATE INDEX batch_jobs_created ON batch_jobs (created_at)")
    db.execute("""
        CREATE TABLE batch_items (
            job_id TEXT NOT NULL,
            custom_id TEXT NOT NULL,
            position INTEGER NOT NULL,
            model TEXT NOT NULL,
            worst_usd TEXT NOT NULL,
            holds TEXT NOT NULL,
            hold TEXT NOT NULL,
            state TEXT NOT NULL,
            route TEXT NOT NULL,
            body TEXT,
            result TEXT,
            usage TEXT,
            actual_usd TEXT,
            note TEXT,
            delivered INTEGER NOT NULL,
            PRIMARY KEY (job_id, custom_id)
        ) WITHOUT ROWID""")


@migration
def m003_call_counts(db: sqlite3.Connection) -> None:
    # Call-count caps (max_calls) are checked against a count kept beside the money in the same
    # row and transaction: calls reserved in a period and not released. Existing rows are
    # counted from their calls, so a cap added later sees the calls made before it.
    db.execute("ALTER TABLE totals ADD COLUMN calls INTEGER NOT NULL DEFAULT 0")
    # One pass over the calls, grouped, then one keyed update per (scope, period): linear in
    # the ledger's size, not calls x totals.
    db.execute("""
        UPDATE totals SET calls = counted.n FROM (
            SELECT json_extract(claim.value, '$[0]') AS scope,
                   json_extract(claim.value, '$[1]') AS period_key, count(*) AS n
            FROM calls, json_each(calls.claims) AS claim
            WHERE calls.state IN ('open', 'settled', 'recovered')
            GROUP BY 1, 2) AS counted
        WHERE totals.scope = counted.scope AND totals.period_key = counted.period_key""")


@migration
def m004_events_without_autoincrement(db: sqlite3.Connection) -> None:
    # AUTOINCREMENT kept the largest event id in sqlite_sequence: one more page written by
    # every transaction that logs an event (all of them). Events are never deleted, so a plain
    # INTEGER PRIMARY KEY gives the same ids (one past the largest) in the same order. The
    # table is rebuilt with its rows and ids as they were.
    db.execute("""
        CREATE TABLE events_rebuilt (
            id INTEGER PRIMARY KEY,
            call_id TEXT NOT NULL,
            kind TEXT NOT NULL,
            time TEXT NOT NULL,
            amount_usd TEXT NOT NULL,
            detail TEXT
        )""")
    db.execute("INSERT INTO events_rebuilt (id, call_id, kind, time, amount_usd, detail) "
               "SELECT id, call_id, kind, time, amount_usd, detail FROM events ORDER BY id")
    db.execute("DROP TABLE events")
    db.execute("ALTER TABLE events_rebuilt RENAME TO events")
    db.execute("DELETE FROM sqlite_sequence WHERE name = 'events'")


@migration
def m005_open_calls_held_apart(db: sqlite3.Connection) -> None:
    # A rolling window's open calls are held under its held key ("1h@open") until they close,
    # not in the step they were reserved in, which the window stops summing once it is a
    # window old: a call still running would stop counting. The calls open now move there.
    # Money is exact Decimal text, so it is added here, not by SQLite (floating point).
    moves: dict[tuple[str, str], tuple[Decimal, int]] = {}
    rows = db.execute("SELECT estimated_usd, claims FROM calls WHERE state = 'open'")
    for worst_text, claims_text in rows.fetchall():
        worst = Decimal(worst_text)
        for scope, key, *_ in json.loads(claims_text):
            held = held_key(key)
            if held == key:
                continue
            for target, sign in ((key, -1), (held, 1)):
                usd, calls = moves.get((scope, target), (Decimal(0), 0))
                moves[(scope, target)] = (usd + sign * worst, calls + sign)
    for (scope, key), (usd, calls) in moves.items():
        row = db.execute("SELECT spent_usd, reserved_usd, calls FROM totals WHERE scope = ? AND "
                         "period_key = ?", (scope, key)).fetchone()
        spent, reserved, counted = row if row is not None else ("0", "0", 0)
        db.execute("INSERT OR REPLACE INTO totals (scope, period_key, spent_usd, reserved_usd, "
                   "calls) VALUES (?, ?, ?, ?, ?)",
                   (scope, key, spent, str(Decimal(reserved) + usd), counted + calls))


@migration
def m006_events_read_from_calls(db: sqlite3.Connection) -> None:
    # The log is read from the calls themselves from now on (each row is its reservation and
    # its close): a reserve and a settle no longer write an events row, one b-tree page and
    # one statement each. Nothing to move: the calls already say what their events said, and
    # the events table stays as it was. Applied, it stamps the schema that a spendguard
    # still appending events refuses to write to, so no process keeps half the log.
    del db


@migration
def m007_calls_keyed_by_id(db: sqlite3.Connection) -> None:
    # A reservation and its close wrote four b-trees besides the row and its totals: the index
    # on ids (the primary key), the one on time, and the partial index of open calls (an entry
    # made, then removed). The row's rowid is now computed from its id (sqlite_keys), so the
    # table is its own index on ids; open calls are found among the rows with the highest
    # keys, or in calls_parked, which only calls that outlive many later ones enter. The
    # table is rebuilt without the primary key on id (its columns as they were, in their
    # order), then every row takes its key. Calls open now are parked.
    db.execute("""
        CREATE TABLE calls_keyed (
            id TEXT NOT NULL,
            time TEXT NOT NULL,
            state TEXT NOT NULL,
            expires_at TEXT,
            owner_pid INTEGER,
            owner_host TEXT,
            claims TEXT NOT NULL,
            scopes TEXT NOT NULL,
            period_keys TEXT NOT NULL,
            tags TEXT NOT NULL,
            provider TEXT NOT NULL,
            model TEXT NOT NULL,
            endpoint TEXT NOT NULL,
            attempt INTEGER NOT NULL,
            request_id TEXT,
            prompt_hash TEXT,
            prompt_text TEXT,
            estimated_input_tokens INTEGER,
            estimated_output_tokens INTEGER,
            input_exact INTEGER,
            estimated_usd TEXT NOT NULL,
            actual_usd TEXT NOT NULL,
            tokens TEXT NOT NULL,
            usage_estimated INTEGER NOT NULL,
            table_version TEXT NOT NULL,
            latency_s REAL,
            status TEXT NOT NULL,
            note TEXT
        )""")
    db.execute("INSERT INTO calls_keyed (rowid, id, time, state, expires_at, owner_pid, "
               "owner_host, claims, scopes, period_keys, tags, provider, model, endpoint, "
               "attempt, request_id, prompt_hash, prompt_text, estimated_input_tokens, "
               "estimated_output_tokens, input_exact, estimated_usd, actual_usd, tokens, "
               "usage_estimated, table_version, latency_s, status, note) "
               "SELECT rowid, id, time, state, expires_at, owner_pid, owner_host, claims, "
               "scopes, period_keys, tags, provider, model, endpoint, attempt, request_id, "
               "prompt_hash, prompt_text, estimated_input_tokens, estimated_output_tokens, "
               "input_exact, estimated_usd, actual_usd, tokens, usage_estimated, "
               "table_version, latency_s, status, note FROM calls ORDER BY rowid")
    db.execute("DROP TABLE calls")  # its indexes with it
    db.execute("ALTER TABLE calls_keyed RENAME TO calls")
    rekey_calls(db)
    db.execute("CREATE INDEX calls_time ON calls (time)")
    db.execute("""
        CREATE TABLE calls_parked (
            expires_at TEXT NOT NULL,
            call_id TEXT NOT NULL,
            PRIMARY KEY (expires_at, call_id)
        ) WITHOUT ROWID""")
    db.execute("INSERT INTO calls_parked SELECT expires_at, id FROM calls WHERE state = 'open' "
               "AND expires_at IS NOT NULL")


@migration
def m008_time_index_by_second(db: sqlite3.Connection) -> None:
    # The index on time keyed by the call's second (an integer) instead of its 32-character
    # time: entries less than half the size, so its leaves fill and are rebalanced less than
    # half as often (each time SQLite rewrites the last leaves and their parent). Reports read
    # a range of seconds through it, then compare the exact times (``sqlite.records_query``).
    db.execute("DROP INDEX calls_time")
    db.execute("CREATE INDEX calls_time ON calls (CAST(strftime('%s', time) AS INTEGER))")
