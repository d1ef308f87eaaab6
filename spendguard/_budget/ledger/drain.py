"""Drain a ledger's finished calls into a SQLite ledger or a PostgreSQL table, for keeps.

A Redis ledger is the place to *enforce* budgets across machines, not the place finance should
read from in five years. ``drain(src_url, dst_url)`` copies every finished call and correction
(``records()``, oldest first) into a long-term store:

- ``sqlite:///archive.db`` (or any ledger on the shared engine): each record becomes a call
  with its events and totals, exactly as if it had been made there, so ``records()``,
  ``verify()``, exports and reports read it as any other ledger. Use a file of its own: its
  totals then include the drained spending.
- ``postgresql://user@host/db``: one row per record in ``spendguard_records`` (see
  :mod:`~spendguard._budget.ledger.drain_postgres`).

Records are keyed by their id and never change once written, so draining is idempotent: run
it every hour, twice, or after a crash halfway — nothing is duplicated. ``since``/``until``
limit the copy to a time window (a call's time is when it was reserved, so leave a margin of
the reservation TTL when draining recent ones). Calls still in flight are not records yet;
they come with the next drain. Nothing is deleted from the source.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from itertools import islice

from spendguard._budget.ledger import Ledger, open_ledger
from spendguard._budget.ledger.base import ScopeClaim, SpendRecord, Totals
from spendguard._budget.ledger.drain_postgres import PostgresArchive, is_postgres_url
from spendguard._budget.ledger.engine import CallRow, TransactionalLedger, Tx
from spendguard._core.errors import ConfigError

__all__ = ["DrainResult", "drain"]

_STATES = {"released": "released", "recovered": "recovered", "adjustment": "adjustment"}
_CLOSING = {"settled": "settle", "released": "release", "recovered": "recover"}


@dataclass(frozen=True, slots=True)
class DrainResult:
    """What a drain did: records read from the source, and how many were new at the end."""

    read: int
    written: int

    @property
    def already_there(self) -> int:
        """Records the destination held already (from an earlier drain)."""
        return self.read - self.written


def drain(src_url: str | os.PathLike[str] | Ledger, dst_url: str | os.PathLike[str] | Ledger,
          *, since: datetime | None = None, until: datetime | None = None,
          batch_size: int = 500) -> DrainResult:
    """Copy the finished calls of ``src_url`` into ``dst_url``, each once; see the module doc.

    ``src_url`` is any ledger URL (``redis://...``, ``sqlite:///...``) or ledger;
    ``dst_url`` a SQLite (or memory) ledger or a ``postgresql://`` URL.
    """
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ConfigError(f"batch_size: {batch_size!r} must be a positive number of records")
    # Only read: a read-only source still drains.
    source = src_url if isinstance(src_url, Ledger) else open_ledger(src_url, read_only=True)
    records = source.records(since=since, until=until)
    read = written = 0
    if isinstance(dst_url, str) and is_postgres_url(dst_url):
        archive = PostgresArchive(dst_url)
        try:
            for batch in _batches(records, batch_size):
                read += len(batch)
                written += archive.write(batch, source=source.url)
        finally:
            archive.close()
        return DrainResult(read, written)
    destination = dst_url if isinstance(dst_url, Ledger) else open_ledger(dst_url)
    if not isinstance(destination, TransactionalLedger):
        raise ConfigError(f"drain: the destination {destination.url} is not a SQLite ledger "
                          f"or a postgresql:// URL; drain into 'sqlite:///archive.db' or "
                          f"'postgresql://user@host/db'")
    if destination is source or destination.url == source.url:
        raise ConfigError(f"drain: source and destination are the same ledger ({source.url})")
    for batch in _batches(records, batch_size):
        read += len(batch)
        with destination._transaction() as tx:  # one batch, all or nothing
            written += sum(_insert(tx, record) for record in batch)
    return DrainResult(read, written)


def _batches(records: Iterable[SpendRecord], size: int) -> Iterator[list[SpendRecord]]:
    iterator = iter(records)
    while batch := list(islice(iterator, size)):
        yield batch


def _insert(tx: Tx, record: SpendRecord) -> bool:
    """Write ``record`` as the engine would have: a closed call, its events and totals."""
    if tx.get_call(record.id) is not None:
        return False
    limits = list(record.limits_usd) + [None] * (len(record.scopes) - len(record.limits_usd))
    claims = tuple(ScopeClaim(scope, key, limit)
                   for scope, key, limit in zip(record.scopes, record.period_keys, limits,
                                                strict=True))
    state = _STATES.get(record.status, "settled")
    tx.insert_call(CallRow(record, claims, state))
    if state == "adjustment":
        tx.append_event(record.id, "adjust", record.time, record.actual_usd, record.note)
    else:
        tx.append_event(record.id, "reserve", record.time, record.estimated_usd)
        tx.append_event(record.id, _CLOSING[state], record.time, record.actual_usd,
                        record.note)
    for claim in claims:
        old = tx.totals(claim.scope, claim.period_key)
        tx.put_totals(claim.scope, claim.period_key,
                      Totals(old.spent_usd + record.actual_usd, old.reserved_usd,
                             old.calls + (state in ("settled", "recovered"))))
    return True
