"""Where a call's row lives in the SQLite ledger's ``calls`` table, and how open calls are found.

A row's key (its rowid, given by the insert) is computed from its call id, so the table is
its own index on ids: a look-up by id reads the few keys its id can have, and a reservation
writes no index entry for it. A call id begins with the microsecond it was made (see
``engine._new_call_id``), so keys grow as calls are made and a new row goes on the table's
last page. Two ids whose first 16 hex digits agree but for their last two bits want the same
key; the later one takes the next free key within :data:`KEY_WINDOW`. The table has no
``INTEGER PRIMARY KEY`` column (its columns are the ones every backend declares): should
something renumber its rowids, which SQLite's ``VACUUM`` does not do but does not promise, the
ledger keys the rows again when it opens (:func:`keys_in_place`, :func:`rekey_calls`).

Open calls are found without an index of their own (which a reservation and its close would
each write): every open call is either among the :data:`TAIL_ROWS` rows with the highest keys
(the tail, read by the check every reservation makes) or *parked*: its expiry and id in the
small ``calls_parked`` table. A row that leaves the tail while still open (a call that outlives
``TAIL_ROWS`` later ones) is parked by the insert that pushes it out, and a call reserved below
the tail (its id older than the tail's: a clock set back) is parked as it is inserted; both in
the inserting transaction, so the rule holds in every committed state. A parked call's close
leaves its entry; entries go once their expiry has passed, when the expired calls are read.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Callable, Sequence
from typing import Any

from spendguard._budget.ledger.fields import column_list

__all__ = [
    "BY_ID",
    "EXPIRED",
    "KEY_WINDOW",
    "SELECT_BY_ID",
    "SELECT_CALL",
    "TAIL",
    "TAIL_END",
    "TAIL_ROWS",
    "by_id",
    "by_ids",
    "call_key",
    "expired_rows",
    "free_key",
    "keys_in_place",
    "park_after_insert",
    "rekey_calls",
    "select_by_ids",
]

Run = Callable[..., sqlite3.Cursor]
"""A transaction's ``execute``."""

KEY_WINDOW = 4096
"""The keys a call id can have: its own and the next ``KEY_WINDOW - 1``."""

TAIL_ROWS = 32
"""The rows with the highest keys, read by every reservation's check for expired calls: more
than the calls a ledger usually has in flight at once, few enough to read in microseconds."""

_KEY_BITS = (1 << 62) - 1  # with the window above it, still a positive 64-bit integer

SELECT_CALL = f"SELECT {column_list()} FROM calls"
BY_ID = "rowid BETWEEN ? AND ? AND id = ?"
"""A call found by its id, among the keys it can have (parameters: :func:`by_id`)."""
SELECT_BY_ID = f"{SELECT_CALL} WHERE {BY_ID}"

# The lowest rowid in the tail (the table's first while it has fewer rows than the tail).
_TAIL_START = (f"coalesce((SELECT rowid FROM calls ORDER BY rowid DESC LIMIT 1 OFFSET "
               f"{TAIL_ROWS - 1}), -9223372036854775808)")
EXPIRED = (f"(EXISTS (SELECT 1 FROM calls WHERE rowid >= {_TAIL_START} AND state = 'open' "
           f"AND expires_at <= ?1) OR EXISTS (SELECT 1 FROM calls_parked WHERE "
           f"expires_at <= ?1))")
"""Whether a call may have expired by ``?1``: an open one in the tail, or a parked one (or a
parked entry whose call has closed since: see :func:`expired_rows`)."""
TAIL_END = (f"(SELECT CASE WHEN state = 'open' AND expires_at IS NOT NULL THEN -rowid ELSE "
            f"rowid END FROM calls ORDER BY rowid DESC LIMIT 1 OFFSET {TAIL_ROWS - 1})")
"""The row an insert pushes out of the tail: its rowid, negated if it is an open call (to be
parked); NULL while the table has fewer rows than the tail."""
TAIL = f"SELECT {TAIL_END}"
_PARK = "INSERT OR IGNORE INTO calls_parked SELECT expires_at, id FROM calls WHERE rowid = ?"
_PARK_NEW = "INSERT OR IGNORE INTO calls_parked VALUES (?, ?)"
_EXPIRED_TAIL = (f"{SELECT_CALL} WHERE rowid >= {_TAIL_START} AND state = 'open' AND "
                 f"expires_at <= ?")
_EXPIRED_PARKED = "SELECT DISTINCT call_id FROM calls_parked WHERE expires_at <= ?"
_UNPARK = "DELETE FROM calls_parked WHERE expires_at <= ?"


def call_key(call_id: str) -> int:
    """The first key (rowid) the row of ``call_id`` can have: its first 16 hex digits, less two
    bits; an id that does not begin with 16 hex digits, from its hash. Never 0 (open calls'
    keys are passed negated, see ``sqlite_tx``). Part of the file's format: never change it."""
    try:
        value = int(call_id[:16], 16) >> 2 if len(call_id) >= 16 else None
    except ValueError:
        value = None
    if value is None:
        value = int.from_bytes(hashlib.blake2b(call_id.encode(), digest_size=8).digest()) >> 2
    return (value & _KEY_BITS) or 1


def by_id(call_id: str) -> tuple[int, int, str]:
    """The parameters of :data:`BY_ID` for ``call_id``."""
    first = call_key(call_id)
    return first, first + KEY_WINDOW - 1, call_id


def select_by_ids(columns: Sequence[str], count: int) -> str:
    """A read of ``columns`` of the rows of ``count`` call ids, each among the keys it can have
    (a join on a list of first keys and ids; parameters: :func:`by_ids`). ``NOT INDEXED``:
    for a long list the planner would rather build an index on ids, reading the whole table."""
    return (f"SELECT {', '.join(f'calls.{c}' for c in columns)} FROM "
            f"(VALUES {', '.join(['(?, ?)'] * count)}) AS wanted CROSS JOIN calls NOT INDEXED ON "
            f"calls.rowid BETWEEN wanted.column1 AND wanted.column1 + {KEY_WINDOW - 1} AND "
            f"calls.id = wanted.column2")


def by_ids(call_ids: Sequence[str]) -> list[int | str]:
    """The parameters of :func:`select_by_ids` for ``call_ids``."""
    return [value for call_id in call_ids for value in (call_key(call_id), call_id)]


def free_key(run: Run, call_id: str, first: int) -> int:
    """The key for a row whose first key is taken: the next free one (an id already in the
    ledger is refused, as a primary key would)."""
    taken = dict(run("SELECT rowid, id FROM calls WHERE rowid BETWEEN ? AND ?",
                     (first, first + KEY_WINDOW - 1)).fetchall())
    if call_id in taken.values():
        raise sqlite3.IntegrityError("UNIQUE constraint failed: calls.id")
    free = next((key for key in range(first, first + KEY_WINDOW) if key not in taken), None)
    if free is None:
        raise sqlite3.IntegrityError(f"no free key for call {call_id}")
    return free


def park_after_insert(run: Run, key: int, tail_end: int, call_id: str, state: str,
                      expires_at: str | None) -> None:
    """Keep every open call in the tail or parked, after inserting the row of ``call_id`` at
    ``key`` into a table whose tail ended at ``tail_end`` (:data:`TAIL_END`, read before): the
    row it pushed out of the tail is parked if open, and an open row inserted below the tail is
    parked itself."""
    if key > abs(tail_end):
        if tail_end < 0:
            run(_PARK, (-tail_end,))
    elif state == "open" and expires_at is not None:
        run(_PARK_NEW, (expires_at, call_id))


def expired_rows(run: Run, cutoff: str) -> list[Any]:
    """The rows of the open calls that expired by ``cutoff``, in the tail or parked; the
    parked entries expired by then go (their calls are charged now, or closed already)."""
    rows = run(_EXPIRED_TAIL, (cutoff,)).fetchall()
    found = {row[0] for row in rows}
    for (call_id,) in run(_EXPIRED_PARKED, (cutoff,)).fetchall():
        row = run(SELECT_BY_ID, by_id(call_id)).fetchone()
        if row is not None and row[0] not in found and row[2] == "open":
            rows.append(row)
    run(_UNPARK, (cutoff,))
    return rows


def rekey_calls(db: sqlite3.Connection) -> None:
    """Give every row of ``calls`` the key its id asks for (a table made before keys were, or
    one whose rowids something renumbered), in the rows' present order. Inside a transaction;
    the new keys are gathered in a temporary table, so memory does not grow with the ledger."""
    db.execute("CREATE TEMP TABLE calls_rekeyed (old INTEGER PRIMARY KEY, new INTEGER UNIQUE)")
    insert = "INSERT INTO calls_rekeyed VALUES (?, ?)"
    rows = db.execute("SELECT rowid, id FROM calls ORDER BY rowid")
    while part := rows.fetchmany(1000):
        for rowid, call_id in part:
            first = key = call_key(call_id)
            while True:
                try:
                    db.execute(insert, (rowid, key))
                    break
                except sqlite3.IntegrityError:  # taken by an earlier row: the next one
                    key += 1
                    if key - first >= KEY_WINDOW:
                        raise
    # Out of the way first (keys are positive), so no row's new key is another's old one.
    db.execute("UPDATE calls SET rowid = -rowid")
    db.execute("UPDATE calls SET rowid = (SELECT new FROM calls_rekeyed WHERE old = -calls.rowid)")
    db.execute("DROP TABLE calls_rekeyed")


def keys_in_place(db: sqlite3.Connection) -> bool:
    """Whether the last row of ``calls`` has a key its id can have (one read): false after
    something renumbered the table's rowids."""
    last = db.execute("SELECT rowid, id FROM calls ORDER BY rowid DESC LIMIT 1").fetchone()
    return last is None or 0 <= last[0] - call_key(last[1]) < KEY_WINDOW
