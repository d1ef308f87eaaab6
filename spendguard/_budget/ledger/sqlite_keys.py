"""Where a call's row lives in the SQLite ledger's ``calls`` table, and how open calls are found.

A row's key (its rowid, given by the insert) is computed from its call id, so the table is
its own index on ids: a look-up by id reads the few keys its id can have, and a reservation
writes no index entry for it. (The table has no ``INTEGER PRIMARY KEY`` column, as its columns
are the ones every backend declares: should something renumber its rowids, which SQLite's
``VACUUM`` does not do but does not promise, the ledger keys the rows again when it opens.) A call id begins with the microsecond it was made
(see ``engine._new_call_id``), so keys grow as calls are made and a new row goes on the
table's last page. Two ids whose first 16 hex digits agree but for their last two bits want the
same key; the later one takes the next free key within :data:`KEY_WINDOW`.

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

__all__ = ["KEY_WINDOW", "TAIL_ROWS", "call_key", "keys_in_place", "rekey_calls"]

KEY_WINDOW = 4096
"""The keys a call id can have: its own and the next ``KEY_WINDOW - 1``."""

TAIL_ROWS = 64
"""The rows with the highest keys, read by every reservation's check for expired calls: more
than the calls a ledger usually has in flight at once, few enough to read in microseconds."""

_KEY_BITS = (1 << 62) - 1  # with the window above it, still a positive 64-bit integer


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
