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
  cut or OS crash can lose the commits since the last checkpoint (normally about 4 MiB of
  WAL, a few hundred reserve + settle pairs; at most the 16 MiB backstop), never the file's
  consistency: SQLite replays
  the WAL up to its last whole, checksummed commit (see
  https://sqlite.org/pragma.html#pragma_synchronous and https://sqlite.org/wal.html).
  ``FULL`` would fsync every commit, about ten times slower; a ledger that must survive power
  loss call by call needs it (or a server database).
- Checkpoints about every 4 MiB of WAL, run on a thread of the ledger's own so that no call
  waits for one (:mod:`~spendguard._budget.ledger.sqlite_checkpoint`); each connection's own
  automatic checkpoint is the backstop, at 16 MiB.
- ``page_size=1024`` for new files: a reserve + settle
  changes about six pages by a few bytes each, and every changed page goes into the WAL
  whole, so smaller pages write, checksum and copy back less per call (about a sixth less
  CPU per call than 4 KiB pages; reading every call back costs about a third more). Larger
  pages would mean fewer of them (2 KiB: 5.9 per pair) but more bytes (12 KB against 6.7).
- A 30 s busy timeout: writers queue for the lock instead of failing.
- Never ``synchronous=OFF`` (checkpoints would not sync, so a power cut could corrupt the
  file) nor ``journal_mode=MEMORY``/``OFF`` (a crash mid-commit could).

``mmap_size``, ``temp_store=MEMORY``, a larger ``cache_size``, ``secure_delete`` off and a
longer checkpoint interval measured no faster for reserve + settle, so they stay as they are.

What a call costs is mostly the pages its two commits write (each page whole, with its
checksum, two writes to the ``-wal`` file): one per b-tree a commit changes, plus the
occasional split. So the schema keeps them few: one index, on time, for reports, keyed by
the call's second (an integer, so its leaves fill and are rebalanced less than half as often
as with the 32-character time); a row's
rowid computed from its call id, so the table is its own index on ids (see
:mod:`~spendguard._budget.ledger.sqlite_keys`); open calls found among the table's last rows
or, for the few that outlive many later calls, in the small ``calls_parked`` table, instead
of an index of open calls that a reservation and its close would each write; call ids that
begin with their time, so a new row goes on the table's last page, already in memory; and no
table for the event log, which is read from the calls' rows (each row is its call's
reservation and close). A reserve + settle pair runs 8 statements (``BEGIN``, one ``UPDATE``
per claim's totals that also asks whether a reservation expired and which row the insert
pushes out of the table's tail, the call's ``INSERT``, ``COMMIT``; then ``BEGIN``, the call's
``UPDATE``, its totals' ``UPDATE``, ``COMMIT``) and writes about 5.9 pages of 1 KiB: the
calls table (twice), the totals (twice), the index on time, their splits, and page 1 when the
file grows.

The crash argument is unchanged by how few statements there are: a reservation is one
transaction (the call's open row with its held totals, all or nothing) committed before its
request is sent, and a close is one transaction (the row closed with its totals), so a
``kill -9`` anywhere loses no committed close and leaves every committed reservation open in
the file, for ``recover_expired`` to charge.

Expired reservations are charged inside the next reservation's transaction and when a process
opens the ledger (``recover_expired``): recovery reads committed rows only, so it needs no
settings of its own. Each reserve asks, inside its first totals ``UPDATE``, whether an open
call among the table's last rows or a parked one has expired, and reads rows only when one
has. Every open call is in one place or the other, by a rule each inserting transaction keeps
(``sqlite_keys``), so a ``kill -9`` leaves each committed reservation where the check finds it.

Money is TEXT holding an exact Decimal, so totals are added by functions every connection
registers (Python's Decimal, inside the statement): ``SET spent_usd = spent_usd + ?`` would
have SQLite add them as floating-point numbers.
"""

from __future__ import annotations

import contextlib
import math
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Any

from spendguard._budget.ledger.base import Crossing, Settlement, SpendRecord, Totals
from spendguard._budget.ledger.engine import Call, TransactionalLedger
from spendguard._budget.ledger.filters import parse_tag
from spendguard._budget.ledger.migrations import migrate
from spendguard._budget.ledger.sqlite_checkpoint import (
    BACKSTOP_FACTOR,
    WalCheckpointer,
    commits_per_checkpoint,
)
from spendguard._budget.ledger.sqlite_files import (
    check_existing,
    create_atomically,
    file_state,
    ledger_error,
    read_only_uris,
)
from spendguard._budget.ledger.sqlite_keys import keys_in_place, rekey_calls
from spendguard._budget.ledger.sqlite_tx import (
    SELECT_CALL,
    SqliteTx,
    StaleOpenRow,
    row_to_call,
    stamp,
)
from spendguard._core.errors import LedgerError, LedgerNotFound
from spendguard._core.periods import utc_now

__all__ = ["SqliteLedger", "open_sqlite"]

_BUSY_TIMEOUT_S = 30.0
_PAGE_ROWS = 500  # records read from the file at a time
# The file's page: every commit appends each page it changed to the WAL whole (about six
# per reserve + settle, most of them changed by a few bytes), so smaller pages mean less to
# write, checksum and later copy back. Fixed when a file is made; older files keep theirs.
_PAGE_SIZE = 1024
# WAL bytes between checkpoints: the 4 MiB SQLite's default gives 4 KiB pages, whatever the
# page size. A checkpoint is where synchronous=NORMAL syncs (WAL, then the database file);
# they run on a thread of their own (sqlite_checkpoint), not inside a guarded call's commit.
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
        self._checkpointer: WalCheckpointer | None = None  # made with the first writer
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
            _check_keys(db)
            # Made before the migrations ran: what they built is read again.
            self._handles()[2].tx.use_schema(parking=_parks(db))
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
        committed = None
        if not self.read_only:
            page_size = _tune(db)
            if self._checkpointer is None:
                self._checkpointer = WalCheckpointer(
                    self._target, every=commits_per_checkpoint(_CHECKPOINT_BYTES, page_size),
                    path=self.path)
            committed = self._checkpointer.committed
        cursor = db.cursor()
        # IMMEDIATE takes the write lock before the limits are read, so nothing another
        # process writes can come between a read and the write that depends on it. A read-only
        # ledger only reads (verify), and could not take it.
        handles = (db, cursor, _Transaction(self, db, cursor,
                                            "BEGIN" if self.read_only else "BEGIN IMMEDIATE",
                                            committed))
        handles[2].tx.register(db)
        handles[2].tx.use_schema(parking=_parks(db))
        self._local.held = (os.getpid(), self._generation, handles)
        with self._all_lock:
            self._all.append(db)
        return handles

    def _transaction(self) -> AbstractContextManager[SqliteTx]:
        try:
            # A thread's first transaction opens its connection, which can fail as an open does.
            return self._handles()[2]
        except sqlite3.Error as exc:
            raise ledger_error(self.path, "open", exc) from exc

    def _snapshot(self) -> AbstractContextManager[SqliteTx]:
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
        except StaleOpenRow:  # rolled back; the row is read from the file this time
            self._open_rows.pop(reservation_id, None)
            return super().settle(reservation_id, settlement)

    def release(self, reservation_id: str, *, reason: str, time: datetime) -> bool:
        try:
            return super().release(reservation_id, reason=reason, time=time)
        except StaleOpenRow:
            self._open_rows.pop(reservation_id, None)
            return super().release(reservation_id, reason=reason, time=time)

    def totals(self, scope: str, period_key: str) -> Totals:
        try:
            return SqliteTx(self._connection(), {}).totals(scope, period_key)
        except sqlite3.Error as exc:
            raise ledger_error(self.path, "read", exc) from exc

    def totals_sum(self, scope: str, period_keys: Sequence[str]) -> Totals:
        return SqliteTx(self._connection(), {}).totals_sum(scope, period_keys)

    def records(self, *, since: datetime | None = None, until: datetime | None = None,
                scope: str | None = None, tag: str | None = None,
                model: str | None = None) -> Iterator[SpendRecord]:
        return self._stream(*records_query(since=since, until=until, scope=scope, tag=tag,
                                           model=model, by_second=self._time_by_second()))

    def _time_by_second(self) -> bool:
        """Whether the file's index on time is keyed by the second (migration m008); a file an
        older spendguard wrote, opened to read (and so not migrated), has it on the time text.
        Read at each read: a writer may migrate the file meanwhile."""
        row = self._connection().execute(
            "SELECT sql FROM sqlite_master WHERE type = 'index' AND name = 'calls_time'"
        ).fetchone()
        return row is None or "strftime" in str(row[0])

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
                    yield row_to_call(row).record
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
        if self._checkpointer is not None:
            self._checkpointer.close()

    def __repr__(self) -> str:
        return f"SqliteLedger({str(self.path)!r})"


# The key of the index on time (migration m008): the call's second, an integer. A query
# uses the index only when it names the same expression, so every read by time goes through
# records_query().
_SECOND = "CAST(strftime('%s', time) AS INTEGER)"


def records_query(*, since: datetime | None = None, until: datetime | None = None,
                  scope: str | None = None, tag: str | None = None,
                  model: str | None = None, by_second: bool = True,
                  ) -> tuple[str, list[Any]]:
    """The statement and parameters of :meth:`SqliteLedger.records`: closed calls in time
    order (ties by id), read through the index on time by a range of whole seconds around
    ``since`` and ``until`` (one second wider on each side: the exact times decide).
    ``by_second=False``: for a file whose index is on the time text (read, not migrated)."""
    where: list[str] = ["state != 'open'"]
    params: list[Any] = []
    if since is not None:
        exact = stamp(since)  # refuses a naive time
        if by_second:  # the index's range of seconds first, then the exact time
            where.append(f"{_SECOND} >= ?")
            params.append(math.floor(since.timestamp()) - 1)
        where.append("time >= ?")
        params.append(exact)
    if until is not None:
        exact = stamp(until)
        if by_second:
            where.append(f"{_SECOND} <= ?")
            params.append(math.floor(until.timestamp()) + 1)
        where.append("time < ?")
        params.append(exact)
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
    # The second first: the index's order; time and id order the calls within a second.
    order = f"{_SECOND}, time, id" if by_second else "time, id"
    return f"{SELECT_CALL} WHERE {' AND '.join(where)} ORDER BY {order}", params


def open_sqlite(url: str, *, read_only: bool = False) -> SqliteLedger:
    """The ledger for a resolved ``sqlite:///abs/path`` URL; ``read_only`` never writes it."""
    return SqliteLedger(Path(url.removeprefix("sqlite:///")), url=url, read_only=read_only)


def _prepare(db: sqlite3.Connection) -> None:
    """A new ledger file's set-up: its page size and WAL (both kept in the file), the schema."""
    db.execute(f"PRAGMA page_size={_PAGE_SIZE}")
    db.execute("PRAGMA journal_mode=WAL")
    migrate(db)


def _tune(db: sqlite3.Connection) -> int:
    """A writing connection's settings (they last as long as the connection); the file's page
    size.

    ``synchronous=NORMAL`` in WAL mode: a commit is in the OS's hands when it returns, so a
    process crash loses nothing committed; fsync happens only at checkpoints, so a power cut or
    OS crash can lose the commits since the last one (never the file's consistency). The
    checkpoints run on a thread of their own (``sqlite_checkpoint``); the connection's own
    automatic one is the backstop, further away.
    """
    db.execute("PRAGMA synchronous=NORMAL")
    page_size: int = db.execute("PRAGMA page_size").fetchone()[0]
    db.execute(f"PRAGMA wal_autocheckpoint={BACKSTOP_FACTOR * _CHECKPOINT_BYTES // page_size}")
    return page_size


def _check_integrity(db: sqlite3.Connection) -> None:
    # A damaged page would otherwise be found only by the query that reads it, perhaps after
    # calls were sent; quick_check reads every page once (about 0.1 s per 100 MB).
    problems = [row[0] for row in db.execute("PRAGMA quick_check(3)")]
    if problems != ["ok"]:
        raise sqlite3.DatabaseError(f"database disk image is malformed: {'; '.join(problems)}")


def _parks(db: sqlite3.Connection) -> bool:
    """Whether the file parks open calls (``sqlite_keys``); one made by an older spendguard's
    migrations does not."""
    return db.execute("SELECT 1 FROM sqlite_master WHERE name = 'calls_parked'").fetchone() \
        is not None


def _check_keys(db: sqlite3.Connection) -> None:
    # Rows are found by the keys their ids give them (sqlite_keys). SQLite's VACUUM keeps
    # rowids, but nothing promises it for a table without an INTEGER PRIMARY KEY column (and
    # the calls table keeps the columns every backend declares): a renumbered table is keyed
    # again before anything reads it.
    if keys_in_place(db):
        return
    db.execute("BEGIN IMMEDIATE")
    try:
        if not keys_in_place(db):
            rekey_calls(db)
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise


def _roll_back(db: sqlite3.Connection) -> None:
    # SQLite ends the transaction itself on some errors (a full disk, an I/O error); a
    # ROLLBACK then would raise "no transaction is active" over the real cause.
    if db.in_transaction:
        with contextlib.suppress(sqlite3.Error):
            db.execute("ROLLBACK")


class _Transaction(AbstractContextManager["SqliteTx"]):
    """Transactions on one connection, one at a time: each committed when its block ends,
    rolled back when it raises. A plain class rather than a ``@contextmanager`` generator,
    made once per connection with its storage operations: entered twice per guarded call."""

    __slots__ = ("_begin", "_committed", "_cursor", "_db", "_path", "tx")

    def __init__(self, ledger: SqliteLedger, db: sqlite3.Connection, cursor: sqlite3.Cursor,
                 begin: str, committed: Callable[[], None] | None = None) -> None:
        self._path = ledger.path
        self._db, self._cursor, self._begin = db, cursor, begin
        self._committed = committed  # told of each commit (the background checkpoints)
        self.tx = SqliteTx(db, ledger._open_rows, cursor)

    def __enter__(self) -> SqliteTx:
        try:
            self._cursor.execute(self._begin)
        except sqlite3.Error as exc:
            raise ledger_error(self._path, "lock", exc) from exc
        tx = self.tx
        # What the last transaction read may have changed since: nothing of it is kept.
        tx.seen.clear()
        tx.stored.clear()
        tx.unverified = None
        tx.tail_end = None
        return tx

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        if kind is None:
            try:
                self._cursor.execute("COMMIT")
            except sqlite3.Error as error:
                _roll_back(self._db)
                raise ledger_error(self._path, "write", error) from error
            if self._committed is not None:
                self._committed()
            return
        _roll_back(self._db)
        if isinstance(exc, sqlite3.Error):
            raise ledger_error(self._path, "write", exc) from exc
