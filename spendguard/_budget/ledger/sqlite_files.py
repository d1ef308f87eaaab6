"""The SQLite ledger's file: made whole or not at all, checked on open, its faults explained.

A ledger file is never seen empty: a new one is built and migrated under a temporary name, then
linked into place, so a 0-byte file where a ledger is expected means it was truncated (or is
not ours) and is refused instead of being taken as a new, empty ledger. SQLite's own error
texts become :class:`LedgerError` messages that name the file, the cause and the fix.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import uuid
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

from spendguard._core.errors import LedgerError
from spendguard._core.private_files import PRIVATE_FILE_MODE, make_private_dir

__all__ = ["check_existing", "create_atomically", "file_state", "ledger_error",
           "read_only_uris"]

# SQLite's message fragment -> (what happened, what to do). First match wins.
_CAUSES: tuple[tuple[str, str, str], ...] = (
    ("disk is full", "the disk (or quota) is full",
     "free some space; everything recorded before is kept"),
    ("readonly", "the file or its folder is read-only for this process",
     "make both writable by this user, or set SPENDGUARD_LEDGER to a writable place; "
     "`spendguard report`, `export` and `ledger verify` still read it"),
    ("unable to open", "SQLite cannot open the file or create its -wal/-shm files next to it",
     "check that the folder exists and is writable by this user, or set SPENDGUARD_LEDGER; "
     "`spendguard report`, `export` and `ledger verify` still read a read-only ledger"),
    ("malformed", "the file is corrupted",
     "restore it from a backup, or salvage what still reads with the sqlite3 shell "
     "(`sqlite3 BROKEN.db .recover | sqlite3 NEW.db`); spendguard will not write to it"),
    ("not a database", "the file is not a SQLite database (or is corrupted)",
     "restore the ledger from a backup, or point SPENDGUARD_LEDGER at the right file"),
    ("no such table", "the file is a SQLite database but not a spendguard ledger",
     "point SPENDGUARD_LEDGER (or --ledger) at the ledger file"),
    ("locked", "another process held its write lock for longer than the 30 s busy timeout",
     "retry, or find the process that keeps a transaction open"),
)
_DEFAULT_FIX = "check the path and its permissions, or set SPENDGUARD_LEDGER"


def ledger_error(path: Path, doing: str, exc: BaseException) -> LedgerError:
    """``exc`` (from SQLite or the OS) as a LedgerError naming ``path``, the cause and the fix."""
    text = str(exc)
    lowered = text.lower()
    for fragment, cause, fix in _CAUSES:
        if fragment in lowered:
            return LedgerError(f"cannot {doing} the ledger at {path}: {cause} ({text}); {fix}")
    return LedgerError(f"cannot {doing} the ledger at {path}: {text}; {_DEFAULT_FIX}")


def check_existing(path: Path) -> bool:
    """Whether a ledger file is at ``path``; raises for an empty file (a lost ledger)."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return False
    if size == 0:
        raise LedgerError(
            f"the ledger at {path} is an empty (0-byte) file: a ledger is never empty, so it "
            f"was truncated or replaced and what it recorded is gone from it; restore it from "
            f"a backup, or delete the file to start a new ledger from $0")
    return True


def create_atomically(path: Path, prepare: Callable[[sqlite3.Connection], None]) -> None:
    """Make a new ledger at ``path`` (unless another process just did): whole or not at all."""
    make_private_dir(path.parent)
    temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex}.new")
    try:
        # Made 0600 before SQLite opens it: SQLite gives the -wal and -shm files the mode of
        # the database file, and the link below keeps it.
        os.close(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE_MODE))
        db = sqlite3.connect(temporary, isolation_level=None)
        try:
            prepare(db)
        finally:
            db.close()  # the last connection: SQLite folds the -wal file back in
        try:
            os.link(temporary, path)
        except FileExistsError:
            pass  # another process made it first: use theirs
        except OSError:
            # No hard links on this file system: claim the name exclusively, then fill it.
            with contextlib.suppress(FileExistsError), os.fdopen(os.open(
                    path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE_MODE), "wb") as made:
                made.write(temporary.read_bytes())
    finally:
        for leftover in (temporary, Path(f"{temporary}-wal"), Path(f"{temporary}-shm")):
            with contextlib.suppress(FileNotFoundError):
                leftover.unlink()


def read_only_uris(path: Path) -> tuple[str, str]:
    """URIs that open ``path`` only to read, the first one to try first.

    While a writer has the ledger open its ``-wal`` file exists, and a shared reader
    (``mode=ro``) reads it consistently alongside. A ledger nobody has open (no ``-wal``) is
    read ``immutable=1``: a shared reader would have to create the ``-wal`` and ``-shm`` files
    (and, being read-only, would leave them behind), so reading would write. The immutable
    reader needs nothing; if a writer opens the file meanwhile and rewrites it, the reader
    notices (:func:`file_state` changes) and says so. A ledger in a read-only folder is read
    ``immutable=1`` too, after ``mode=ro`` fails.
    """
    base = f"file:{quote(str(path.resolve()))}"
    shared, immutable = f"{base}?mode=ro", f"{base}?immutable=1"
    if not path.with_name(path.name + "-wal").exists():
        return immutable, shared
    return shared, immutable


def file_state(path: Path) -> tuple[int, int] | None:
    """The file's size and modification time (None when gone): what a rewrite changes."""
    try:
        status = path.stat()
    except OSError:
        return None
    return status.st_size, status.st_mtime_ns
