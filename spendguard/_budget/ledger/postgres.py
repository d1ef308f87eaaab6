"""The PostgreSQL ledger (``postgresql://user@host:5432/db``): a durable ledger shared by machines.

The URL is libpq's (``postgres://`` too; ``sslmode``, ``connect_timeout``, ``options``,
``application_name``... as libpq reads them), plus two options of spendguard's own:
``schema=NAME``, the schema its tables live in (``spendguard`` unless named; created on first
open), so one database can hold several ledgers, or a ledger beside an application's own
tables; and ``pool_size=N``, the most connections one process opens to it (10 unless named).
The accounting rules are those of :mod:`spendguard._budget.ledger.engine`, the same as SQLite
and memory: the same contract tests run on every backend.

How concurrency is made safe, and why this design:

- Every step (reserve, settle, release, correction, recovery) is one ``READ COMMITTED``
  transaction (said in its ``BEGIN``, whatever the role's default) that first takes an
  exclusive *transaction-level advisory lock* per scope it touches (``pg_advisory_xact_lock``
  on a 64-bit hash of the schema and the scope), then reads that scope's totals, checks the
  limits, and writes. Each statement of a ``READ COMMITTED`` transaction reads what was
  committed before it began, and a lock holder's commit is visible before its locks are
  released, so the totals a reservation checks are the newest, and no other writer of the
  same scope can come between the read and the write: check-and-reserve is atomic across
  processes and machines. A call's locks are taken in sorted order (calls do not deadlock
  one another); a rare deadlock involving the recovery of an expired reservation is detected
  by PostgreSQL and the step re-run.
- Why a lock per scope rather than ``SELECT ... FOR UPDATE`` on the totals rows: a scope's
  first reservation in a period, and a rolling window's step, have no row to lock yet, so two
  of them could both read zero; the advisory lock exists before any row does. It is held only
  for the transaction (a few statements, no network call inside), and released by PostgreSQL
  when the transaction ends or its connection drops (``kill -9`` included), so a dead client
  never holds a budget. ``SERIALIZABLE`` would also be correct, but every conflict would be a
  failed transaction retried from the client; waiting for a lock costs less under contention.
- A call's own row is read ``FOR UPDATE`` when it is settled or released, and expired
  reservations are claimed with ``FOR UPDATE SKIP LOCKED`` and re-checked, so a reservation is
  closed exactly once whoever (its owner, another process's recovery) gets there first.
- ``verify`` reads one ``REPEATABLE READ READ ONLY`` snapshot, without locks.

A step that fails before its ``COMMIT`` is sent (the server restarted, the connection was
cut, a deadlock) is rolled back by PostgreSQL and run again on a new connection, a few times;
then the step raises :class:`~spendguard._core.errors.LedgerUnavailable` (a reservation is
refused: fail closed). If the connection drops *during* ``COMMIT`` the outcome is unknown and
the step is not repeated: a reservation that did commit expires and is charged at its worst
case, never undercounted.

A process keeps its connections in a small pool: a step borrows one for its transaction and
gives it back, so a process holds as many as it runs steps at once (at most ``pool_size``;
more wait), whatever its number of threads. After a fork the child opens its own and never
touches its parent's sockets. Money is ``NUMERIC``, read back as the exact ``Decimal`` that
was written.
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from decimal import Decimal
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from spendguard._budget.ledger import replay
from spendguard._budget.ledger.base import (
    CallInfo,
    Crossing,
    ScopeClaim,
    Settlement,
    SpendRecord,
    Totals,
)
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
from spendguard._budget.ledger.postgres_migrations import lock_key, migrate
from spendguard._budget.ledger.replay import CallBooks
from spendguard._budget.ledger.rows import (
    RowCodec,
    amount_key,
    claims_from_text,
    claims_text,
    json_object,
)
from spendguard._core.errors import ConfigError, LedgerError, LedgerUnavailable
from spendguard._core.periods import as_utc, utc_now
from spendguard._core.terminal import masked_url

if TYPE_CHECKING:
    pass

__all__ = ["PostgresLedger", "open_postgres", "parse_postgres_url"]

DEFAULT_SCHEMA = "spendguard"
_SCHEMA_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")
_CONNECT_TIMEOUT_S = 5
_PAGE_ROWS = 500  # records a server-side cursor sends at a time
_ATTEMPTS = 5  # runs of one step that failed before its commit (deadlock, lost connection)
_T = TypeVar("_T")
_CALL_COLUMNS = column_list()
# JSON columns take their text cast: psycopg sends parameters as text of unknown type.
_PLACEHOLDER = {"map": "%s::json"}
_CALL_VALUES = ", ".join(_PLACEHOLDER.get(f.kind, "%s") for f in COLUMNS)
_SET_CLOSED = ", ".join(f"{f.name} = {_PLACEHOLDER.get(f.kind, '%s')}" for f in CLOSING)
# Connections inherited through fork(): never used nor closed in the child (closing one would
# end the parent's session on the shared socket), kept here so they are never collected.
_inherited: list[Any] = []
_POOL_SIZE = 10  # the most connections one process opens to one ledger, unless the URL says
_OPTIONS = ("schema", "pool_size")  # the URL's query options that are spendguard's, not libpq's
_POOL_WAIT_S = 30.0  # how long a step waits for one of them to be free
_IDLE = 0  # psycopg.pq.TransactionStatus.IDLE: no transaction open on the connection


def parse_postgres_url(url: str) -> tuple[str, str, int]:
    """``(libpq URI, schema, pool size)`` of a ``postgresql://`` ledger URL: spendguard's own
    options (``schema``, ``pool_size``) are taken out of the query; libpq reads the rest."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    ours = dict((key, value) for key, value in query if key in _OPTIONS)
    schema = ours.get("schema", DEFAULT_SCHEMA)
    if not _SCHEMA_NAME.fullmatch(schema):
        raise ConfigError(f"ledger: schema={schema!r} in {masked_url(url)!r} is not a plain "
                          f"schema name; use lower-case letters, digits and _ (at most 63), "
                          f"not starting with a digit, e.g. ?schema=spendguard")
    size = ours.get("pool_size", str(_POOL_SIZE))
    if not size.isdigit() or not 1 <= int(size) <= 1000:
        raise ConfigError(f"ledger: pool_size={size!r} in {masked_url(url)!r} must be a whole "
                          f"number of connections from 1 to 1000, e.g. ?pool_size=4")
    rest = urlencode([(key, value) for key, value in query if key not in _OPTIONS])
    return (urlunsplit((parts.scheme, parts.netloc, parts.path, rest, parts.fragment)), schema,
            int(size))


def _import_psycopg() -> Any:
    try:
        import psycopg  # noqa: PLC0415 - optional dependency, loaded on first use
    except ImportError:
        raise ConfigError("ledger: a postgresql:// ledger needs psycopg; install it with "
                          "pip install 'spendguard-llm[postgres]'") from None
    return psycopg


class _Retry(LedgerUnavailable):
    """A step failed before its commit in a way that running it again can mend.

    A :class:`LedgerUnavailable` itself, so that a transaction used outside
    :meth:`PostgresLedger._retried` (a drain into this ledger) still fails as one."""


class PostgresLedger(TransactionalLedger):
    """A ledger in one PostgreSQL schema, shared by every process that names the same one."""

    def __init__(self, url: str, *, read_only: bool = False,
                 connect_timeout_s: int = _CONNECT_TIMEOUT_S) -> None:
        self._psycopg = _import_psycopg()
        self._conninfo, self.schema, self.pool_size = parse_postgres_url(url)
        self.url = self.shown_url = masked_url(url)  # the password masked: safe in messages
        self._connect_timeout_s = connect_timeout_s
        self._local = threading.local()
        self._pool_lock = threading.Lock()
        self._pool_pid = os.getpid()
        self._free = threading.BoundedSemaphore(self.pool_size)
        self._idle: list[Any] = []
        # Whatever happens to this object, its idle connections are closed with it.
        self._finalizer = weakref.finalize(self, _close_idle, self._idle, self._pool_lock)
        self._sql = _statements(self.schema)
        self.read_only = read_only
        self.recovered_at_open: tuple[str, ...] = ()
        db = self._borrow()
        try:
            if read_only:
                self._check_exists(db)
                return
            migrate(db, self.schema, f"{self.shown_url} (schema {self.schema})")
        except self._psycopg.Error as exc:
            raise self._unavailable("open", exc) from exc
        finally:
            self._give_back(db)
        # A process that died mid-call left a reservation: charge it once it has expired.
        self.recovered_at_open = tuple(self.recover_expired(utc_now()))

    def _check_exists(self, db: Any) -> None:
        """For reading only: the schema must hold a ledger (nothing is created, migrated or
        recovered), so a mistyped URL or schema is said, not read as an empty ledger."""
        found = db.execute("SELECT to_regclass(%s)", (f'"{self.schema}".calls',)).fetchone()
        if found is None or found[0] is None:
            raise LedgerError(f"no ledger in schema {self.schema!r} of {self.shown_url}: "
                              f"nothing has been recorded there; check --ledger, "
                              f"SPENDGUARD_LEDGER or ?schema=")

    # -- connections and transactions --------------------------------------------------

    def _borrow(self) -> Any:
        """An idle connection of this process, or a new one; handed back by :meth:`_give_back`.

        Connections are kept per process, not per thread: a step holds one only while it runs,
        so a process needs as many as it runs steps at once, however many threads it has.
        """
        self._adopt_fork()
        free = self._free
        if not free.acquire(timeout=_POOL_WAIT_S):
            raise LedgerUnavailable(
                f"all {self.pool_size} connections of this process to the PostgreSQL ledger "
                f"{self.shown_url} stayed busy for {_POOL_WAIT_S:.0f} s; raise pool_size= in "
                f"the URL or look for a stuck database", url=self.shown_url)
        with self._pool_lock:
            if self._idle:
                return self._idle.pop()
        try:
            return self._psycopg.connect(self._conninfo, autocommit=True,
                                         connect_timeout=self._connect_timeout_s)
        except self._psycopg.Error as exc:
            free.release()
            raise self._unavailable("connect to", exc) from exc

    def _give_back(self, db: Any) -> None:
        """Keep a healthy connection for the next step; close a broken one."""
        if self._pool_pid != os.getpid():
            return  # borrowed before a fork: the parent's, not this process's to keep or close
        if not db.closed and not db.broken and db.info.transaction_status == _IDLE:
            with self._pool_lock:
                self._idle.append(db)
        else:
            _close_quietly(db)
        self._free.release()

    def _drop_idle(self) -> None:
        """Close the idle connections: one was found cut (a server restart cuts them all), so
        the next step opens a new one rather than try each of the others in turn."""
        _close_idle(self._idle, self._pool_lock)

    def _adopt_fork(self) -> None:
        """In a forked child, set the parent's connections aside untouched, and start afresh."""
        if self._pool_pid == os.getpid():
            return
        with self._pool_lock:
            if self._pool_pid != os.getpid():
                _inherited.extend(self._idle)
                self._idle.clear()
                self._free = threading.BoundedSemaphore(self.pool_size)
                self._pool_pid = os.getpid()

    def _transaction(self) -> AbstractContextManager[_Tx]:
        # Said explicitly: a role whose default is REPEATABLE READ would take its snapshot
        # before waiting for the scope's lock, and read totals older than the lock.
        return _Transaction(self, "BEGIN ISOLATION LEVEL READ COMMITTED READ WRITE")

    def _snapshot(self) -> AbstractContextManager[_Tx]:
        return _Transaction(self, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")

    def _unavailable(self, doing: str, exc: BaseException) -> LedgerUnavailable:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return LedgerUnavailable(f"cannot {doing} the PostgreSQL ledger {self.shown_url} "
                                 f"(schema {self.schema}): {reason}; check that the server is "
                                 f"running and the URL, role and password are right",
                                 url=self.shown_url)

    def _retried(self, step: Callable[[], _T], *, scopes: Sequence[str] = ()) -> _T:
        """Run one step, again if it failed before its commit in a way a rerun mends."""
        for attempt in range(1, _ATTEMPTS + 1):
            self._local.prelock = sorted(set(scopes))
            try:
                return step()
            except _Retry as retry:
                if attempt == _ATTEMPTS:
                    raise LedgerUnavailable(str(retry), url=self.shown_url) from retry.__cause__
            finally:
                self._local.prelock = ()
        raise AssertionError("unreachable")  # pragma: no cover

    # -- the ledger's steps, each one transaction, re-run when that is safe ------------

    def reserve(self, claims: Sequence[ScopeClaim], amount_usd: Decimal, call: CallInfo, *,
                time: datetime, expires_at: datetime, tags: Mapping[str, str]) -> str:
        return self._retried(lambda: super(PostgresLedger, self).reserve(
            claims, amount_usd, call, time=time, expires_at=expires_at, tags=tags),
            scopes=[claim.scope for claim in claims])

    def settle(self, reservation_id: str, settlement: Settlement) -> list[Crossing]:
        return self._retried(lambda: super(PostgresLedger, self).settle(reservation_id,
                                                                        settlement))

    def release(self, reservation_id: str, *, reason: str, time: datetime) -> bool:
        return self._retried(lambda: super(PostgresLedger, self).release(
            reservation_id, reason=reason, time=time))

    def adjust(self, claims: Sequence[ScopeClaim], amount_usd: Decimal, *, time: datetime,
               note: str, tags: Mapping[str, str] | None = None, provider: str = "",
               model: str = "") -> str:
        return self._retried(lambda: super(PostgresLedger, self).adjust(
            claims, amount_usd, time=time, note=note, tags=tags, provider=provider,
            model=model), scopes=[claim.scope for claim in claims])

    def recover_expired(self, now: datetime) -> list[str]:
        return self._retried(lambda: super(PostgresLedger, self).recover_expired(now))

    def verify(self, *, progress: Callable[[int], object] | None = None) -> list[str]:
        return self._retried(lambda: super(PostgresLedger, self).verify(progress=progress))

    # -- reads ---------------------------------------------------------------------------

    def totals(self, scope: str, period_key: str) -> Totals:
        return self._read(lambda tx: tx.totals(scope, period_key))

    def totals_sum(self, scope: str, period_keys: Sequence[str]) -> Totals:
        return self._read(lambda tx: tx.totals_sum(scope, period_keys))

    def _read(self, read: Callable[[_Tx], _T]) -> _T:
        """One read outside a transaction (autocommit), again on a new connection if the one
        it had was broken (a server restart drops every idle connection)."""
        for attempt in (1, 2):
            db = self._borrow()
            try:
                return read(_Tx(self, db.cursor(), locking=False))
            except self._psycopg.OperationalError as exc:
                self._drop_idle()
                if attempt == 2:
                    raise self._unavailable("read", exc) from exc
            except self._psycopg.Error as exc:
                raise self._unavailable("read", exc) from exc
            finally:
                self._give_back(db)
        raise AssertionError("unreachable")  # pragma: no cover

    def records(self, *, since: datetime | None = None, until: datetime | None = None,
                scope: str | None = None, tag: str | None = None,
                model: str | None = None) -> Iterator[SpendRecord]:
        where: list[str] = ["state != 'open'"]
        params: list[Any] = []
        if since is not None:
            where.append("time >= %s")
            params.append(as_utc(since))
        if until is not None:
            where.append("time < %s")
            params.append(as_utc(until))
        if model is not None:
            where.append("model = %s")
            params.append(model)
        if scope is not None:
            where.append("%s = ANY(scopes)")
            params.append(scope)
        if tag is not None:
            key, value = parse_tag(tag)
            if value is None:
                where.append("jsonb_exists(tags::jsonb, %s)")
                params.append(key)
            else:
                where.append("tags->>%s = %s")
                params.extend([key, value])
        sql = f"{self._sql['select_call']} WHERE {' AND '.join(where)} ORDER BY time, id"
        return self._stream(sql, params)

    def _stream(self, sql: str, params: list[Any]) -> Iterator[SpendRecord]:
        # A connection of its own: a long export must not hold a transaction open on the
        # connection this thread reserves on. A server-side cursor reads it 500 rows at a time.
        try:
            db = self._psycopg.connect(self._conninfo, connect_timeout=self._connect_timeout_s)
        except self._psycopg.Error as exc:
            raise self._unavailable("read", exc) from exc
        try:
            with db.cursor(name="spendguard_records") as cursor:
                cursor.itersize = _PAGE_ROWS
                cursor.execute(sql, params)
                for row in cursor:
                    yield _row_to_call(row).record
        except self._psycopg.Error as exc:
            raise self._unavailable("read", exc) from exc
        finally:
            db.close()

    def close(self) -> None:
        """Close this process's idle connections; a later step opens new ones."""
        self._adopt_fork()
        _close_idle(self._idle, self._pool_lock)

    def __repr__(self) -> str:
        return f"PostgresLedger({self.shown_url!r}, schema={self.schema!r})"


def _close_quietly(db: Any) -> None:
    with contextlib.suppress(Exception):
        db.close()


def _close_idle(idle: list[Any], lock: threading.Lock) -> None:
    with lock:
        connections = idle[:]
        idle.clear()
    for db in connections:
        _close_quietly(db)


def open_postgres(url: str, *, read_only: bool = False) -> PostgresLedger:
    """The ledger for a ``postgresql://`` (or ``postgres://``) URL, migrated on open;
    ``read_only``: an existing one, opened without creating or changing anything."""
    return PostgresLedger(url, read_only=read_only)


def _statements(schema: str) -> dict[str, str]:
    """The hot path's SQL with the ledger's schema written in (no search_path needed, so a
    transaction-pooling PgBouncer can hand each transaction any server connection)."""
    s = f'"{schema}".'
    return {
        "select_call": f"SELECT {_CALL_COLUMNS} FROM {s}calls",
        "insert_call": f"INSERT INTO {s}calls ({_CALL_COLUMNS}) VALUES ({_CALL_VALUES})",
        "close_call": f"UPDATE {s}calls SET {_SET_CLOSED} WHERE id = %s",
        "insert_event": f"INSERT INTO {s}events (call_id, kind, time, amount_usd, detail) "
                        f"VALUES (%s, %s, %s, %s, %s)",
        "select_totals": f"SELECT spent_usd, reserved_usd, calls FROM {s}totals "
                         f"WHERE scope = %s AND period_key = %s",
        "select_window": f"SELECT period_key, spent_usd, reserved_usd, calls FROM {s}totals "
                         f"WHERE scope = %s AND period_key = ANY(%s)",
        "put_totals": f"INSERT INTO {s}totals (scope, period_key, spent_usd, reserved_usd, "
                      f"calls) VALUES (%s, %s, %s, %s, %s) ON CONFLICT (scope, period_key) "
                      f"DO UPDATE SET spent_usd = EXCLUDED.spent_usd, "
                      f"reserved_usd = EXCLUDED.reserved_usd, calls = EXCLUDED.calls",
        "expired": f"SELECT {_CALL_COLUMNS} FROM {s}calls WHERE state = 'open' AND "
                   f"expires_at <= %s ORDER BY expires_at, id FOR UPDATE SKIP LOCKED",
        "crossing": f"INSERT INTO {s}crossings VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING",
        "lock": "SELECT pg_advisory_xact_lock(key) FROM unnest(%s::bigint[]) AS key",
        "events_page": f"SELECT id, call_id, kind, time, amount_usd, detail FROM {s}events "
                       f"WHERE id > %s ORDER BY id LIMIT %s",
        "call_books": f"SELECT id, scopes, period_keys, estimated_usd, state FROM {s}calls "
                      f"WHERE id = ANY(%s)",
        "closed_count": f"SELECT count(*) FROM {s}calls WHERE state != 'open'",
        "closed_without_close": f"SELECT id, state FROM {s}calls c WHERE state != 'open' AND "
                                f"NOT EXISTS (SELECT 1 FROM {s}events e WHERE e.call_id = c.id "
                                f"AND e.kind != 'reserve')",
        "all_totals": f"SELECT scope, period_key, spent_usd, reserved_usd, calls FROM {s}totals",
    }


class _Transaction(AbstractContextManager["_Tx"]):
    """One transaction on this thread's connection: committed when its block ends, rolled back
    when it raises; a failure a rerun can mend becomes :class:`_Retry`."""

    __slots__ = ("_begin", "_cursor", "_db", "_ledger")

    def __init__(self, ledger: PostgresLedger, begin: str) -> None:
        self._ledger, self._begin = ledger, begin
        self._db: Any = None
        self._cursor: Any = None

    def __enter__(self) -> _Tx:
        ledger = self._ledger
        psycopg = ledger._psycopg
        self._db = ledger._borrow()
        try:
            self._cursor = self._db.cursor()
            self._cursor.execute(self._begin)
            tx = _Tx(ledger, self._cursor)
            prelock = getattr(ledger._local, "prelock", ())
            if prelock and not self._begin.endswith("READ ONLY"):
                tx.lock(prelock)
        except psycopg.Error as exc:
            try:
                self._fail(exc)
            finally:
                ledger._give_back(self._db)
        return tx

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        psycopg = self._ledger._psycopg
        try:
            if kind is None:
                try:
                    self._cursor.execute("COMMIT")
                except psycopg.Error as error:
                    # Sent, and perhaps applied: never run again (see the module docstring).
                    raise self._ledger._unavailable("commit to", error) from error
                return
            if isinstance(exc, psycopg.Error):
                self._fail(exc)
            self._roll_back()
        finally:
            self._ledger._give_back(self._db)  # closed instead if broken or mid-transaction

    def _fail(self, exc: BaseException) -> None:
        """Roll back and raise what the failure calls for."""
        psycopg = self._ledger._psycopg
        if isinstance(exc, psycopg.errors.DeadlockDetected | psycopg.errors.SerializationFailure
                      | psycopg.OperationalError) or self._db.broken:
            if self._db.broken:
                self._ledger._drop_idle()
            self._roll_back()
            raise _Retry(str(self._ledger._unavailable("write", exc)),
                         url=self._ledger.shown_url) from exc
        self._roll_back()
        raise LedgerError(f"PostgreSQL ledger {self._ledger.shown_url} (schema "
                          f"{self._ledger.schema}): {exc}") from exc

    def _roll_back(self) -> None:
        if self._db.broken or self._db.closed:
            return
        # A failing ROLLBACK leaves the connection broken: given back, it is closed then.
        with contextlib.suppress(self._ledger._psycopg.Error):
            self._cursor.execute("ROLLBACK")


class _Tx:
    """The storage operations of :class:`~spendguard._budget.ledger.engine.Tx` in one
    PostgreSQL transaction (or, with ``locking=False``, single autocommit reads)."""

    def __init__(self, ledger: PostgresLedger, cursor: Any, *, locking: bool = True) -> None:
        self.ledger = ledger
        self.cursor = cursor
        self.sql = ledger._sql
        self.locking = locking
        self.locked: set[str] = set()
        # Totals read or written here: the scope's lock is held until the end, so they stay.
        self.seen: dict[tuple[str, str], Totals] = {}

    def lock(self, scopes: Sequence[str]) -> None:
        """Take the scopes' advisory locks not held yet, in sorted order."""
        wanted = sorted(set(scopes) - self.locked)
        if not self.locking or not wanted:
            return
        schema = self.ledger.schema
        self.cursor.execute(self.sql["lock"], ([lock_key(schema, scope) for scope in wanted],))
        self.locked.update(wanted)

    def totals(self, scope: str, period_key: str) -> Totals:
        known = self.seen.get((scope, period_key))
        if known is None:
            self.lock([scope])
            self.cursor.execute(self.sql["select_totals"], (scope, period_key))
            row = self.cursor.fetchone()
            known = Totals() if row is None else Totals(row[0], row[1], row[2])
            if self.locking:
                self.seen[(scope, period_key)] = known
        return known

    def totals_sum(self, scope: str, period_keys: Sequence[str]) -> Totals:
        self.lock([scope])
        self.cursor.execute(self.sql["select_window"], (scope, list(period_keys)))
        steps = dict.fromkeys(period_keys, Totals())
        steps.update((key, Totals(spent, reserved, calls))
                     for key, spent, reserved, calls in self.cursor.fetchall())
        if self.locking:
            self.seen.update(((scope, key), totals) for key, totals in steps.items())
        return sum_totals(steps.values())

    def put_totals(self, scope: str, period_key: str, totals: Totals) -> None:
        self.lock([scope])  # held already: every write follows a read of the same totals
        self.seen[(scope, period_key)] = totals
        self.cursor.execute(self.sql["put_totals"], (scope, period_key, totals.spent_usd,
                                                     totals.reserved_usd, totals.calls))

    def change_totals(self, scope: str, period_key: str, spent_usd: Decimal,
                      reserved_usd: Decimal, calls: int) -> Totals:
        return add_to_totals(self, scope, period_key, spent_usd, reserved_usd, calls)

    def hold(self, claims: Sequence[ScopeClaim], amount_usd: Decimal,
             now: datetime) -> tuple[list[Totals], bool] | None:
        return None  # recovery takes row locks first (FOR UPDATE SKIP LOCKED): step by step

    def insert_call(self, row: Call | CallRow) -> None:
        self.cursor.execute(self.sql["insert_call"], _ROWS.values(row))

    def get_call(self, call_id: str) -> Call | CallRow | None:
        self.cursor.execute(f"{self.sql['select_call']} WHERE id = %s FOR UPDATE", (call_id,))
        row = self.cursor.fetchone()
        if row is None:
            return None
        stored = _row_to_call(row)
        self.lock(stored.record.scopes)
        return Call.reopened(stored) if stored.state == OPEN else stored

    def update_call(self, call: Call) -> None:
        self.cursor.execute(self.sql["close_call"], (*_ROWS.closing_values(call), call.id))

    def append_event(self, call_id: str, kind: str, time: datetime, amount_usd: Decimal,
                     detail: str | None = None) -> None:
        self.cursor.execute(self.sql["insert_event"], (call_id, kind, as_utc(time), amount_usd,
                                                       detail))

    def expired_open_calls(self, now: datetime) -> list[Call]:
        # Rows another transaction is closing are skipped (it will close them); the ones
        # taken stay locked until this transaction ends, so no one recovers them twice.
        self.cursor.execute(self.sql["expired"], (as_utc(now),))
        calls = [Call.reopened(_row_to_call(row)) for row in self.cursor.fetchall()]
        self.lock([scope for call in calls for scope in call.scopes])
        return calls

    def claim_crossing(self, scope: str, period_key: str, warn_usd: Decimal,
                       time: datetime) -> bool:
        self.cursor.execute(self.sql["crossing"], (scope, period_key, amount_key(warn_usd),
                                                   as_utc(time)))
        return bool(self.cursor.rowcount == 1)

    def all_events(self) -> Iterator[Event]:
        # A page at a time by id, on this transaction's snapshot: the log is never held whole,
        # and the cursor is free between pages for the calls' look-ups.
        after, size = 0, replay.PAGE_SIZE
        while True:
            self.cursor.execute(self.sql["events_page"], (after, size))
            rows = self.cursor.fetchall()
            for event_id, call_id, kind, time, amount, detail in rows:
                yield Event(call_id, kind, _utc(time), amount, detail)
                after = event_id
            if len(rows) < size:
                return

    def call_books(self, call_ids: Iterable[str]) -> dict[str, CallBooks]:
        wanted = list(call_ids)
        if not wanted:
            return {}
        self.cursor.execute(self.sql["call_books"], (wanted,))
        return {call_id: CallBooks(tuple(zip(scopes, keys, strict=True)), worst, state)
                for call_id, scopes, keys, worst, state in self.cursor.fetchall()}

    def all_totals(self) -> Iterator[tuple[str, str, Totals]]:
        self.cursor.execute(self.sql["all_totals"])
        for scope, key, spent, reserved, calls in self.cursor.fetchall():
            yield scope, key, Totals(spent, reserved, calls)

    def closed_call_count(self) -> int:
        self.cursor.execute(self.sql["closed_count"])
        return int(self.cursor.fetchone()[0])

    def closed_calls_without_close(self) -> Iterator[tuple[str, str]]:
        self.cursor.execute(self.sql["closed_without_close"])
        return iter(self.cursor.fetchall())


def _utc(moment: datetime) -> datetime:
    """A time read back, in UTC whatever the session's time zone."""
    return moment if moment.tzinfo is UTC else moment.astimezone(UTC)


# Amounts go as Decimal into NUMERIC, times into TIMESTAMPTZ, flags into BOOLEAN: as they are.
_ROWS = RowCodec(
    encode={"time": as_utc, "map": json_object, "list": list, "claims": claims_text},
    decode={"time": _utc, "list": tuple, "claims": claims_from_text})
_row_to_call = _ROWS.call_row
