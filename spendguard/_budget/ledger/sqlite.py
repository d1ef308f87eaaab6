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
occasional split. So the schema keeps them few: an index only where a read needs one (calls
by id, by time for reports, open reservations by expiry); call ids that begin with their time,
so a new id goes on the last page of its index, already in memory; and no table for the event
log, which is read from the calls' rows (each row is its call's reservation and close). A
reserve + settle pair runs 8 statements (``BEGIN``, one ``UPDATE`` per claim's totals that
also asks whether a reservation expired, the call's ``INSERT``, ``COMMIT``; then ``BEGIN``, the
call's ``UPDATE``, its totals' ``UPDATE``, ``COMMIT``) and writes about 9.6 pages of 1 KiB:
the calls
table (twice), the partial index of open calls (its entry made, then removed), the totals
(twice), the indexes on id and time, their splits, and page 1 when the file grows.

The crash argument is unchanged by how few statements there are: a reservation is one
transaction (the call's open row with its held totals, all or nothing) committed before its
request is sent, and a close is one transaction (the row closed with its totals), so a
``kill -9`` anywhere loses no committed close and leaves every committed reservation open in
the file, for ``recover_expired`` to charge.

Expired reservations are charged inside the next reservation's transaction and when a process
opens the ledger (``recover_expired``): recovery reads committed rows only, so it needs no
settings of its own. Each reserve asks the partial index of open reservations whether any has
expired (``LIMIT 1``) inside its first totals upsert, and reads rows only when one has.

Money is TEXT holding an exact Decimal, so totals are added by functions every connection
registers (Python's Decimal, inside the statement): ``SET spent_usd = spent_usd + ?`` would
have SQLite add them as floating-point numbers.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sqlite3
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from types import TracebackType
from typing import Any

from spendguard._budget.ledger.base import Crossing, ScopeClaim, Settlement, SpendRecord, Totals
from spendguard._budget.ledger.engine import (
    OPEN,
    Call,
    CallRow,
    Event,
    TransactionalLedger,
    add_to_totals,
)
from spendguard._budget.ledger.fields import CLOSING, COLUMNS, column_list
from spendguard._budget.ledger.filters import parse_tag
from spendguard._budget.ledger.limits import sum_totals
from spendguard._budget.ledger.migrations import migrate
from spendguard._budget.ledger.rows import RowCodec
from spendguard._budget.ledger.sqlite_files import (
    check_existing,
    create_atomically,
    file_state,
    ledger_error,
    read_only_uris,
)
from spendguard._core.errors import LedgerError, LedgerNotFound
from spendguard._core.money import ZERO
from spendguard._core.periods import as_utc, utc_now

__all__ = ["SqliteLedger", "open_sqlite"]

_BUSY_TIMEOUT_S = 30.0
_CALL_COLUMNS = column_list()
_INSERT_CALL = f"INSERT INTO calls ({_CALL_COLUMNS}) VALUES ({', '.join('?' * len(COLUMNS))})"
_SELECT_CALL = f"SELECT {_CALL_COLUMNS} FROM calls"
# The hot path's statements, one text each: sqlite3 keeps every statement it has prepared,
# keyed by its text, so these are compiled once per connection.
_SET_CLOSED = f"UPDATE calls SET {', '.join(f'{f.name} = ?' for f in CLOSING)} "
_CLOSE_CALL = f"{_SET_CLOSED}WHERE id = ?"
# The close of an open row this process remembers: the state test replaces reading it first,
# and the row is found by the rowid its insert returned, without a search of the index on ids
# (the id test keeps it right should the rowid have changed, as a VACUUM may do).
_CLOSE_OPEN_CALL = f"{_SET_CLOSED}WHERE rowid = ? AND id = ? AND state = 'open'"
_SELECT_TOTALS = ("SELECT spent_usd, reserved_usd, calls FROM totals "
                  "WHERE scope = ? AND period_key = ?")
_UPDATE_TOTALS = ("UPDATE totals SET spent_usd = ?, reserved_usd = ?, calls = ? "
                  "WHERE scope = ? AND period_key = ?")
# A period's totals changed in one step. The new values are computed by functions each
# connection registers (exact Decimal, never SQLite's floating point) which also keep them
# for the transaction to read: a RETURNING clause would do the same at several times the
# cost. Each statement changes one row (its key is the primary key), so what they keep is
# that row's. A row not there yet changes nothing, and is inserted.
_CHANGE_TOTALS = ("UPDATE totals SET spent_usd = sg_spent(spent_usd, ?), "
                  "reserved_usd = sg_held(NULL, reserved_usd, ?, calls + ?, 0), "
                  "calls = calls + ? WHERE scope = ? AND period_key = ?")
# A reservation's first hold also asks the partial index of open calls whether any has
# expired: the probe every reserve makes, without a statement of its own.
_HOLD_PROBING = ("UPDATE totals SET reserved_usd = sg_held(spent_usd, reserved_usd, ?, "
                 "calls + 1, EXISTS (SELECT 1 FROM calls WHERE state = 'open' AND "
                 "expires_at <= ?)), calls = calls + 1 WHERE scope = ? AND period_key = ?")
_HOLD = ("UPDATE totals SET reserved_usd = sg_held(spent_usd, reserved_usd, ?, calls + 1, 0), "
         "calls = calls + 1 WHERE scope = ? AND period_key = ?")
# The log's events, read from the calls they are about (see all_events).
_CALL_EVENTS = "SELECT id, time, state, estimated_usd, actual_usd, note FROM calls ORDER BY rowid"
_CLOSED_BY = {"settled": "settle", "released": "release", "recovered": "recover"}
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
        handles[2].tx.register(db)
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
            while rows := cursor.fetchmany(500):
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

    __slots__ = ("_begin", "_cursor", "_db", "_path", "tx")

    def __init__(self, ledger: SqliteLedger, db: sqlite3.Connection, cursor: sqlite3.Cursor,
                 begin: str) -> None:
        self._path = ledger.path
        self._db, self._cursor, self._begin = db, cursor, begin
        self.tx = _Tx(db, ledger._open_rows, cursor)

    def __enter__(self) -> _Tx:
        try:
            self._cursor.execute(self._begin)
        except sqlite3.Error as exc:
            raise ledger_error(self._path, "lock", exc) from exc
        tx = self.tx
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
        # What the totals functions computed for the row the last statement changed: spent,
        # held, calls, and whether an open call had expired (see register).
        self.kept: list[Any] = [None, None, None, None]
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

    def register(self, db: sqlite3.Connection) -> None:
        """The functions the totals statements compute with, keeping what they computed."""
        kept = self.kept

        def spent(old: str, change: str) -> str:
            new = str(Decimal(old) + Decimal(change))
            kept[0] = new
            return new

        def held(spent: str | None, old: str, change: str, calls: int, expired: int) -> str:
            # The row's other values come as arguments (a column in SET reads its value
            # before the statement), so one call per statement keeps them all.
            new = str(Decimal(old) + Decimal(change))
            if spent is not None:
                kept[0] = spent
            kept[1], kept[2], kept[3] = new, calls, expired
            return new

        db.create_function("sg_spent", 2, spent)
        db.create_function("sg_held", 5, held)

    def change_totals(self, scope: str, period_key: str, spent_usd: Decimal,
                      reserved_usd: Decimal, calls: int) -> Totals:
        if self.run(_CHANGE_TOTALS, (str(spent_usd), str(reserved_usd), calls, calls, scope,
                                     period_key)).rowcount == 0:
            return add_to_totals(self, scope, period_key, spent_usd, reserved_usd, calls)
        spent, reserved, counted, _ = self.kept
        return self._after(scope, period_key, Totals(Decimal(spent), Decimal(reserved), counted))

    def hold(self, claims: Sequence[ScopeClaim], amount_usd: Decimal,
             now: datetime) -> tuple[list[Totals], bool] | None:
        amount = str(amount_usd)
        before: list[Totals] = []
        expired = False
        for claim in claims:
            scope, key = claim.scope, claim.period_key
            if before:
                changed = self.run(_HOLD, (amount, scope, key)).rowcount
            else:
                changed = self.run(_HOLD_PROBING, (amount, _ts(now), scope, key)).rowcount
                expired = bool(changed and self.kept[3])
            if changed == 0:  # the period's first call: its row is made, the probe asked
                if not before:
                    expired = self.run(_ANY_EXPIRED, (_ts(now),)).fetchone() is not None
                old = self.totals(scope, key)
                self.put_totals(scope, key, Totals(old.spent_usd, old.reserved_usd + amount_usd,
                                                   old.calls + 1))
                before.append(old)
                continue
            spent, reserved, counted, _ = self.kept
            after = self._after(scope, key, Totals(Decimal(spent), Decimal(reserved), counted))
            before.append(Totals(after.spent_usd, after.reserved_usd - amount_usd,
                                 after.calls - 1))
        return before, expired

    def _after(self, scope: str, period_key: str, totals: Totals) -> Totals:
        self.seen[(scope, period_key)] = totals
        self.stored.add((scope, period_key))
        return totals

    def insert_call(self, row: Call | CallRow) -> None:
        if not isinstance(row, Call):
            self.run(_INSERT_CALL, _ROWS.values(row))
            return
        rowid = self.run(_INSERT_CALL, _ROWS.values(row)).lastrowid
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
        values = _ROWS.closing_values(call)
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
        """Nothing to write: the call's row is its log (see :meth:`all_events`)."""

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
        """The log, read from the calls: each row is a call's reservation and, once closed,
        its close (the amount it charged, why), or one correction. Nothing an event said is
        missing from its row but the moment of the close, so no table of its own is written
        (one more b-tree, page and statement per step); ledgers made before keep theirs, as
        it was, beside (their calls say the same)."""
        for call_id, time, state, worst, actual, note in self.db.execute(_CALL_EVENTS):
            at = datetime.fromisoformat(time)
            if state == "adjustment":
                yield Event(call_id, "adjust", at, Decimal(actual), note)
                continue
            yield Event(call_id, "reserve", at, Decimal(worst))
            closed = _CLOSED_BY.get(state)
            if closed == "settle":
                yield Event(call_id, closed, at, Decimal(actual))
            elif closed is not None:
                yield Event(call_id, closed, at,
                            ZERO if closed == "release" else Decimal(actual), note)

    def all_calls(self) -> Iterator[CallRow]:
        return (_row_to_call(row) for row in self.db.execute(_SELECT_CALL).fetchall())

    def all_totals(self) -> Iterator[tuple[str, str, Totals]]:
        for scope, key, spent, reserved, calls in self.db.execute(
                "SELECT scope, period_key, spent_usd, reserved_usd, calls FROM totals").fetchall():
            yield scope, key, Totals(Decimal(spent), Decimal(reserved), calls)


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


@functools.lru_cache(maxsize=256)
def _claims_json(rows: tuple[tuple[str | int | None, ...], ...]) -> str:
    # A budget claims the same for a whole period: encoded once per period, not per call.
    return _json([list(row) for row in rows])


def _claims_text(claims: tuple[ScopeClaim, ...]) -> str:
    """A call's claims as JSON: ``[[scope, period_key, limit, warn, max_calls], ...]``."""
    # Amounts as their own text, so equal amounts written differently ("8", "8.00") keep it.
    return _claims_json(tuple([(c.scope, c.period_key,
                                None if c.limit_usd is None else str(c.limit_usd),
                                None if c.warn_usd is None else str(c.warn_usd), c.max_calls)
                               for c in claims]))


@functools.lru_cache(maxsize=256)
def _list_text(items: tuple[str, ...]) -> str:
    # A call's scopes and period keys are its budget's for a whole period: encoded once.
    return _json(list(items))


def _claims(text: str) -> tuple[ScopeClaim, ...]:
    # A call cap is the fifth element (claims written before call caps have four).
    return tuple(ScopeClaim(scope, key, _optional_decimal(limit), _optional_decimal(warn),
                            cap[0] if cap else None)
                 for scope, key, limit, warn, *cap in json.loads(text))


_ROWS = RowCodec(
    encode={"time": _ts, "usd": str, "flag": int, "map": _json_object, "list": _list_text,
            "claims": _claims_text},
    decode={"time": datetime.fromisoformat, "usd": Decimal, "flag": bool, "map": json.loads,
            "list": lambda text: tuple(json.loads(text)), "claims": _claims})


def _stored_call(row: tuple[Any, ...]) -> Call | CallRow:
    """A row read from the file: an open one as the :class:`Call` its close will update."""
    stored = _row_to_call(row)
    return Call.reopened(stored) if stored.state == OPEN else stored


_row_to_call = _ROWS.call_row
