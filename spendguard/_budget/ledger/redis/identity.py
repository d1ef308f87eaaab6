"""A Redis ledger's identity: how a process notices that Redis came back empty or older.

Redis that restarts without its data (no persistence, or RDB before its first snapshot),
a ``FLUSHALL``, a restore from an old backup or a failover to a replica that had not caught
up would otherwise read as a ledger with less spent — a silent reset of every budget. So the
ledger carries an identity, in its ``meta`` hash:

- ``generation`` — 32 random hex digits, stamped when the ledger is first used (or
  reseeded), never changed after;
- ``reseeded`` — when and from what ``spendguard ledger reseed`` rebuilt it, if it did;
- and its sequence: the id of the last entry in its append-only ``events`` stream
  (``<ms>-<n>``, which only grows while the data lives).

Every connection this process opens to the ledger's server (the first, a reconnect after a
restart, the new primary after a failover) reads them before its first command
(:meth:`Identity.check`) and compares them with what this process has seen before, and what
this machine remembers on disk from earlier processes: a marker per ledger in
``<data folder>/redis-ledgers/``, named by a digest of the URL without its password. A
ledger without a generation where one was seen, one of another generation (unless marked
``reseeded``: rebuilt on purpose), or one whose sequence is older than one seen is refused
with :class:`LedgerReset`, naming the cause and the fix; so is a reservation, an import, or a
read that finds nothing, when the generation is gone from under a live connection (a flush).
Until the ledger is restored or reseeded, reservations are refused (or, with ``fail_open``,
spend the local allowance) and settles are kept in this process — never a silent $0.

The sequence a process has seen is the event id of its own latest settle (returned by the
settle script), or the ledger's last event at its first connection; a new process starts
from the marker, written at each connection and at close. So a failover to a replica that
had not received a settle this process made is refused; one that lost only reservations is
not (their settles are still recorded, as calls whose reservation Redis lost).

What it cannot see: a machine that never used the ledger has no memory of it, so the first
process there accepts an empty Redis as new (any process that knew the old generation then
refuses the new one); and settles made by other processes are compared only by those
processes. The remedy for a failover that loses settles is ``?wait_replicas=``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from spendguard._budget.ledger.paths import home_dir
from spendguard._budget.ledger.redis.options import RedisOptions
from spendguard._core.errors import LedgerReset

__all__ = ["MARKER_FOLDER", "Identity", "Seen", "identity_key", "marker_path", "new_generation"]

log = logging.getLogger("spendguard.ledger")

MARKER_FOLDER = "redis-ledgers"
_NO_EVENTS = (0, 0)
# What this process has seen of each ledger, shared by every session on it.
_SEEN: dict[str, Seen] = {}
_SEEN_LOCK = threading.Lock()


@dataclass(frozen=True, slots=True)
class Seen:
    """A ledger's generation and the last event id (``(ms, n)``) seen in it."""

    generation: str
    sequence: tuple[int, int]


def new_generation() -> str:
    return os.urandom(16).hex()


def identity_key(options: RedisOptions) -> str:
    """What names one ledger, without secrets: where it is, its database and its prefix."""
    nodes = ",".join(f"{host}:{port}" for host, port in options.nodes)
    return f"{options.topology} {nodes} {options.service or ''} {options.db} {options.prefix}"


def marker_path(options: RedisOptions) -> Path:
    """This machine's marker of the ledger, in the data folder (read at call time)."""
    digest = hashlib.sha256(identity_key(options).encode()).hexdigest()[:32]
    return home_dir() / MARKER_FOLDER / f"{digest}.json"


def _sequence(text: str | None) -> tuple[int, int]:
    if not text:
        return _NO_EVENTS
    ms, _, n = text.partition("-")
    return int(ms), int(n or 0)


def _text(sequence: tuple[int, int]) -> str:
    return f"{sequence[0]}-{sequence[1]}"


class Identity:
    """Checks each new connection to one ledger against what was seen of it before."""

    def __init__(self, options: RedisOptions, prefix: str) -> None:
        self.options = options
        self._meta = f"{prefix}meta"
        self._events = f"{prefix}events"
        self._marker = marker_path(options)
        # What this process saw is kept per marker: per ledger and per data folder.
        self.key = str(self._marker)
        self._loaded = False

    # -- what was seen ----------------------------------------------------------------------

    def seen(self) -> Seen | None:
        """What this process, or an earlier one on this machine, saw of the ledger."""
        with _SEEN_LOCK:
            if not self._loaded:
                self._loaded = True
                remembered = self._read_marker()
                if remembered is not None and self.key not in _SEEN:
                    _SEEN[self.key] = remembered
            return _SEEN.get(self.key)

    def saw(self, sequence_text: str) -> None:
        """A settle's event id: the sequence this process has now seen (in memory; the
        marker on disk is written at connections and at close)."""
        sequence = _sequence(sequence_text)
        with _SEEN_LOCK:
            before = _SEEN.get(self.key)
            if before is not None and sequence > before.sequence:
                _SEEN[self.key] = Seen(before.generation, sequence)

    def save(self) -> None:
        """Write what this process saw to the marker (at close)."""
        with _SEEN_LOCK:
            seen = _SEEN.get(self.key)
        if seen is not None:
            self._write_marker(seen)

    def _remember(self, seen: Seen) -> None:
        with _SEEN_LOCK:
            before = _SEEN.get(self.key)
            if before == seen:
                return
            _SEEN[self.key] = seen
        self._write_marker(seen)

    def forget(self) -> None:
        """Drop what this process and machine remember (after a deliberate reseed)."""
        with _SEEN_LOCK:
            _SEEN.pop(self.key, None)
            self._loaded = True
        try:
            self._marker.unlink(missing_ok=True)
        except OSError as exc:
            log.debug("spendguard: cannot remove %s: %s", self._marker, exc)

    def _read_marker(self) -> Seen | None:
        try:
            data = json.loads(self._marker.read_text(encoding="utf-8"))
            return Seen(str(data["generation"]), _sequence(str(data["sequence"])))
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.warning("spendguard: ignoring the unreadable ledger marker %s: %s",
                        self._marker, exc)
            return None

    def _write_marker(self, seen: Seen) -> None:
        """Best effort: a read-only data folder costs the check across processes only."""
        data = {"ledger": self.options.url, "generation": seen.generation,
                "sequence": _text(seen.sequence),
                "seen_at": datetime.now(UTC).isoformat(timespec="seconds")}
        try:
            self._marker.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            temporary = self._marker.with_suffix(f".{os.getpid()}.{threading.get_ident()}")
            descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(descriptor, "w", encoding="utf-8") as out:
                json.dump(data, out)
            os.replace(temporary, self._marker)
        except OSError as exc:
            log.debug("spendguard: cannot write the ledger marker %s: %s", self._marker, exc)

    # -- the check ----------------------------------------------------------------------------

    def check(self, connection: Any, moved: tuple[type[BaseException], ...]) -> None:
        """Read the ledger's identity on a fresh ``connection`` and compare; raises
        :class:`LedgerReset`. A cluster node that does not hold the ledger's slot answers
        with one of ``moved``: it is not the ledger, so there is nothing to check."""
        try:
            generation, reseeded, sequence = self._read(connection)
        except moved:
            return
        seen = self.seen()
        if generation is None:
            if seen is not None:
                raise self.reset("is empty", seen)
            generation = self._stamp(connection)
        elif seen is not None and generation != seen.generation:
            if not reseeded:
                raise self.reset(f"holds another ledger (generation {generation[:8]})", seen)
            log.warning("spendguard: Redis ledger %s was reseeded (%s); carrying on from it",
                        self.options.url, reseeded)
        elif seen is not None and sequence < seen.sequence:
            raise self.reset(f"is older than this process saw (its last event "
                             f"{_text(sequence)}, seen {_text(seen.sequence)})", seen)
        # Within a generation, the sequence seen grows only with this process's settles:
        # what the primary holds at a connection may not have reached its replicas yet.
        self._remember(seen if seen is not None and generation == seen.generation
                       else Seen(generation, sequence))

    def _read(self, connection: Any) -> tuple[str | None, str, tuple[int, int]]:
        connection.send_command("HMGET", self._meta, "generation", "reseeded",
                                check_health=False)
        generation, reseeded = connection.read_response()
        connection.send_command("XREVRANGE", self._events, "+", "-", "COUNT", "1",
                                check_health=False)
        last = connection.read_response()
        return (_str(generation), _str(reseeded) or "",
                _sequence(_str(last[0][0]) if last else None))

    def _stamp(self, connection: Any) -> str:
        """A ledger used for the first time (or written before identities): its generation."""
        connection.send_command("HSETNX", self._meta, "generation", new_generation(),
                                check_health=False)
        connection.read_response()
        connection.send_command("HGET", self._meta, "generation", check_health=False)
        stamped = _str(connection.read_response())
        if stamped is None:  # pragma: no cover - HSETNX just wrote it
            raise LedgerReset(f"Redis ledger {self.options.url} lost its generation as it was "
                              f"written", url=self.options.url)
        return stamped

    def reset(self, what: str, seen: Seen | None) -> LedgerReset:
        """The error for a ledger that ``what`` (is empty, is older...) than ``seen``."""
        known = ("" if seen is None else
                 f" (seen before by this process or machine as generation "
                 f"{seen.generation[:8]}"
                 f"{'' if seen.sequence == _NO_EVENTS else f' up to event {_text(seen.sequence)}'}"
                 f"; marker {self._marker})")
        url = self.options.url
        return LedgerReset(
            f"Redis ledger {self.options.url} {what}{known}: Redis lost data — restarted "
            f"without persistence, flushed, restored from an old backup, or failed over to a "
            f"replica that had not caught up. Calls are refused rather than counted from a "
            f"lower total. Restore Redis from its backup (RDB/AOF), or rebuild it from a "
            f"durable copy with 'spendguard ledger reseed --ledger {url} --from COPY' (COPY: "
            f"the SQLite or PostgreSQL copy made by 'spendguard ledger drain'); to start "
            f"from $0 on purpose: 'spendguard ledger reseed --ledger {url} --empty'",
            url=self.options.url)


def _str(value: Any) -> str | None:
    if value is None:
        return None
    return value.decode() if isinstance(value, bytes) else str(value)
