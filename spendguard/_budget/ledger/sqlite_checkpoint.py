"""Copying the SQLite ledger's WAL back into its file on a thread of its own, off the call path.

In WAL mode a commit appends the pages it changed to the ``-wal`` file; a *checkpoint* copies
them back into the database file and, with ``synchronous=NORMAL``, is the only moment the
ledger fsyncs (https://sqlite.org/wal.html#ckpt). SQLite's automatic checkpoint runs inside
the commit that crosses its threshold, so every few hundred guarded calls one of them waited
for the copy and two fsyncs (milliseconds on a network disk), and every call paid its share.

Here the writing connections' automatic checkpoint is a backstop four times further away,
and a daemon thread per ledger runs a ``PASSIVE`` checkpoint on a connection of its own after
about as many commits as fill the usual 4 MiB of WAL. ``PASSIVE`` never waits for a reader
or a writer nor calls the busy handler: writers go on committing meanwhile (SQLite appends
them to the WAL past what is being copied). Nothing about durability changes: a committed
transaction is in the WAL before its commit returns, whichever thread later copies it back,
and a checkpoint cut short by a crash is redone from the WAL by the next one.

The WAL starts again from its top only once a checkpoint has copied all of it before the
next commit, so the thread copies again what commits added during its copy (a few passes at
most). Between calls spaced by a provider's round trip it catches up and the file stays near
4 MiB; under commits without a pause (a benchmark's loop) it does not, and the WAL grows to
the backstop, whose checkpoint, inside a commit, then copies only the frames the thread had
not. A process that writes too little to reach the threshold leaves its WAL to the
backstop, to the other processes' checkpoints, or to the last connection's close (SQLite
checkpoints then). A failed checkpoint is logged, never raised: the backstop still bounds the
WAL.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
from pathlib import Path
from typing import Any

__all__ = ["BACKSTOP_FACTOR", "WalCheckpointer", "commits_per_checkpoint"]

log = logging.getLogger("spendguard.ledger")

BACKSTOP_FACTOR = 4
"""The writing connections' own automatic checkpoint, in multiples of the background one's
threshold: reached only when the background thread falls behind."""

_PAGES_PER_COMMIT = 4  # a reserve or a settle writes 2 to 4 pages (3.2 on average)
_PASSES = 4  # checkpoints one wake-up runs at most, while commits keep overtaking them

# Connections a forked child inherited from its parent's checkpointer: never used nor closed
# there (closing one would drop the parent's POSIX locks on the file), kept so they are never
# collected.
_inherited: list[Any] = []


def commits_per_checkpoint(checkpoint_bytes: int, page_size: int) -> int:
    """Commits between background checkpoints: about ``checkpoint_bytes`` of WAL."""
    return max(16, checkpoint_bytes // (page_size * _PAGES_PER_COMMIT))


class WalCheckpointer:
    """One ledger file's background checkpoints: :meth:`committed` after each commit (a
    counter on the call path); every ``every`` commits the thread is woken to copy the WAL
    back. Started on first need and again in a forked child; :meth:`close` stops it."""

    def __init__(self, target: str | Path, *, every: int, path: Path) -> None:
        self._target = target
        self.every = every
        self._path = path
        self._failing = False  # warned of a failure: said once until a checkpoint succeeds
        self._count = 0
        self._pid = os.getpid()
        self._thread: threading.Thread | None = None
        self._db: sqlite3.Connection | None = None
        self._wake = threading.Event()
        self._closing = False
        self._start_lock = threading.Lock()
        self._done = threading.Condition()
        self.runs = 0
        """Checkpoints run, completed or partial (what tests wait for)."""
        self.last: tuple[int, int, int] | None = None
        """The last one's answer: busy (0 or 1), the WAL's frames, the frames copied back."""

    def committed(self) -> None:
        """One more commit; every ``every``-th wakes the thread. Counted without a lock:
        two threads counting at once may lose a count, which only delays a checkpoint."""
        self._count += 1
        if self._count >= self.every:
            self._count = 0
            self._kick()

    def _kick(self) -> None:
        if self._closing:
            return
        if self._pid != os.getpid():
            self._adopt_fork()
        with self._start_lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, args=(self._wake,),
                                                name="spendguard-checkpoint", daemon=True)
                self._thread.start()
        self._wake.set()

    def _adopt_fork(self) -> None:
        """In a forked child: its parent's thread is not here, and the connection, locks and
        condition (one of them perhaps held at the fork) are the parent's; start afresh."""
        if self._db is not None:
            _inherited.append(self._db)
        self._db, self._thread = None, None
        self._wake, self._start_lock = threading.Event(), threading.Lock()
        self._done = threading.Condition()
        self._pid = os.getpid()

    def _run(self, wake: threading.Event) -> None:
        while True:
            wake.wait()
            wake.clear()
            if self._closing:
                break
            self._checkpoint()
        db, self._db = self._db, None
        if db is not None:
            db.close()

    def _checkpoint(self) -> None:
        try:
            if self._db is None:
                self._db = sqlite3.connect(self._target, isolation_level=None,
                                           check_same_thread=False,
                                           uri=isinstance(self._target, str))
                self._db.execute("PRAGMA synchronous=NORMAL")
            # Again while commits came during the copy (at most _PASSES times): the WAL starts
            # afresh only after a copy no commit overtook. Read whole: a statement left
            # unfinished would hold a read lock on the WAL.
            frames = None
            for _ in range(_PASSES):
                self.last = self._db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()[0]
                if self.last[0] or self.last[1] == frames:
                    break
                frames = self.last[1]
            self._failing = False
        except sqlite3.Error as exc:
            (log.debug if self._failing else log.warning)(
                "spendguard: the background checkpoint of the ledger at %s failed (%s); its "
                "writers' own checkpoints still bound its WAL", self._path, exc)
            self._failing = True
            db, self._db = self._db, None
            if db is not None:
                db.close()
        with self._done:
            self.runs += 1
            self._done.notify_all()

    def wait_for_runs(self, runs: int, timeout: float) -> bool:
        """Whether ``runs`` checkpoints have run, waiting up to ``timeout`` seconds for them."""
        with self._done:
            return self._done.wait_for(lambda: self.runs >= runs, timeout)

    def close(self) -> None:
        """Stop the thread (after the checkpoint it may be running) and close its connection;
        a later commit starts a new one (a closed ledger opens new connections when used)."""
        with self._start_lock:
            thread, self._closing = self._thread, True
        if thread is not None and self._pid == os.getpid():
            self._wake.set()
            if thread is not threading.current_thread():
                thread.join(timeout=30)
        with self._start_lock:
            self._thread, self._wake, self._closing = None, threading.Event(), False
