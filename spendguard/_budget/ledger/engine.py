"""The accounting rules every transactional ledger shares, over a small storage interface.

SQLite and the in-memory ledger differ only in how they store rows and how they make a
transaction; the rules — check every limit and hold the worst case in one transaction, settle,
release, recover abandoned reservations, report warning levels once, replay events to verify —
live here once, so both backends behave the same by construction.
"""

from __future__ import annotations

import functools
import os
import socket
import time as _clock
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, fields, replace
from datetime import datetime
from decimal import Decimal
from operator import attrgetter
from typing import Protocol

from spendguard._budget.ledger.base import (
    CallInfo,
    Crossing,
    ScopeClaim,
    Settlement,
    SpendRecord,
    Totals,
)
from spendguard._budget.ledger.limits import merge_claims, refusal, sum_totals
from spendguard._budget.ledger.replay import CallBooks, replay
from spendguard._core.errors import LedgerError
from spendguard._core.money import ZERO
from spendguard._core.periods import held_key, warning_key, window_keys

__all__ = ["OPEN", "Call", "CallRow", "Event", "TransactionalLedger", "Tx", "add_to_totals",
           "event_changes", "merge_claims", "sum_totals", "window_totals"]

OPEN = "open"
_HOST = socket.gethostname()
_SCOPE = attrgetter("scope")
_PERIOD_KEY = attrgetter("period_key")
_LIMIT = attrgetter("limit_usd")


def _new_call_id() -> str:
    """A call's id: 32 hex digits, the time in microseconds (13) then 76 random bits (19).

    Unique in practice (ids made in the same microsecond differ in 76 random bits) and ordered
    by when they were made, so a ledger's index on ids grows at its end, on a page already in
    memory, instead of taking each new id on a random page of it that must be read first.
    """
    return f"{_clock.time_ns() // 1000:013x}{os.urandom(10).hex()[:19]}"


@dataclass(frozen=True, slots=True)
class CallRow:
    """A call as stored: its eventual record, the claims it holds, and who owns it."""

    record: SpendRecord
    claims: tuple[ScopeClaim, ...]
    state: str  # open | settled | released | recovered | adjustment
    expires_at: datetime | None = None
    owner_pid: int | None = None
    owner_host: str | None = None


class Call:
    """A call this ledger reserved: one object from its reserve to its close.

    Reserve builds it; settle, release or recovery set its closing fields on it (the state
    and what a close changes: the storage writes only those), and its :class:`SpendRecord`
    is built only when it is read. Every open row a storage hands back is one of these (read
    from a file, it is made from the stored row); closed rows read back, imported ones and
    corrections are :class:`CallRow`.
    """

    __slots__ = ("actual_usd", "claims", "estimated_usd", "expires_at", "id", "info",
                 "latency_s", "limits_usd", "note", "owner_host", "owner_pid", "period_keys",
                 "request_id", "scopes", "state", "status", "table_version", "tags", "time",
                 "tokens", "usage_estimated")

    def __init__(self, call_id: str, time: datetime, claims: tuple[ScopeClaim, ...],
                 tags: Mapping[str, str], info: CallInfo, estimated_usd: Decimal,
                 expires_at: datetime | None, owner_pid: int | None,
                 owner_host: str | None) -> None:
        self.id = call_id
        self.time = time
        self.claims = claims
        # Read by attrgetter: no Python frame per field, as a comprehension or generator makes.
        self.scopes: tuple[str, ...] = tuple(map(_SCOPE, claims))
        self.period_keys: tuple[str, ...] = tuple(map(_PERIOD_KEY, claims))
        self.limits_usd: tuple[Decimal | None, ...] = tuple(map(_LIMIT, claims))
        self.tags = tags
        # Only the fields a record keeps are read from it (never its end user).
        self.info = info
        self.estimated_usd = estimated_usd
        self.state = OPEN
        self.expires_at = expires_at
        self.owner_pid = owner_pid
        self.owner_host = owner_host
        # What a close changes, as they are while the call is open.
        self.actual_usd = ZERO
        self.tokens: Mapping[str, int] = {}
        self.usage_estimated = False
        self.table_version = ""
        self.latency_s: float | None = None
        self.request_id = info.request_id
        self.status = OPEN
        self.note: str | None = None

    @classmethod
    def reopened(cls, row: CallRow) -> Call:
        """The open call a stored row describes (its record's fields, exactly)."""
        r = row.record
        info = CallInfo(**dict(zip(_INFO_NAMES, _INFO_OF_RECORD(r), strict=True)))
        call = cls(r.id, r.time, row.claims, r.tags, info, r.estimated_usd, row.expires_at,
                   row.owner_pid, row.owner_host)
        call.state = row.state
        for name, value in zip(_CALL_NAMES, _CALL_OF_RECORD(r), strict=True):
            setattr(call, name, value)
        return call

    @property
    def record(self) -> SpendRecord:
        """The call's record as it stands (built on each read: reads are rare, calls not)."""
        return SpendRecord(*_RECORD_OF_CALL(self))

    def row(self) -> CallRow:
        """The call as a stored row, fixed as it is now."""
        return CallRow(self.record, self.claims, self.state, self.expires_at, self.owner_pid,
                       self.owner_host)


# Where each field of a record is on a Call: its own, or the CallInfo it was made with.
_RECORD_NAMES = tuple(f.name for f in fields(SpendRecord))
_RECORD_OF_CALL = attrgetter(*(name if name in Call.__slots__ else f"info.{name}"
                               for name in _RECORD_NAMES))
_INFO_NAMES = tuple(f.name for f in fields(CallInfo) if f.name in _RECORD_NAMES)
_INFO_OF_RECORD = attrgetter(*_INFO_NAMES)
# What a reopened call takes from its record beyond its CallInfo and constructor.
_CALL_NAMES = tuple(name for name in _RECORD_NAMES
                    if name in Call.__slots__ and name not in (
                        "id", "time", "claims", "tags", "estimated_usd"))
_CALL_OF_RECORD = attrgetter(*_CALL_NAMES)


@dataclass(frozen=True, slots=True)
class Event:
    """One line of the append-only log."""

    call_id: str
    kind: str  # reserve | settle | release | recover | adjust
    time: datetime
    amount_usd: Decimal
    detail: str | None = None


class Tx(Protocol):
    """The storage operations one transaction offers the accounting rules."""

    def totals(self, scope: str, period_key: str) -> Totals: ...
    def totals_sum(self, scope: str, period_keys: Sequence[str]) -> Totals: ...
    def put_totals(self, scope: str, period_key: str, totals: Totals) -> None: ...
    def change_totals(self, scope: str, period_key: str, spent_usd: Decimal,
                      reserved_usd: Decimal, calls: int) -> Totals:
        """Add to a period's totals (made if new); the totals after (:func:`add_to_totals`
        for a storage that has no single step for it)."""
    def hold(self, claims: Sequence[ScopeClaim], amount_usd: Decimal,
             now: datetime) -> tuple[list[Totals], bool] | None:
        """Hold ``amount_usd`` and count one call in each claim's totals (calendar periods,
        each its own held key), in one step each: the totals before, and whether any open
        call had expired by ``now``. None where the storage has no such step: the rules then
        recover, read, check and write one by one."""
    def insert_call(self, row: Call | CallRow) -> None: ...
    def get_call(self, call_id: str) -> Call | CallRow | None: ...
    def update_call(self, call: Call) -> None:
        """Store an open call's close: its state and closing fields, set on it."""
    def append_event(self, call_id: str, kind: str, time: datetime, amount_usd: Decimal,
                     detail: str | None = None) -> None: ...
    def expired_open_calls(self, now: datetime) -> list[Call]: ...
    def claim_crossing(self, scope: str, period_key: str, warn_usd: Decimal,
                       time: datetime) -> bool: ...
    def all_events(self) -> Iterator[Event]: ...
    def call_books(self, call_ids: Iterable[str]) -> Mapping[str, CallBooks]: ...
    def all_totals(self) -> Iterator[tuple[str, str, Totals]]: ...
    def closed_call_count(self) -> int: ...
    def closed_calls_without_close(self) -> Iterator[tuple[str, str]]: ...


# A period key's window steps and warning key are pure functions of the key, and a budget uses
# one key for a whole step (a minute of a 1h window): parsed once per key, not once per call.
_window_keys = functools.lru_cache(maxsize=4096)(window_keys)
_warning_key = functools.lru_cache(maxsize=4096)(warning_key)
_held_key = functools.lru_cache(maxsize=4096)(held_key)

TotalsChange = tuple[str, Decimal, Decimal, int]
"""A change to one period key's totals: (period key, spent USD, reserved USD, calls)."""


def event_changes(kind: str, amount_usd: Decimal, worst_usd: Decimal,
                  period_key: str) -> tuple[TotalsChange, ...]:
    """What one logged event did to the totals of one claim's period: the rule that every
    backend writes and ``verify`` replays.

    A reservation is held, with its count, under the claim's held key (the period itself, or
    a rolling window's held key); settling or recovering a call lets that go and charges what
    it cost, and counts it, in the period it was reserved in; a release only lets it go; an
    adjustment charges its amount. In a calendar period both keys are the same one.
    """
    held = _held_key(period_key)
    if kind == "reserve":
        return ((held, ZERO, amount_usd, 1),)
    if kind == "adjust":
        return ((period_key, amount_usd, ZERO, 0),)
    counted = 0 if kind == "release" else 1
    spent = ZERO if kind == "release" else amount_usd
    if held == period_key:
        return ((period_key, spent, -worst_usd, counted - 1),)
    return ((held, ZERO, -worst_usd, -1), (period_key, spent, ZERO, counted))


def add_to_totals(tx: Tx, scope: str, period_key: str, spent_usd: Decimal,
                  reserved_usd: Decimal, calls: int) -> Totals:
    """``Tx.change_totals`` as a read and a write."""
    old = tx.totals(scope, period_key)
    new = Totals(old.spent_usd + spent_usd, old.reserved_usd + reserved_usd, old.calls + calls)
    tx.put_totals(scope, period_key, new)
    return new


@functools.lru_cache(maxsize=4096)
def _calendar(period_key: str) -> bool:
    """A period whose open calls are held in its own totals and checked against them alone
    (not a rolling window's steps)."""
    return _held_key(period_key) == period_key and len(_window_keys(period_key)) == 1


def window_totals(tx: Tx, claim: ScopeClaim) -> Totals:
    """What a limit is checked against: the period's totals, or a rolling window's sum."""
    keys = _window_keys(claim.period_key)
    if len(keys) == 1:
        return tx.totals(claim.scope, claim.period_key)
    return tx.totals_sum(claim.scope, keys)


def _without(totals: Totals, held_usd: Decimal) -> Totals:
    """Totals as they were before one call holding ``held_usd`` was added to them."""
    return Totals(totals.spent_usd, totals.reserved_usd - held_usd, totals.calls - 1)


class TransactionalLedger(ABC):
    """A ledger whose storage can run the accounting rules inside one transaction."""

    url: str

    @abstractmethod
    def _transaction(self) -> AbstractContextManager[Tx]:
        """A write transaction: all of its effects happen, or none do."""

    def _snapshot(self) -> AbstractContextManager[Tx]:
        """A transaction that only reads, seeing one consistent state (the write one if the
        storage has nothing lighter)."""
        return self._transaction()

    def reserve(self, claims: Sequence[ScopeClaim], amount_usd: Decimal, call: CallInfo, *,
                time: datetime, expires_at: datetime, tags: Mapping[str, str]) -> str:
        merged = merge_claims(claims)
        call_id = _new_call_id()
        row = Call(call_id, time, merged, dict(tags), call, amount_usd, expires_at, os.getpid(),
                   _HOST)
        calendar = True  # a loop, not all() over a generator: no call per claim
        for claim in merged:
            if not _calendar(claim.period_key):
                calendar = False
                break
        with self._transaction() as tx:
            held = tx.hold(merged, amount_usd, time) if calendar else None
            if held is None:
                # Abandoned reservations are charged first, so they can't hold a budget forever.
                self._recover(tx, time)
                current = [window_totals(tx, c) for c in merged]
            else:
                # Held already, checked below: a refusal rolls the hold back with the rest.
                current, expired = held
                if expired:
                    # Charged now, before the check, as above; a recovery moves a call's worst
                    # case from held to spent, so the check's answer is the same, and its
                    # message shows the totals after it.
                    self._recover(tx, time)
                    current = [_without(tx.totals(c.scope, c.period_key), amount_usd)
                               for c in merged]
            refused = refusal(merged, current, amount_usd)
            if refused is not None:
                raise refused
            tx.insert_call(row)
            tx.append_event(call_id, "reserve", time, amount_usd)
            if held is not None:
                return call_id
            for claim, checked in zip(merged, current, strict=True):
                # An open call is held apart from a rolling window's steps (its held key,
                # summed by every check of the window): it counts until it closes.
                key = _held_key(claim.period_key)
                held_now = checked if key == claim.period_key else tx.totals(claim.scope, key)
                tx.put_totals(claim.scope, key,
                              Totals(held_now.spent_usd, held_now.reserved_usd + amount_usd,
                                     held_now.calls + 1))
        return call_id

    def settle(self, reservation_id: str, settlement: Settlement) -> list[Crossing]:
        with self._transaction() as tx:
            row = tx.get_call(reservation_id)  # as _get reads it, in one call fewer
            if row is None:
                raise LedgerError(f"no reservation {reservation_id} in ledger {self.url}")
            if row.state == "recovered":
                # The owner outlived the expiry: keep the recovered charge, correct it to the truth.
                self._correct(tx, row, settlement.actual_usd - row.record.estimated_usd,
                              settlement, "late settle after recovery")
                return self._crossings(tx, row.claims, settlement.time)
            if row.state != OPEN:
                raise LedgerError(f"reservation {reservation_id} is already {row.state}; a call "
                                  f"is settled or released exactly once")
            assert isinstance(row, Call)  # every open row is
            row.state = "settled"
            row.actual_usd = settlement.actual_usd
            row.tokens = dict(settlement.tokens)
            row.usage_estimated = settlement.usage_estimated
            row.table_version = settlement.table_version
            row.latency_s = settlement.latency_s
            row.request_id = settlement.request_id or row.request_id
            row.status = settlement.status
            row.note = settlement.note or row.note
            tx.update_call(row)
            tx.append_event(reservation_id, "settle", settlement.time, settlement.actual_usd)
            self._move(tx, row, "settle", settlement.actual_usd)
            return self._crossings(tx, row.claims, settlement.time)

    def release(self, reservation_id: str, *, reason: str, time: datetime) -> bool:
        with self._transaction() as tx:
            row = self._get(tx, reservation_id)
            if row.state == "recovered":
                nothing = Settlement(time, ZERO, {}, False, "", 0.0, None, "released")
                self._correct(tx, row, -row.record.estimated_usd, nothing,
                              f"late release after recovery: {reason}")
                return True
            if row.state != OPEN:
                return False
            assert isinstance(row, Call)  # every open row is
            row.state = row.status = "released"
            row.note = reason
            tx.update_call(row)
            tx.append_event(reservation_id, "release", time, ZERO, reason)
            self._move(tx, row, "release", ZERO)  # not billed: not counted
            return True

    def adjust(self, claims: Sequence[ScopeClaim], amount_usd: Decimal, *, time: datetime,
               note: str, tags: Mapping[str, str] | None = None, provider: str = "",
               model: str = "") -> str:
        merged = merge_claims(claims)
        call_id = _new_call_id()
        record = SpendRecord(
            id=call_id, time=time, scopes=tuple(c.scope for c in merged), tags=dict(tags or {}),
            provider=provider, model=model, endpoint="", tokens={}, estimated_usd=ZERO,
            actual_usd=amount_usd, usage_estimated=False, table_version="", latency_s=None,
            request_id=None, attempt=0, status="adjustment", note=note,
            period_keys=tuple(c.period_key for c in merged),
            limits_usd=tuple(c.limit_usd for c in merged))
        with self._transaction() as tx:
            self._insert_adjustment(tx, CallRow(record, merged, "adjustment"), time)
        return call_id

    def claim_alert(self, scope: str, period_key: str, threshold: str, time: datetime) -> bool:
        """Record that ``threshold``'s alert for ``scope`` in ``period_key`` is being sent;
        False if some process already did (kept beside the warning levels reached)."""
        with self._transaction() as tx:
            return tx.claim_crossing(scope, f"alert:{threshold}:{period_key}", ZERO, time)

    def recover_expired(self, now: datetime) -> list[str]:
        with self._transaction() as tx:
            return self._recover(tx, now)

    def verify(self, *, progress: Callable[[int], object] | None = None) -> list[str]:
        # Replayed a page of events at a time (see replay.py): memory does not grow with the
        # ledger. ``progress`` hears the events replayed so far.
        with self._snapshot() as tx:
            return replay(tx, event_changes, progress)

    # -- the rules, inside a transaction ------------------------------------------------

    def _get(self, tx: Tx, reservation_id: str) -> Call | CallRow:
        row = tx.get_call(reservation_id)
        if row is None:
            raise LedgerError(f"no reservation {reservation_id} in ledger {self.url}")
        return row

    def _move(self, tx: Tx, row: Call, kind: str, spent_usd: Decimal) -> None:
        """Close a call (``kind``: settle, release or recover) in its claims' totals: its worst
        case no longer held, what it cost charged where it was reserved."""
        for claim in row.claims:
            for key, spent, held, counted in event_changes(kind, spent_usd, row.estimated_usd,
                                                           claim.period_key):
                tx.change_totals(claim.scope, key, spent, held, counted)

    def _recover(self, tx: Tx, now: datetime) -> list[str]:
        recovered = []
        for row in tx.expired_open_calls(now):
            worst = row.estimated_usd
            note = (f"recovered: reservation of pid {row.owner_pid} on {row.owner_host} expired "
                    f"at {row.expires_at} without being settled; charged its worst case")
            row.state = row.status = "recovered"
            row.actual_usd, row.usage_estimated, row.note = worst, True, note
            tx.update_call(row)
            tx.append_event(row.id, "recover", now, worst, note)
            self._move(tx, row, "recover", worst)
            recovered.append(row.id)
        return recovered

    def _correct(self, tx: Tx, row: Call | CallRow, amount_usd: Decimal, settlement: Settlement,
                 note: str) -> None:
        opened = row.record
        record = replace(
            opened, id=_new_call_id(), time=settlement.time, tokens=dict(settlement.tokens),
            estimated_usd=ZERO, actual_usd=amount_usd,
            usage_estimated=settlement.usage_estimated, table_version=settlement.table_version,
            latency_s=settlement.latency_s,
            request_id=settlement.request_id or opened.request_id, status="adjustment",
            note=f"{note} of call {opened.id} ({settlement.status})")
        self._insert_adjustment(tx, CallRow(record, row.claims, "adjustment"), settlement.time)

    def _insert_adjustment(self, tx: Tx, row: CallRow, time: datetime) -> None:
        tx.insert_call(row)
        tx.append_event(row.record.id, "adjust", time, row.record.actual_usd, row.record.note)
        for claim in row.claims:
            tx.change_totals(claim.scope, claim.period_key, row.record.actual_usd, ZERO, 0)

    def _crossings(self, tx: Tx, claims: Iterable[ScopeClaim], time: datetime) -> list[Crossing]:
        """Warning levels reached and not yet reported by any process sharing this ledger."""
        found = []
        for claim in claims:
            if claim.warn_usd is None or claim.limit_usd is None:
                continue
            # A calendar period's own totals (every settle of one comes here), or the window's.
            spent = (tx.totals(claim.scope, claim.period_key) if _calendar(claim.period_key)
                     else window_totals(tx, claim)).spent_usd
            # A rolling window warns at most once per window length, not once per step.
            key = _warning_key(claim.period_key)
            if spent >= claim.warn_usd and tx.claim_crossing(claim.scope, key, claim.warn_usd,
                                                             time):
                found.append(Crossing(claim.scope, key, spent, claim.limit_usd,
                                      claim.warn_usd))
        return found

