"""The in-memory ledger (``memory://``): the same rules as SQLite, kept in this process only.

For tests and throwaway scripts. One lock serialises transactions, so it is safe across
threads and asyncio tasks; nothing survives the process.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal

from spendguard._budget.ledger.base import ScopeClaim, SpendRecord, Totals
from spendguard._budget.ledger.engine import (
    OPEN,
    Call,
    CallRow,
    Event,
    TransactionalLedger,
)
from spendguard._budget.ledger.filters import record_matches
from spendguard._budget.ledger.limits import sum_totals
from spendguard._budget.ledger.replay import CallBooks

__all__ = ["MemoryLedger"]


_NOTHING = Totals()  # frozen: one shared "no totals yet" instead of a new one per read


@dataclass
class _Store:
    calls: dict[str, Call | CallRow] = field(default_factory=dict)
    open_calls: dict[str, Call] = field(default_factory=dict)  # so expiry needn't scan all
    # The log's lines as tuples, made into events when read (once per verify, not per call).
    events: list[tuple[str, str, datetime, Decimal, str | None]] = field(default_factory=list)
    totals_by_key: dict[tuple[str, str], Totals] = field(default_factory=dict)
    crossings: set[tuple[str, str, Decimal]] = field(default_factory=set)
    # The claims and amount the transaction in progress holds: let go if it fails.
    held: tuple[Sequence[ScopeClaim], Decimal] | None = None

    def totals(self, scope: str, period_key: str) -> Totals:
        return self.totals_by_key.get((scope, period_key), _NOTHING)

    def totals_sum(self, scope: str, period_keys: Sequence[str]) -> Totals:
        return sum_totals(self.totals(scope, key) for key in period_keys)

    def put_totals(self, scope: str, period_key: str, totals: Totals) -> None:
        self.totals_by_key[(scope, period_key)] = totals

    def change_totals(self, scope: str, period_key: str, spent_usd: Decimal,
                      reserved_usd: Decimal, calls: int) -> Totals:
        # add_to_totals' read and write, on the dict itself (every settle comes here).
        key = (scope, period_key)
        old = self.totals_by_key.get(key, _NOTHING)
        new = self.totals_by_key[key] = Totals(old.spent_usd + spent_usd,
                                               old.reserved_usd + reserved_usd,
                                               old.calls + calls)
        return new

    def hold(self, claims: Sequence[ScopeClaim], amount_usd: Decimal,
             now: datetime) -> tuple[list[Totals], bool] | None:
        # In place, as the rules would read and write them one by one; a refusal raised in
        # the same transaction lets the hold go again (_Locked.__exit__).
        totals_by_key = self.totals_by_key
        before: list[Totals] = []
        for claim in claims:
            key = (claim.scope, claim.period_key)
            old = _NOTHING
            if key in totals_by_key:  # membership, then indexing: no call for the look-up
                old = totals_by_key[key]
            totals_by_key[key] = Totals(old.spent_usd, old.reserved_usd + amount_usd,
                                        old.calls + 1)
            before += (old,)  # no call, where append is one
        self.held = (claims, amount_usd)
        if not self.open_calls:  # none in flight (the usual sequential call): none expired
            return before, False
        for row in self.open_calls.values():
            if row.expires_at is not None and row.expires_at <= now:
                return before, True
        return before, False

    def let_go(self, claims: Sequence[ScopeClaim], amount_usd: Decimal) -> None:
        """Undo :meth:`hold` (whatever a recovery changed in between stays)."""
        for claim in claims:
            key = (claim.scope, claim.period_key)
            now = self.totals_by_key[key]
            self.totals_by_key[key] = Totals(now.spent_usd, now.reserved_usd - amount_usd,
                                             now.calls - 1)

    def insert_call(self, row: Call | CallRow) -> None:
        if row.__class__ is not Call and not isinstance(row, Call):
            if row.state != OPEN:
                self.calls[row.record.id] = row
                return
            row = Call.reopened(row)  # an open row is kept as the call its close updates
        self.calls[row.id] = row
        if row.state == OPEN:
            self.open_calls[row.id] = row

    def get_call(self, call_id: str) -> Call | CallRow | None:
        return self.calls.get(call_id)

    def update_call(self, call: Call) -> None:
        # The stored call is this one, closed in place: it only leaves the open ones.
        if call.state != OPEN:
            self.open_calls.pop(call.id, None)

    def append_event(self, call_id: str, kind: str, time: datetime, amount_usd: Decimal,
                     detail: str | None = None) -> None:
        self.events.append((call_id, kind, time, amount_usd, detail))

    def expired_open_calls(self, now: datetime) -> list[Call]:
        return [row for row in self.open_calls.values()
                if row.expires_at is not None and row.expires_at <= now]

    def claim_crossing(self, scope: str, period_key: str, warn_usd: Decimal,
                       time: datetime) -> bool:
        key = (scope, period_key, warn_usd)
        if key in self.crossings:
            return False
        self.crossings.add(key)
        return True

    def all_events(self) -> Iterator[Event]:
        return iter([Event(*line) for line in self.events])

    def call_books(self, call_ids: Iterable[str]) -> dict[str, CallBooks]:
        books = {}
        for call_id in call_ids:
            row = self.calls.get(call_id)
            if row is not None:
                record = row.record
                books[call_id] = CallBooks(tuple(zip(record.scopes, record.period_keys,
                                                     strict=True)),
                                           record.estimated_usd, row.state)
        return books

    def all_calls(self) -> Iterator[CallRow]:
        return iter([row.row() if isinstance(row, Call) else row for row in self.calls.values()])

    def closed_call_count(self) -> int:
        return len(self.calls) - len(self.open_calls)

    def closed_calls_without_close(self) -> Iterator[tuple[str, str]]:
        closed = {call_id for call_id, kind, *_ in self.events if kind != "reserve"}
        return iter([(call_id, row.state) for call_id, row in self.calls.items()
                     if row.state != OPEN and call_id not in closed])

    def all_totals(self) -> Iterator[tuple[str, str, Totals]]:
        return iter([(scope, key, t) for (scope, key), t in self.totals_by_key.items()])


class _Locked(AbstractContextManager[_Store]):
    """The store, under the ledger's lock, for one transaction. A plain class rather than a
    ``@contextmanager`` generator: entered two or three times per guarded call."""

    __slots__ = ("_lock", "_store")

    def __init__(self, lock: threading.RLock, store: _Store) -> None:
        self._lock = lock
        self._store = store

    def __enter__(self) -> _Store:
        self._lock.acquire()
        return self._store

    def __exit__(self, error: type[BaseException] | None, *exc_info: object) -> None:
        store = self._store
        if store.held is not None:  # a reservation's hold: kept, or let go with its failure
            if error is not None:
                store.let_go(*store.held)
            store.held = None
        self._lock.release()


class MemoryLedger(TransactionalLedger):
    """A ledger held in a dict; ``memory://name`` gives the same one throughout a process."""

    def __init__(self, url: str = "memory://") -> None:
        self.url = url
        self._store = _Store()
        self._lock = threading.RLock()
        self._locked = _Locked(self._lock, self._store)  # holds no state of its own

    def _transaction(self) -> _Locked:
        # The rules check everything before they write, so a refusal leaves no partial state.
        return self._locked

    def totals(self, scope: str, period_key: str) -> Totals:
        with self._lock:
            return self._store.totals(scope, period_key)

    def totals_sum(self, scope: str, period_keys: Sequence[str]) -> Totals:
        with self._lock:
            return self._store.totals_sum(scope, period_keys)

    def records(self, *, since: datetime | None = None, until: datetime | None = None,
                scope: str | None = None, tag: str | None = None,
                model: str | None = None) -> Iterator[SpendRecord]:
        with self._lock:
            rows = [row.record for row in self._store.calls.values() if row.state != OPEN]
        rows.sort(key=lambda record: (record.time, record.id))
        return (record for record in rows
                if record_matches(record, since=since, until=until, scope=scope, tag=tag,
                                  model=model))

    def close(self) -> None:
        """Nothing to release: the data lives as long as this object."""

    def __repr__(self) -> str:
        return f"MemoryLedger({self.url!r})"
