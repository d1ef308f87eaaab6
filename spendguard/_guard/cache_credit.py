"""Crediting an explicit cache's unused storage (Gemini's): a shortened TTL or an early delete.

A cache's storage is charged ahead, to the expiry it was given (the provider's adapter keeps
the term: ``release_cache_storage``). When the cache ends sooner (a TTL update
to an earlier expiry, or ``caches.delete``), the storage charged past the new end is credited
back by a negative adjustment record in each budget's ledger (status ``adjustment``, the
provider whose adapter named the cache, the cache's model), so the ledger counts the storage
for the time the cache existed, as Google bills it. The seconds are whole, rounded down: a
credit never exceeds the storage that was not used. Nothing here raises: a credit that
cannot be written is logged, and the ledger stays at the (higher) amount charged.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import TYPE_CHECKING

from spendguard._budget.scopes import collect_budgets
from spendguard._costing.cost import total_usd
from spendguard._costing.prices import CACHE_STORAGE
from spendguard._costing.usage import Usage
from spendguard._providers import adapter_for

if TYPE_CHECKING:
    from spendguard._budget.ledger import Ledger
    from spendguard._budget.ledger.base import ScopeClaim
    from spendguard._guard.metering import Guard

__all__ = ["credit_after_update", "credit_unused_storage"]

log = logging.getLogger("spendguard")


def credit_unused_storage(guard: Guard, name: str, until: datetime | None, *,
                          forget: bool, provider: str) -> None:
    """Credit the storage of cache ``name`` charged past ``until`` (None: now, on the
    budget's clock); ``forget`` when the cache was deleted; ``provider``: whose cache it is
    (the adapter that named it), as the credit's record names it."""
    try:
        budgets = collect_budgets(guard.budget)
        now = budgets[-1].now() if budgets else None
        if now is None:
            return
        released = adapter_for(provider).release_cache_storage(name, until or now,
                                                               forget=forget)
        if released is None or not released[2]:
            return
        model, tokens, seconds = released
        usd = total_usd(guard.table.get(model, now),
                        Usage(tool_requests={CACHE_STORAGE: tokens * seconds}))
        by_ledger: dict[int, tuple[Ledger, list[ScopeClaim]]] = {}
        for budget in budgets:
            by_ledger.setdefault(id(budget.ledger), (budget.ledger, []))[1].append(
                budget.claim(now))
        note = (f"{name}: {seconds:,} s of storage charged ahead and not used "
                f"({'deleted' if forget else 'TTL shortened'}), credited")
        for ledger, claims in by_ledger.values():
            ledger.adjust(claims, -usd, time=now, note=note, provider=provider,
                          model=model)
    except Exception:
        log.warning("spendguard could not credit the unused storage of %s; the ledger keeps "
                    "it charged", name, exc_info=True)


def credit_after_update(guard: Guard, reply: object, *, provider: str) -> None:
    """After a TTL update's reply: credit the storage charged past its new expiry, if any."""
    end = adapter_for(provider).cache_reply_end(reply)
    if end is not None:
        credit_unused_storage(guard, end[0], end[1], forget=False, provider=provider)
