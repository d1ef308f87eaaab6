"""Fail-open for the Redis ledger: calls made while Redis is unreachable, kept in this process.

Only with ``?fail_open=1&local_cap_usd=N``. While Redis cannot be reached, reservations go to
an in-memory ledger under the same rules, with one more scope charged on every call: this
process's allowance, ``N`` USD. A call that does not fit the allowance is refused with
:class:`LedgerUnavailable`; one that does not fit a budget *as far as this process knows* (its
own local calls only — the shared totals are out of reach) with :class:`BudgetExceeded`.
Once Redis answers again, every local call that has ended is replayed into it (idempotently,
by id) and the allowance is free again. Local calls are lost if the process dies before Redis
comes back: at most ``N`` USD per process goes unrecorded. That is the price of failing open.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from decimal import Decimal

from spendguard._budget.ledger.base import CallInfo, ScopeClaim, Settlement, Totals
from spendguard._budget.ledger.engine import OPEN, CallRow
from spendguard._budget.ledger.memory import MemoryLedger
from spendguard._core.errors import BudgetExceeded, LedgerUnavailable
from spendguard._core.money import ZERO, format_usd

__all__ = ["ALLOWANCE_SCOPE", "LocalFallback"]

ALLOWANCE_SCOPE = "spendguard:fail-open-allowance"
_ALLOWANCE_PERIOD = "local"


class LocalFallback:
    """This process's calls while Redis is down: capped at ``cap_usd``, replayed when it is up."""

    def __init__(self, cap_usd: Decimal, url: str) -> None:
        self.cap_usd = cap_usd
        self.url = url
        self._lock = threading.Lock()
        self._ledger = MemoryLedger("memory://")
        self._replayed: set[str] = set()

    def owns(self, reservation_id: str) -> bool:
        """Whether ``reservation_id`` was reserved here (and not yet replayed and forgotten)."""
        with self._lock, self._ledger._transaction() as store:
            return store.get_call(reservation_id) is not None

    def reserve(self, claims: Sequence[ScopeClaim], amount_usd: Decimal, call: CallInfo, *,
                time: datetime, expires_at: datetime, tags: Mapping[str, str]) -> str:
        allowance = ScopeClaim(ALLOWANCE_SCOPE, _ALLOWANCE_PERIOD, self.cap_usd)
        try:
            with self._lock:
                return self._ledger.reserve([*claims, allowance], amount_usd, call, time=time,
                                            expires_at=expires_at, tags=tags)
        except BudgetExceeded as exc:
            if exc.scope != ALLOWANCE_SCOPE:
                raise
            raise LedgerUnavailable(
                f"Redis ledger {self.url} is unreachable and this process's fail-open "
                f"allowance is used up: calls in flight or not yet replayed hold "
                f"{format_usd(exc.spent_usd + exc.reserved_usd)} of local_cap_usd="
                f"{format_usd(self.cap_usd)}, and this call could cost "
                f"{format_usd(amount_usd)}; the call is refused", url=self.url) from exc

    def settle(self, reservation_id: str, settlement: Settlement) -> None:
        # Warnings would compare against this process's spending only: they are reported by
        # Redis on the first settle after the replay instead.
        with self._lock:
            self._ledger.settle(reservation_id, settlement)

    def release(self, reservation_id: str, *, reason: str, time: datetime) -> bool:
        with self._lock:
            return self._ledger.release(reservation_id, reason=reason, time=time)

    def recover_expired(self, now: datetime) -> list[str]:
        with self._lock:
            return self._ledger.recover_expired(now)

    def unreplayed_totals(self, scope: str, period_key: str) -> Totals:
        """What local calls not yet in Redis add to a scope: spent, and held by open calls."""
        spent = reserved = ZERO
        for row in self._rows():
            if row.record.id in self._replayed or (scope, period_key) not in {
                    (c.scope, c.period_key) for c in row.claims}:
                continue
            if row.state == OPEN:
                reserved += row.record.estimated_usd
            else:
                spent += row.record.actual_usd
        return Totals(spent, reserved)

    def has_unreplayed(self) -> bool:
        """Whether any local call has not been replayed into Redis yet (cheap when idle)."""
        with self._lock:
            return len(self._ledger._store.calls) > len(self._replayed)

    def to_replay(self) -> list[CallRow]:
        """Local calls that have ended and are not in Redis yet, oldest first, without the
        allowance scope (it means nothing in Redis)."""
        rows = [row for row in self._rows()
                if row.state != OPEN and row.record.id not in self._replayed]
        rows.sort(key=lambda row: (row.record.time, row.record.id))
        return [_without_allowance(row) for row in rows]

    def replayed(self, reservation_id: str) -> None:
        """Mark a call as in Redis; once all are, start afresh (the allowance is free again)."""
        with self._lock:
            self._replayed.add(reservation_id)
            calls = self._ledger._store.calls
            if all(call_id in self._replayed for call_id in calls):
                self._ledger = MemoryLedger("memory://")
                self._replayed = set()

    def _rows(self) -> list[CallRow]:
        with self._lock, self._ledger._transaction() as store:
            return list(store.all_calls())


def _without_allowance(row: CallRow) -> CallRow:
    keep = [i for i, scope in enumerate(row.record.scopes) if scope != ALLOWANCE_SCOPE]
    record = replace(
        row.record, scopes=tuple(row.record.scopes[i] for i in keep),
        period_keys=tuple(row.record.period_keys[i] for i in keep),
        limits_usd=tuple(row.record.limits_usd[i] for i in keep)
        if len(row.record.limits_usd) == len(row.record.scopes) else row.record.limits_usd)
    return replace(row, record=record,
                   claims=tuple(c for c in row.claims if c.scope != ALLOWANCE_SCOPE))
