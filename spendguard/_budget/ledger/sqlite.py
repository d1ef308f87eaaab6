"""The SQLite ledger (``sqlite:///path``): the default, safe across threads and processes.

Every write is one ``BEGIN IMMEDIATE`` transaction, which takes the file's write lock before
reading the totals it checks, so check-and-reserve cannot interleave with another writer in any
thread or process; ``verify`` reads one snapshot without that lock. Each thread gets its own
connection (sqlite3 connections are not shareable), re-made after a fork, and keeps its
prepared statements.

The settings, and why they are enough:

- ``journal_mode=WAL`` (kept in the file): a commit appends the pages it changed to the
  ``-wal`` file; readers go on meanwhile, and a transaction the writer did not finish is
  simply not there after a crash.
- ``synchronous=NORMAL``: ``COMMIT`` returns once the WAL frames are written to the OS, which
  keeps them whatever happens to the process, so a reservation is durable against a process
  crash (``kill -9`` included) before its request is sent. Only checkpoints fsync. A power
  cut or OS crash can lose the commits since the last checkpoint (normally under 4 MiB of
  WAL, a few hundred reserve + settle pairs), never the file's consistency: SQLite replays
  the WAL up to its last whole, checksummed commit (see
  https://sqlite.org/pragma.html#pragma_synchronous and https://sqlite.org/wal.html).
  ``FULL`` would fsync every commit, about ten times slower; a ledger that must survive power
  loss call by call needs it (or a server database).
- ``page_size=1024`` for new files and a checkpoint every 4 MiB of WAL: a reserve + settle
  changes about a dozen pages by a few bytes each, and every changed page goes into the WAL
  whole, so smaller pages write, checksum and copy back less per call (about a sixth less
  CPU per call than 4 KiB pages; reading every call back costs about a third more).
- A 30 s busy timeout: writers queue for the lock instead of failing.
- Never ``synchronous=OFF`` (checkpoints would not sync, so a power cut could corrupt the
  file) nor ``journal_mode=MEMORY``/``OFF`` (a crash mid-commit could).

``mmap_size``, ``temp_store=MEMORY``, a larger ``cache_size``, ``secure_delete`` off and a
longer checkpoint interval measured no faster for reserve + settle, so they stay as they are.

What a call costs is mostly the pages its two commits write (each page whole, with its
checksum, two writes to the ``-wal`` file): one per b-tree a commit changes, plus the
occasional split, about a dozen per reserve + settle. So the schema keeps them few: an index
only where a read needs one (calls by id, by time for reports, open reservations by expiry);
call ids that begin with their time, so a new id goes on the last page of its index, already
in memory; an event log without ``AUTOINCREMENT``, which wrote ``sqlite_sequence`` in every
commit.

Expired reservations are charged inside the next reservation's transaction and when a process
opens the ledger (``recover_expired``): recovery reads committed rows only, so it needs no
settings of its own. Each reserve first asks the partial index of open reservations whether
any has expired (``LIMIT 1``), and reads rows only when one has.

Money is TEXT holding an exact Decimal, so totals are read, added in Python and written back
inside the transaction: ``SET spent_usd = spent_usd + ?`` would have SQLite add them as
floating-point numbers.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from types import TracebackType
from typing import Any

from spendguard._budget.ledger.base import Crossing, ScopeClaim, Settlement, SpendRecord, Totals
from spendguard._budget.ledger.engine import OPEN, Call, CallRow, Event, TransactionalLedger
from spendguard._budget.ledger.filters import parse_tag
from spendguard._budget.ledger.limits import sum_totals
from spendguard._budget.ledger.migrations import migrate
from spendguard._budget.ledger.replay import CallBooks
from spendguard._budget.ledger.sqlite_files import (
    check_existing,
    create_atomically,
    file_state,
    ledger_error,
    read_only_uris,
)
from spendguard._core.errors import LedgerError, LedgerNotFound
from spendguard._core.periods import as_utc, utc_now

__all__ = ["SqliteLedger", "open_sqlite"]

_BUSY_TIMEOUT_S = 30.0
_PAGE_ROWS = 500  # records read from the file at a time
_IDS_PER_READ = 500  # ids bound in one IN (...): well under SQLite's variable limit
_CALL_COLUMNS = (
    "id, time, state, expires_at, owner_pid, owner_host, claims, scopes, period_keys, tags, "
    "provider, model, endpoint, attempt, request_id, prompt_hash, prompt_text, "
    "estimated_input_tokens, estimated_output_tokens, input_exact, estimated_usd, actual_usd, "
    "tokens, usage_estimated, table_version, latency_s, status, note"
)
_INSERT_CALL = f"INSERT INTO calls ({_CALL_COLUMNS}) VALUES ({', '.join('?' * 28)})"
_SELECT_CALL = f"SELECT {_CALL_COLUMNS} FROM calls"
# The hot path's statements, one text each: sqlite3 keeps every statement it has prepared,
# keyed by its text, so these are compiled once per connection.
_SET_CLOSED = ("UPDATE calls SET state = ?, actual_usd = ?, tokens = ?, usage_estimated = ?, "
               "table_version = ?, latency_s = ?, request_id = ?, status = ?, note = ? ")
_CLOSE_CALL = f"{_SET_CLOSED}WHERE id = ?"
# The close of an open row this process remembers: the state test replaces reading it first,
# and the row is found by the rowid its insert returned, without a search of the index on ids
# (the id test keeps it right should the rowid have changed, as a VACUUM may do).
_CLOSE_OPEN_CALL = f"{_SET_CLOSED}WHERE rowid = ? AND id = ? AND state = 'open'"
_INSERT_EVENT = ("INSERT INTO events (call_id, kind, time, amount_usd, detail) "
                 "VALUES (?, ?, ?, ?, ?)")
_SELECT_TOTALS = ("SELECT spent_usd, reserved_usd, calls FROM totals "
                  "WHERE scope = ? AND period_key = ?")
_UPDATE_TOTALS = ("UPDATE totals SET spent_usd = ?, reserved_usd = ?, calls = ? "
                  "WHERE scope = ? AND period_key = ?")
_ANY_EXPIRED = "SELECT 1 FROM calls WHERE state = 'open' AND expires_at <= ? LIMIT 1"
_PUT_TOTALS = ("INSERT OR REPLACE INTO totals (scope, period_key, spent_usd, reserved_usd, "
               "calls) VALUES (?, ?, ?, ?, ?)")
# The file's page: every commit appends each page it changed to the WAL whole (about a dozen
# per reserve + settle, most of them changed by a few bytes), so smaller pages mean less to
# write, checksum and later copy back. Fixed when a file is made; older files keep theirs.
_PAGE_SIZE = 1024
# WAL bytes between checkpoints: the 4 MiB SQLite's default gives 4 KiB pages, whatever the
# page size. A checkpoint is where synchronous=NORMAL syncs (WAL, then the database file).
_CHECKPOINT_BYTES = 4 * 1024 * 1024


class SqliteLedger(TransactionalLedger):
    """A ledger in one SQLite file, shared by every thread and process that opens it."""

    def __init__(self, path: Path, *, url: str | None = None, read_only: bool = False) -> None:
        self.path = path
        self.url = url or f"sqlite:///{path.resolve()}"
        self.read_only = read_only
        self._target: str | Path = path
        self._local = threading.local()
        self._generation = 0
        self._all: list[sqlite3.Connection] = []
        # Reservations this instance made and has not closed, with their rowids: settling one
        # reads nothing of it back; the closing UPDATE checks it is still open (another
        # process may have recovered it, and then it is read from the file after all).
        self._open_rows: dict[str, tuple[int, Call]] = {}
        self._all_lock = threading.Lock()
        self.recovered_at_open: tuple[str, ...] = ()  # charged by the open itself
        self._state_at_open: tuple[int, int] | None = None
        if read_only:
            self._open_to_read()
            return
        try:
            if not check_existing(path):
                create_atomically(path, _prepare)
            db = self._connection()
            migrate(db, f"at {path}")
            _check_integrity(db)
        except LedgerError:  # a newer spendguard's ledger
            self.close()
            raise
        except (OSError, sqlite3.Error) as exc:
            self.close()
            raise ledger_error(path, "open", exc) from exc
        # A process that died mid-call left a reservation: charge it once it has expired.
        self.recovered_at_open = tuple(self.recover_expired(utc_now()))

    def _open_to_read(self) -> None:
        if not check_existing(self.path):
            raise LedgerNotFound(f"no ledger at {self.path}: the file does not exist (nothing has "
                              f"been recorded there); check --ledger or SPENDGUARD_LEDGER")
        failure: sqlite3.Error | None = None
        self._state_at_open = file_state(self.path)
        for uri in read_only_uris(self.path):
            self._target = uri
            try:
                self._connection().execute("SELECT count(*) FROM calls").fetchone()
                return
            except sqlite3.Error as exc:
                failure = exc
                self.close()
        assert failure is not None
        raise ledger_error(self.path, "read", failure) from failure

    def _connection(self) -> sqlite3.Connection:
        return self._handles()[0]

    def _handles(self) -> tuple[sqlite3.Connection, sqlite3.Cursor, _Transaction]:
        """This thread's connection, the cursor its transactions run their statements on
        (one made per connection, not one per statement as ``Connection.execute`` makes), and
        its write transaction (made once per connection, not once per use)."""
        held = getattr(self._local, "held", None)
        if held is not None and held[0] == os.getpid() and held[1] == self._generation:
            handles: tuple[sqlite3.Connection, sqlite3.Cursor, _Transaction] = held[2]
            return handles
        db = sqlite3.connect(self._target, timeout=_BUSY_TIMEOUT_S, isolation_level=None,
                             check_same_thread=False, uri=isinstance(self._target, str))
        if not self.read_only:
            _tune(db)
        cursor = db.cursor()
        # IMMEDIATE takes the write lock before the limits are read, so nothing another
        # process writes can come between a read and the write that depends on it. A read-only
        # ledger only reads (verify), and could not take it.
        handles = (db, cursor, _Transaction(self, db, cursor,
                                            "BEGIN" if self.read_only else "BEGIN IMMEDIATE"))
        self._local.held = (os.getpid(), self._generation, handles)
        with self._all_lock:
            self._all.append(db)
        return handles

    def _transaction(self) -> AbstractContextManager[_Tx]:
        try:
            # A thread's first transaction opens its connection, which can fail as an open does.
            return self._handles()[2]
        except sqlite3.Error as exc:
            raise ledger_error(self.path, "open", exc) from exc

    def _snapshot(self) -> AbstractContextManager[_Tx]:
        # A deferred transaction reads one WAL snapshot without the write lock: verifying a
        # large ledger does not stall the processes writing to it.
        try:
            db, cursor, _ = self._handles()
        except sqlite3.Error as exc:
            raise ledger_error(self.path, "open", exc) from exc
        return _Transaction(self, db, cursor, "BEGIN")

    def settle(self, reservation_id: str, settlement: Settlement) -> list[Crossing]:
        try:
            return super().settle(reservation_id, settlement)
        except _StaleOpenRow:  # rolled back; the row is read from the file this time
            self._open_rows.pop(reservation_id, None)
            return super().settle(reservation_id, settlement)

    def release(self, reservation_id: str, *, reason: str, time: datetime) -> bool:
        try:
            return super().release(reservation_id, reason=reason, time=time)
        except _StaleOpenRow:
            self._open_rows.pop(reservation_id, None)
            return super().release(reservation_id, reason=reason, time=time)

    def totals(self, scope: str, period_key: str) -> Totals:
        try:
            return _Tx(self._connection(), {}).totals(scope, period_key)
        except sqlite3.Error as exc:
            raise ledger_error(self.path, "read", exc) from exc

    def totals_sum(self, scope: str, period_keys: Sequence[str]) -> Totals:
        return _Tx(self._connection(), {}).totals_sum(scope, period_keys)

    def records(self, *, since: datetime | None = None, until: datetime | None = None,
                scope: str | None = None, tag: str | None = None,
                model: str | None = None) -> Iterator[SpendRecord]:
        where, params = ["state != 'open'"], []
        if since is not None:
            where.append("time >= ?")
            params.append(_ts(since))
        if until is not None:
            where.append("time < ?")
            params.append(_ts(until))
        if model is not None:
            where.append("model = ?")
            params.append(model)
        if scope is not None:
            where.append("EXISTS (SELECT 1 FROM json_each(calls.scopes) WHERE value = ?)")
            params.append(scope)
        if tag is not None:
            key, value = parse_tag(tag)  # the key is a plain word, safe inside the JSON path
            where.append(f"json_type(tags, '$.\"{key}\"') IS NOT NULL" if value is None
                         else f"json_extract(tags, '$.\"{key}\"') = ?")
            params.extend([] if value is None else [value])
        sql = f"{_SELECT_CALL} WHERE {' AND '.join(where)} ORDER BY time, id"
        return self._stream(sql, params)

    def _stream(self, sql: str, params: list[Any]) -> Iterator[SpendRecord]:
        # Its own connection: a long export must not hold a cursor open on the connection
        # this thread uses for reservations.
        try:
            db = sqlite3.connect(self._target, timeout=_BUSY_TIMEOUT_S,
                                 uri=isinstance(self._target, str))
        except sqlite3.Error as exc:
            raise ledger_error(self.path, "read", exc) from exc
        try:
            cursor = db.execute(sql, params)
            while rows := cursor.fetchmany(_PAGE_ROWS):
                for row in rows:
                    yield _row_to_call(row).record
        except sqlite3.Error as exc:
            raise ledger_error(self.path, "read", exc) from exc
        finally:
            db.close()
        self._check_unchanged()

    def _check_unchanged(self) -> None:
        """An idle ledger is read as immutable (see ``read_only_uris``): a writer that came
        and rewrote the file meanwhile makes what was read unreliable, and says so."""
        if (self.read_only and isinstance(self._target, str) and "immutable=1" in self._target
                and file_state(self.path) != self._state_at_open):
            raise LedgerError(f"ledger {self.path} was written while it was being read; run "
                              f"the command again")

    def close(self) -> None:
        """Close every connection this ledger made; a later call opens new ones."""
        with self._all_lock:
            connections, self._all = self._all, []
            self._generation += 1
        for db in connections:
            db.close()

    def __repr__(self) -> str:
        return f"SqliteLedger({str(self.path)!r})"


def open_sqlite(url: str, *, read_only: bool = False) -> SqliteLedger:
    """The ledger for a resolved ``sqlite:///abs/path`` URL; ``read_only`` never writes it."""
    return SqliteLedger(Path(url.removeprefix("sqlite:///")), url=url, read_only=read_only)


def _prepare(db: sqlite3.Connection) -> None:
    """A new ledger file's set-up: its page size and WAL (both kept in the file), the schema."""
    db.execute(f"PRAGMA page_size={_PAGE_SIZE}")
    db.execute("PRAGMA journal_mode=WAL")
    migrate(db)


def _tune(db: sqlite3.Connection) -> None:
    """A writing connection's settings (they last as long as the connection).

    ``synchronous=NORMAL`` in WAL mode: a commit is in the OS's hands when it returns, so a
    process crash loses nothing committed; fsync happens only at checkpoints, so a power cut or
    OS crash can lose the commits since the last one (never the file's consistency).
    """
    db.execute("PRAGMA synchronous=NORMAL")
    page_size = db.execute("PRAGMA page_size").fetchone()[0]
    db.execute(f"PRAGMA wal_autocheckpoint={_CHECKPOINT_BYTES // page_size}")


def _check_integrity(db: sqlite3.Connection) -> None:
    # A damaged page would otherwise be found only by the query that reads it, perhaps after
    # calls were sent; quick_check reads every page once (about 0.1 s per 100 MB).
    problems = [row[0] for row in db.execute("PRAGMA quick_check(3)")]
    if problems != ["ok"]:
        raise sqlite3.DatabaseError(f"database disk image is malformed: {'; '.join(problems)}")


def _roll_back(db: sqlite3.Connection) -> None:
    # SQLite ends the transaction itself on some errors (a full disk, an I/O error); a
    # ROLLBACK then would raise "no transaction is active" over the real cause.
    if db.in_transaction:
        with contextlib.suppress(sqlite3.Error):
            db.execute("ROLLBACK")


class _StaleOpenRow(Exception):
    """An open row remembered by this process was closed by another one (recovered)."""


class _Transaction(AbstractContextManager["_Tx"]):
    """Transactions on one connection, one at a time: each committed when its block ends,
    rolled back when it raises. A plain class rather than a ``@contextmanager`` generator,
    made once per connection with its storage operations: entered twice per guarded call."""

    __slots__ = ("_begin", "_cursor", "_db", "_path", "_tx")

    def __init__(self, ledger: SqliteLedger, db: sqlite3.Connection, cursor: sqlite3.Cursor,
                 begin: str) -> None:
        self._path = ledger.path
        self._db, self._cursor, self._begin = db, cursor, begin
        self._tx = _Tx(db, ledger._open_rows, cursor)

    def __enter__(self) -> _Tx:
        try:
            self._cursor.execute(self._begin)
        except sqlite3.Error as exc:
            raise ledger_error(self._path, "lock", exc) from exc
        tx = self._tx
        # What the last transaction read may have changed since: nothing of it is kept.
        tx.seen.clear()
        tx.stored.clear()
        tx.unverified = None
        return tx

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        if kind is None:
            try:
                self._cursor.execute("COMMIT")
            except sqlite3.Error as error:
                _roll_back(self._db)
                raise ledger_error(self._path, "write", error) from error
            return
        _roll_back(self._db)
        if isinstance(exc, sqlite3.Error):
            raise ledger_error(self._path, "write", exc) from exc


class _Tx:
    """The storage operations of :class:`~spendguard._budget.ledger.engine.Tx` on one connection.

    Totals read or written in the transaction are kept (``seen``): the write lock is held
    until it ends, so no other process can change them meanwhile, and the rules' later reads
    of the same row (settle's warning check, a rolling window's current step) cost nothing.
    A row read is known to exist (``stored``), so writing it back updates it in place rather
    than replacing it (a delete and an insert in the table's b-tree). Statements whose results
    are read at once run on the transaction's cursor (``run``); the ones iterated lazily
    (``all_events``) get cursors of their own.
    """

    def __init__(self, db: sqlite3.Connection, open_rows: dict[str, tuple[int, Call]],
                 cursor: sqlite3.Cursor | None = None) -> None:
        self.db = db
        self.run = (db if cursor is None else cursor).execute
        self.open_rows = open_rows
        self.seen: dict[tuple[str, str], Totals] = {}
        self.stored: set[tuple[str, str]] = set()
        # An open row from memory, its state not yet read: its id and rowid.
        self.unverified: tuple[str, int] | None = None

    def totals(self, scope: str, period_key: str) -> Totals:
        known = self.seen.get((scope, period_key))
        if known is None:
            row = self.run(_SELECT_TOTALS, (scope, period_key)).fetchone()
            if row is None:
                known = Totals()
            else:
                known = Totals(Decimal(row[0]), Decimal(row[1]), row[2])
                self.stored.add((scope, period_key))
            self.seen[(scope, period_key)] = known
        return known

    def totals_sum(self, scope: str, period_keys: Sequence[str]) -> Totals:
        # One indexed read for a rolling window's 61 steps, not 61 reads.
        marks = ", ".join("?" * len(period_keys))
        rows = self.run(f"SELECT period_key, spent_usd, reserved_usd, calls FROM totals "
                        f"WHERE scope = ? AND period_key IN ({marks})",
                        (scope, *period_keys)).fetchall()
        steps = dict.fromkeys(period_keys, Totals())
        steps.update((key, Totals(Decimal(spent), Decimal(reserved), calls))
                     for key, spent, reserved, calls in rows)
        self.stored.update((scope, key) for key, *_ in rows)
        self.seen.update(((scope, key), totals) for key, totals in steps.items())
        return sum_totals(steps.values())

    def put_totals(self, scope: str, period_key: str, totals: Totals) -> None:
        key = (scope, period_key)
        self.seen[key] = totals
        if key in self.stored:
            self.run(_UPDATE_TOTALS, (str(totals.spent_usd), str(totals.reserved_usd),
                                      totals.calls, scope, period_key))
            return
        self.run(_PUT_TOTALS, (scope, period_key, str(totals.spent_usd),
                               str(totals.reserved_usd), totals.calls))
        self.stored.add(key)

    def insert_call(self, row: Call | CallRow) -> None:
        if not isinstance(row, Call):
            self.run(_INSERT_CALL, _call_to_row(row))
            return
        rowid = self.run(_INSERT_CALL, _open_call_to_row(row)).lastrowid
        if row.state == OPEN and rowid is not None:
            self.open_rows[row.id] = (rowid, row)

    def get_call(self, call_id: str) -> Call | CallRow | None:
        known = self.open_rows.get(call_id)
        if known is not None:
            # Taken on trust: closing it checks that it is still open (update_call).
            self.unverified = (call_id, known[0])
            return known[1]
        row = self.run(f"{_SELECT_CALL} WHERE id = ?", (call_id,)).fetchone()
        return None if row is None else _stored_call(row)

    def update_call(self, call: Call) -> None:
        # Forgotten first: should this transaction fail, the call is read from the file again.
        self.open_rows.pop(call.id, None)
        values = (call.state, str(call.actual_usd), _json_object(call.tokens),
                  int(call.usage_estimated), call.table_version, call.latency_s,
                  call.request_id, call.status, call.note)
        unverified = self.unverified
        if unverified is None or unverified[0] != call.id:
            self.run(_CLOSE_CALL, (*values, call.id))
            return
        self.unverified = None
        if self.run(_CLOSE_OPEN_CALL, (*values, unverified[1], call.id)).rowcount != 1:
            # Another process recovered it meanwhile: nothing was written yet; start again
            # from the row in the file.
            raise _StaleOpenRow(call.id)

    def append_event(self, call_id: str, kind: str, time: datetime, amount_usd: Decimal,
                     detail: str | None = None) -> None:
        self.run(_INSERT_EVENT, (call_id, kind, _ts(time), str(amount_usd), detail))

    def expired_open_calls(self, now: datetime) -> list[Call]:
        # Asked on every reserve, and almost always none: one probe of the partial index
        # answers that before any row is read and decoded.
        cutoff = _ts(now)
        if self.run(_ANY_EXPIRED, (cutoff,)).fetchone() is None:
            return []
        rows = self.run(f"{_SELECT_CALL} WHERE state = 'open' AND expires_at <= ?",
                        (cutoff,)).fetchall()
        return [Call.reopened(_row_to_call(row)) for row in rows]

    def claim_crossing(self, scope: str, period_key: str, warn_usd: Decimal,
                       time: datetime) -> bool:
        cursor = self.run("INSERT OR IGNORE INTO crossings VALUES (?, ?, ?, ?)",
                          (scope, period_key, _amount_key(warn_usd), _ts(time)))
        return cursor.rowcount == 1

    def all_events(self) -> Iterator[Event]:
        # A cursor of its own, read as it goes (sqlite3 fetches a row per step): the log is
        # never held whole.
        for call_id, kind, time, amount, detail in self.db.execute(
                "SELECT call_id, kind, time, amount_usd, detail FROM events ORDER BY id"):
            yield Event(call_id, kind, datetime.fromisoformat(time), Decimal(amount), detail)

    def call_books(self, call_ids: Iterable[str]) -> dict[str, CallBooks]:
        wanted = list(call_ids)
        books = {}
        for start in range(0, len(wanted), _IDS_PER_READ):
            part = wanted[start:start + _IDS_PER_READ]
            for call_id, scopes, keys, worst, state in self.db.execute(
                    f"SELECT id, scopes, period_keys, estimated_usd, state FROM calls "
                    f"WHERE id IN ({', '.join('?' * len(part))})", part):
                books[call_id] = CallBooks(_claim_keys(scopes, keys), Decimal(worst), state)
        return books

    def all_totals(self) -> Iterator[tuple[str, str, Totals]]:
        for scope, key, spent, reserved, calls in self.db.execute(
                "SELECT scope, period_key, spent_usd, reserved_usd, calls FROM totals"):
            yield scope, key, Totals(Decimal(spent), Decimal(reserved), calls)

    def closed_call_count(self) -> int:
        return int(self.db.execute(
            "SELECT count(*) FROM calls WHERE state != 'open'").fetchone()[0])

    def closed_calls_without_close(self) -> Iterator[tuple[str, str]]:
        # Asked only when the counts say some exist: a search of the log per closed call.
        yield from self.db.execute(
            "SELECT id, state FROM calls WHERE state != 'open' AND NOT EXISTS (SELECT 1 FROM "
            "events WHERE events.call_id = calls.id AND events.kind != 'reserve')")


@functools.lru_cache(maxsize=4096)
def _claim_keys(scopes: str, period_keys: str) -> tuple[tuple[str, str], ...]:
    # A budget's calls share their claims' text for a whole period: decoded once per period.
    return tuple(zip(json.loads(scopes), json.loads(period_keys), strict=True))


@functools.lru_cache(maxsize=64)
def _ts(moment: datetime) -> str:
    """Fixed-width UTC text (``2026-05-21T10:00:00.000000+00:00``): sorts as it compares.

    Cached: one reserve writes its time on the call, its event and the expiry probe, and a
    settle its time on the event; each moment is formatted once. A moment already in UTC (the
    budget clock's) needs no conversion."""
    if moment.tzinfo is UTC:
        return moment.isoformat(timespec="microseconds")
    return as_utc(moment).isoformat(timespec="microseconds")


def _amount_key(amount: Decimal) -> str:
    """Equal amounts as equal text (``8.0`` and ``8.00`` are one warning level)."""
    return format(amount.normalize(), "f")


def _optional_decimal(text: str | None) -> Decimal | None:
    return None if text is None else Decimal(text)


# json.dumps with its default options, less its own call and option checks.
_json = json.JSONEncoder().encode


def _json_object(mapping: Mapping[str, Any]) -> str:
    """A mapping (tags, token counts) as JSON; most calls have no tags, and no tokens until
    settled, so the empty one is not encoded each time."""
    return _json(dict(mapping)) if mapping else "{}"


def _claims_text(claims: tuple[ScopeClaim, ...], scopes: tuple[str, ...],
                 period_keys: tuple[str, ...]) -> tuple[str, str, str]:
    """The JSON columns of a call's claims, scopes and period keys."""
    # Amounts as their own text, so equal amounts written differently ("8", "8.00") keep it.
    rows = tuple([(c.scope, c.period_key, None if c.limit_usd is None else str(c.limit_usd),
                   None if c.warn_usd is None else str(c.warn_usd), c.max_calls)
                  for c in claims])
    return _encoded_claims(rows, scopes, period_keys)


@functools.lru_cache(maxsize=256)
def _encoded_claims(rows: tuple[tuple[str | int | None, ...], ...], scopes: tuple[str, ...],
                    period_keys: tuple[str, ...]) -> tuple[str, str, str]:
    # A budget claims the same for a whole period: encoded once per period, not per call.
    return _json([list(row) for row in rows]), _json(list(scopes)), _json(list(period_keys))


def _open_call_to_row(call: Call) -> tuple[Any, ...]:
    """A call just reserved as its columns, from the call itself (no record is built)."""
    info = call.info
    return (
        call.id, _ts(call.time), call.state,
        None if call.expires_at is None else _ts(call.expires_at), call.owner_pid,
        call.owner_host, *_claims_text(call.claims, call.scopes, call.period_keys),
        _json_object(call.tags), info.provider, info.model, info.endpoint, info.attempt,
        call.request_id, info.prompt_hash, info.prompt_text, info.estimated_input_tokens,
        info.estimated_output_tokens, None if info.input_exact is None else int(info.input_exact),
        str(call.estimated_usd), str(call.actual_usd), _json_object(call.tokens),
        int(call.usage_estimated), call.table_version, call.latency_s, call.status, call.note,
    )


def _call_to_row(row: CallRow) -> tuple[Any, ...]:
    r = row.record
    return (
        r.id, _ts(r.time), row.state, None if row.expires_at is None else _ts(row.expires_at),
        row.owner_pid, row.owner_host, *_claims_text(row.claims, r.scopes, r.period_keys),
        _json_object(r.tags), r.provider, r.model,
        r.endpoint, r.attempt, r.request_id, r.prompt_hash, r.prompt_text,
        r.estimated_input_tokens, r.estimated_output_tokens,
        None if r.input_exact is None else int(r.input_exact), str(r.estimated_usd),
        str(r.actual_usd), _json_object(r.tokens), int(r.usage_estimated), r.table_version,
        r.latency_s, r.status, r.note,
    )


def _stored_call(row: tuple[Any, ...]) -> Call | CallRow:
    """A row read from the file: an open one as the :class:`Call` its close will update."""
    stored = _row_to_call(row)
    return Call.reopened(stored) if stored.state == OPEN else stored


def _row_to_call(row: tuple[Any, ...]) -> CallRow:
    (call_id, time, state, expires_at, owner_pid, owner_host, claims, scopes, period_keys, tags,
     provider, model, endpoint, attempt, request_id, prompt_hash, prompt_text, est_in, est_out,
     input_exact, estimated, actual, tokens, usage_estimated, table_version, latency_s, status,
     note) = row
    claim_rows = json.loads(claims)
    record = SpendRecord(
        id=call_id, time=datetime.fromisoformat(time), scopes=tuple(json.loads(scopes)),
        tags=json.loads(tags), provider=provider, model=model, endpoint=endpoint,
        tokens=json.loads(tokens), estimated_usd=Decimal(estimated), actual_usd=Decimal(actual),
        usage_estimated=bool(usage_estimated), table_version=table_version, latency_s=latency_s,
        request_id=request_id, attempt=attempt, status=status, prompt_hash=prompt_hash,
        prompt_text=prompt_text, estimated_input_tokens=est_in, estimated_output_tokens=est_out,
        input_exact=None if input_exact is None else bool(input_exact), note=note,
        period_keys=tuple(json.loads(period_keys)),
        limits_usd=tuple(_optional_decimal(claim[2]) for claim in claim_rows),
    )
    return CallRow(
        record=record,
        # A call cap is the fifth element (claims written before call caps have four).
        claims=tuple(ScopeClaim(scope, key, _optional_decimal(limit), _optional_decimal(warn),
                                cap[0] if cap else None)
                     for scope, key, limit, warn, *cap in claim_rows),
        state=state, expires_at=None if expires_at is None else datetime.fromisoformat(expires_at),
        owner_pid=owner_pid, owner_host=owner_host,
    )
