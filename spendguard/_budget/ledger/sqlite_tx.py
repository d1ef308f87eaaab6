"""The SQLite ledger's storage operations inside one transaction, and its statements and rows.

:class:`SqliteTx` is what the accounting rules (:mod:`~spendguard._budget.ledger.engine`) read
and write through; :mod:`~spendguard._budget.ledger.sqlite` makes the connections and the
transactions it runs in, and argues why they are durable enough.
"""

from __future__ import annotations

import functools
import json
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from spendguard._budget.ledger import replay
from spendguard._budget.ledger.base import ScopeClaim, Totals
from spendguard._budget.ledger.engine import OPEN, Call, CallRow, Event, add_to_totals
from spendguard._budget.ledger.fields import CLOSING, COLUMNS, column_list
from spendguard._budget.ledger.limits import sum_totals
from spendguard._budget.ledger.replay import CallBooks
from spendguard._budget.ledger.rows import (
    RowCodec,
    amount_key,
    claims_from_text,
    claims_text,
    json_object,
)
from spendguard._budget.ledger.sqlite_keys import (
    BY_ID,
    EXPIRED,
    SELECT_BY_ID,
    SELECT_CALL,
    TAIL,
    TAIL_END,
    by_id,
    by_ids,
    call_key,
    expired_rows,
    free_key,
    park_after_insert,
    select_by_ids,
)
from spendguard._core.money import ZERO
from spendguard._core.periods import as_utc

__all__ = ["SELECT_CALL", "SqliteTx", "StaleOpenRow", "row_to_call", "stamp"]

_CALL_COLUMNS = column_list()
# A row's rowid is its key (sqlite_keys): given, not taken from the table's end.
_INSERT_CALL = (f"INSERT INTO calls (rowid, {_CALL_COLUMNS}) "
                f"VALUES ({', '.join('?' * (len(COLUMNS) + 1))})")
# The hot path's statements, one text each: sqlite3 keeps every statement it has prepared,
# keyed by its text, so these are compiled once per connection.
_SET_CLOSED = f"UPDATE calls SET {', '.join(f'{f.name} = ?' for f in CLOSING)} "
_CLOSE_CALL = f"{_SET_CLOSED}WHERE {BY_ID}"
# The close of an open row this process remembers: the state test replaces reading it first,
# and the row is found by the rowid its insert returned, without a search among the keys its
# id can have (the id test keeps it right should the rowid have changed).
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
                  "reserved_usd = sg_held(NULL, reserved_usd, ?, calls + ?, 0, NULL), "
                  "calls = calls + ? WHERE scope = ? AND period_key = ?")


def _hold_probing(expired: str, tail_end: str) -> str:
    # A reservation's first hold also asks whether any call has expired, and which row its
    # insert will push out of the tail: the probe every reserve makes, without a statement of
    # its own.
    return (f"UPDATE totals SET reserved_usd = sg_held(spent_usd, reserved_usd, ?2, calls + 1, "
            f"{expired}, {tail_end}), calls = calls + 1 WHERE scope = ?3 AND period_key = ?4")


# A file whose schema predates calls_parked (its migrations stop earlier: made by an older
# spendguard, as a test makes one) has the partial index of open calls instead, and no tail.
_EXPIRED_INDEXED = "EXISTS (SELECT 1 FROM calls WHERE state = 'open' AND expires_at <= ?1)"
_EXPIRED_OPEN = f"{SELECT_CALL} WHERE state = 'open' AND expires_at <= ?"
_HOLD = ("UPDATE totals SET reserved_usd = sg_held(spent_usd, reserved_usd, ?, calls + 1, 0, "
         "NULL), calls = calls + 1 WHERE scope = ? AND period_key = ?")
# The log's events, read from the calls they are about (see all_events), a page of calls at
# a time in the order they were written.
_EVENT_COLUMNS = ("id", "time", "state", "estimated_usd", "actual_usd", "note")
_CALL_EVENTS = (f"SELECT {', '.join(_EVENT_COLUMNS)}, rowid FROM calls WHERE rowid > ? "
                f"ORDER BY rowid LIMIT ?")
_CLOSED_BY = {"settled": "settle", "released": "release", "recovered": "recover"}
# What replaying a call's events needs of it (see call_books).
_BOOKS_COLUMNS = ("id", "scopes", "period_keys", "estimated_usd", "state")
_IDS_PER_READ = 500  # ids looked up by one read: well under SQLite's variable limit
_CLOSED_COUNT = "SELECT count(*) FROM calls WHERE state != 'open'"
# A closed call's row is its close in the log, unless its state names none (see all_events).
_WITHOUT_CLOSE = (f"SELECT id, state FROM calls WHERE state NOT IN "
                  f"('open', 'adjustment', {', '.join(repr(s) for s in _CLOSED_BY)})")
_PUT_TOTALS = ("INSERT OR REPLACE INTO totals (scope, period_key, spent_usd, reserved_usd, "
               "calls) VALUES (?, ?, ?, ?, ?)")


class StaleOpenRow(Exception):
    """An open row remembered by this process was closed by another one (recovered)."""

class SqliteTx:
    """The storage operations of :class:`~spendguard._budget.ledger.engine.Tx` on one connection.

    Totals read or written in the transaction are kept (``seen``): the write lock is held
    until it ends, so no other process can change them meanwhile, and the rules' later reads
    of the same row (settle's warning check, a rolling window's current step) cost nothing.
    A row read is known to exist (``stored``), so writing it back updates it in place rather
    than replacing it (a delete and an insert in the table's b-tree). Statements whose results
    are read at once run on the transaction's cursor (``run``); the ones iterated lazily
    (``all_totals``, ``closed_calls_without_close``) get cursors of their own.
    """

    def __init__(self, db: sqlite3.Connection, open_rows: dict[str, tuple[int, Call]],
                 cursor: sqlite3.Cursor | None = None) -> None:
        self.db = db
        self.run = (db if cursor is None else cursor).execute
        self.open_rows = open_rows
        # What the totals functions computed for the row the last statement changed: spent,
        # held, calls, whether a call may have expired, the tail's end (see register).
        self.kept: list[Any] = [None, None, None, None, None]
        self.seen: dict[tuple[str, str], Totals] = {}
        self.stored: set[tuple[str, str]] = set()
        # An open row from memory, its state not yet read: its id and rowid.
        self.unverified: tuple[str, int] | None = None
        # The row the next insert pushes out of the tail, as TAIL_END gives it, when a
        # reservation's probe has read it already (see insert_call).
        self.tail_end: tuple[int | None] | None = None
        self.use_schema(parking=True)

    def use_schema(self, *, parking: bool) -> None:
        """Whether the file finds open calls in its tail and ``calls_parked`` (its schema is
        m007's or later), or by the partial index of open calls (older)."""
        self.parking = parking
        expired = EXPIRED if parking else _EXPIRED_INDEXED
        self.hold_probing = _hold_probing(expired, TAIL_END if parking else "NULL")
        self.any_expired = f"SELECT {expired}"

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

        def held(spent: str | None, old: str, change: str, calls: int, expired: int,
                 tail_end: int | None) -> str:
            # The row's other values come as arguments (a column in SET reads its value
            # before the statement), so one call per statement keeps them all.
            new = str(Decimal(old) + Decimal(change))
            if spent is not None:
                kept[0] = spent
            kept[1], kept[2], kept[3], kept[4] = new, calls, expired, tail_end
            return new

        db.create_function("sg_spent", 2, spent)
        db.create_function("sg_held", 6, held)

    def change_totals(self, scope: str, period_key: str, spent_usd: Decimal,
                      reserved_usd: Decimal, calls: int) -> Totals:
        if self.run(_CHANGE_TOTALS, (str(spent_usd), str(reserved_usd), calls, calls, scope,
                                     period_key)).rowcount == 0:
            return add_to_totals(self, scope, period_key, spent_usd, reserved_usd, calls)
        spent, reserved, counted, *_ = self.kept
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
                changed = self.run(self.hold_probing, (stamp(now), amount, scope, key)).rowcount
                expired = bool(changed and self.kept[3])
                if changed:
                    self.tail_end = (self.kept[4],)
            if changed == 0:  # the period's first call: its row is made, the probe asked
                if not before:
                    expired = bool(self.run(self.any_expired, (stamp(now),)).fetchone()[0])
                old = self.totals(scope, key)
                self.put_totals(scope, key, Totals(old.spent_usd, old.reserved_usd + amount_usd,
                                                   old.calls + 1))
                before.append(old)
                continue
            spent, reserved, counted, *_ = self.kept
            after = self._after(scope, key, Totals(Decimal(spent), Decimal(reserved), counted))
            before.append(Totals(after.spent_usd, after.reserved_usd - amount_usd,
                                 after.calls - 1))
        return before, expired

    def _after(self, scope: str, period_key: str, totals: Totals) -> Totals:
        self.seen[(scope, period_key)] = totals
        self.stored.add((scope, period_key))
        return totals

    def insert_call(self, row: Call | CallRow) -> None:
        values = _ROWS.values(row)
        key = call_key(values[0])
        tail_end = self.tail_end
        self.tail_end = None  # this insert moves the tail: the next one reads it again
        end = (None if not self.parking
               else (self.run(TAIL).fetchone() if tail_end is None else tail_end)[0])
        try:
            self.run(_INSERT_CALL, (key, *values))
        except sqlite3.IntegrityError:
            key = free_key(self.run, values[0], key)
            self.run(_INSERT_CALL, (key, *values))
        if end is not None:
            park_after_insert(self.run, key, end, values[0], values[2], values[3])
        if isinstance(row, Call) and row.state == OPEN:
            self.open_rows[row.id] = (key, row)

    def get_call(self, call_id: str) -> Call | CallRow | None:
        known = self.open_rows.get(call_id)
        if known is not None:
            # Taken on trust: closing it checks that it is still open (update_call).
            self.unverified = (call_id, known[0])
            return known[1]
        row = self.run(SELECT_BY_ID, by_id(call_id)).fetchone()
        return None if row is None else _stored_call(row)

    def update_call(self, call: Call) -> None:
        # Forgotten first: should this transaction fail, the call is read from the file again.
        self.open_rows.pop(call.id, None)
        values = _ROWS.closing_values(call)
        unverified = self.unverified
        if unverified is None or unverified[0] != call.id:
            self.run(_CLOSE_CALL, (*values, *by_id(call.id)))
            return
        self.unverified = None
        if self.run(_CLOSE_OPEN_CALL, (*values, unverified[1], call.id)).rowcount != 1:
            # Another process recovered it meanwhile: nothing was written yet; start again
            # from the row in the file.
            raise StaleOpenRow(call.id)

    def append_event(self, call_id: str, kind: str, time: datetime, amount_usd: Decimal,
                     detail: str | None = None) -> None:
        """Nothing to write: the call's row is its log (see :meth:`all_events`)."""

    def expired_open_calls(self, now: datetime) -> list[Call]:
        # Asked on every reserve, and almost always none: one probe of the tail and of the
        # parked calls answers that before any row is read and decoded.
        cutoff = stamp(now)
        if not self.run(self.any_expired, (cutoff,)).fetchone()[0]:
            return []
        if not self.parking:
            return [Call.reopened(row_to_call(row))
                    for row in self.run(_EXPIRED_OPEN, (cutoff,)).fetchall()]
        return [Call.reopened(row_to_call(row)) for row in expired_rows(self.run, cutoff)]

    def claim_crossing(self, scope: str, period_key: str, warn_usd: Decimal,
                       time: datetime) -> bool:
        cursor = self.run("INSERT OR IGNORE INTO crossings VALUES (?, ?, ?, ?)",
                          (scope, period_key, amount_key(warn_usd), stamp(time)))
        return cursor.rowcount == 1

    def all_events(self) -> Iterator[Event]:
        """The log, read from the calls: each row is a call's reservation and, once closed,
        its close (the amount it charged, why), or one correction. Nothing an event said is
        missing from its row but the moment of the close, so no table of its own is written
        (one more b-tree, page and statement per step); ledgers made before keep theirs, as
        it was, beside (their calls say the same). Read a page of calls at a time, by rowid:
        the log is never held whole."""
        after, size = 0, replay.PAGE_SIZE
        while rows := self.run(_CALL_EVENTS, (after, size)).fetchall():
            after = rows[-1][-1]
            for call_id, at, state, worst, actual, note, _ in map(_read_event, rows):
                if state == "adjustment":
                    yield Event(call_id, "adjust", at, actual, note)
                    continue
                yield Event(call_id, "reserve", at, worst)
                closed = _CLOSED_BY.get(state)
                if closed == "settle":
                    yield Event(call_id, closed, at, actual)
                elif closed is not None:
                    yield Event(call_id, closed, at, ZERO if closed == "release" else actual,
                                note)
            if len(rows) < size:
                return

    def call_books(self, call_ids: Iterable[str]) -> dict[str, CallBooks]:
        wanted = list(call_ids)
        books = {}
        for start in range(0, len(wanted), _IDS_PER_READ):
            part = wanted[start:start + _IDS_PER_READ]
            rows = self.run(select_by_ids(_BOOKS_COLUMNS, len(part)), by_ids(part)).fetchall()
            for call_id, scopes, keys, worst, state in map(_read_books, rows):
                books[call_id] = CallBooks(tuple(zip(scopes, keys, strict=True)), worst, state)
        return books

    def all_totals(self) -> Iterator[tuple[str, str, Totals]]:
        for scope, key, spent, reserved, calls in self.db.execute(
                "SELECT scope, period_key, spent_usd, reserved_usd, calls FROM totals"):
            yield scope, key, Totals(Decimal(spent), Decimal(reserved), calls)

    def closed_call_count(self) -> int:
        return int(self.run(_CLOSED_COUNT).fetchone()[0])

    def closed_calls_without_close(self) -> Iterator[tuple[str, str]]:
        # Every closed row is its own close in the log (all_events), but for a state that
        # names none: only such a row can lack one.
        yield from self.db.execute(_WITHOUT_CLOSE)


@functools.lru_cache(maxsize=64)
def stamp(moment: datetime) -> str:
    """Fixed-width UTC text (``2026-05-21T10:00:00.000000+00:00``): sorts as it compares.

    Cached: one reserve writes its time on the call, its event and the expiry probe, and a
    settle its time on the event; each moment is formatted once. A moment already in UTC (the
    budget clock's) needs no conversion."""
    if moment.tzinfo is UTC:
        return moment.isoformat(timespec="microseconds")
    return as_utc(moment).isoformat(timespec="microseconds")


_json = json.JSONEncoder().encode  # json.dumps less its own call and option checks


@functools.lru_cache(maxsize=256)
def _list_text(items: tuple[str, ...]) -> str:
    # A call's scopes and period keys are its budget's for a whole period: encoded once.
    return _json(list(items))


@functools.lru_cache(maxsize=256)
def _list_of(text: str) -> tuple[str, ...]:
    # A call's scopes and period keys are its budget's for a whole period: decoded once.
    return tuple(json.loads(text))


_ROWS = RowCodec(
    encode={"time": stamp, "usd": str, "flag": int, "map": json_object, "list": _list_text,
            "claims": claims_text},
    decode={"time": datetime.fromisoformat, "usd": Decimal, "flag": bool, "map": json.loads,
            "list": _list_of, "claims": claims_from_text})


_read_event = _ROWS.reader(_EVENT_COLUMNS)  # the rowid after them stays as it is
_read_books = _ROWS.reader(_BOOKS_COLUMNS)


def _stored_call(row: tuple[Any, ...]) -> Call | CallRow:
    """A row read from the file: an open one as the :class:`Call` its close will update."""
    stored = row_to_call(row)
    return Call.reopened(stored) if stored.state == OPEN else stored


row_to_call = _ROWS.call_row
