"""Batch jobs kept in a ledger, so a restarted process can resume them: the job store.

A job is one provider batch (an OpenAI Batch or an Anthropic Message Batch) that spendguard
submitted; an item is one request in it, with the reservations that hold its worst case. The
store is dumb on purpose: it keeps records and changes them in one transaction each; what the
states mean is decided by :mod:`spendguard._strategies.batch`. :meth:`JobStore.claim` is the one
rule it enforces itself, because it must hold across processes: each result is handed over once.

``job_store(ledger)`` gives the store of a SQLite, PostgreSQL or in-memory ledger.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from decimal import Decimal
from typing import Any, Protocol

from spendguard._budget.ledger.base import Ledger
from spendguard._core.errors import ConfigError, LedgerError
from spendguard._core.terminal import masked_url

__all__ = [
    "HOLD_STATES",
    "ITEM_STATES",
    "JOB_STATES",
    "ROUTES",
    "JobItem",
    "JobRecord",
    "JobStore",
    "MemoryJobStore",
    "job_store",
]

JOB_STATES = ("reserved", "submitted", "ended", "failed")
"""``reserved``: worst cases held, not yet accepted by the provider; ``submitted``: the provider
has it; ``ended``: the provider finished it and every reservation is closed; ``failed``: it
could not be submitted (its reservations were released)."""
ITEM_STATES = ("pending", "succeeded", "errored", "expired", "cancelled", "refused")
"""What the caller gets for a request; every state but ``pending`` is final."""
HOLD_STATES = ("held", "settled", "released")
"""Where a request's reservation stands; it may close after the result (a rescued request)."""
ROUTES = ("batch", "fallback")


@dataclass(frozen=True, slots=True)
class JobRecord:
    """One provider batch submitted by spendguard (times in UTC, money in USD)."""

    id: str
    provider: str
    endpoint: str
    """The API path of every request in it, e.g. ``/v1/chat/completions``."""
    state: str
    created_at: datetime
    updated_at: datetime
    request_count: int
    worst_usd: Decimal
    """The sum of its requests' worst cases at batch prices: what it reserved."""
    provider_batch_id: str | None = None
    provider_status: str | None = None
    input_file_id: str | None = None
    submitted_at: datetime | None = None
    ended_at: datetime | None = None
    deadline: datetime | None = None
    fallback: bool = False
    """Run what the batch has not done by ``deadline - fallback_lead_s`` as ordinary calls."""
    fallback_lead_s: float = 0.0
    cancel_requested: bool = False
    counts: Mapping[str, int] = field(default_factory=dict)
    """The provider's request counts as last seen."""
    note: str | None = None
    owner_pid: int | None = None
    owner_host: str | None = None

    def __post_init__(self) -> None:
        if self.state not in JOB_STATES:
            raise ConfigError(f"JobRecord.state: {self.state!r} is not one of {JOB_STATES}")


@dataclass(frozen=True, slots=True)
class JobItem:
    """One request of a job: its reservation, its result until delivered, and its cost."""

    job_id: str
    custom_id: str
    position: int
    """Its place in the caller's list of requests (results come back in this order)."""
    model: str
    worst_usd: Decimal
    holds: tuple[tuple[str, str], ...]
    """``(ledger URL, reservation id)`` for every ledger its worst case is held in."""
    hold: str = "held"
    state: str = "pending"
    route: str = "batch"
    body: Mapping[str, Any] | None = None
    """The request body, only if the caller opted in (``keep_bodies`` / ``store_prompts``);
    kept until the item is final (to resubmit or fall back after a restart)."""
    result: Mapping[str, Any] | None = None
    """The response body (or error), kept until it is delivered; a batch response only if the
    caller opted in (otherwise it is fetched again from the provider after a restart)."""
    usage: Mapping[str, Any] | None = None
    """:meth:`spendguard.Usage.as_dict` of what it used, once known."""
    actual_usd: Decimal | None = None
    note: str | None = None
    delivered: bool = False

    def __post_init__(self) -> None:
        for name, value, allowed in (("hold", self.hold, HOLD_STATES),
                                     ("state", self.state, ITEM_STATES),
                                     ("route", self.route, ROUTES)):
            if value not in allowed:
                raise ConfigError(f"JobItem.{name}: {value!r} is not one of {allowed}")

    @property
    def final(self) -> bool:
        """Whether the caller's result is known (the reservation may still be open)."""
        return self.state != "pending"


class JobStore(Protocol):
    """Batch jobs and their items in one ledger; every method is one transaction."""

    def add(self, job: JobRecord, items: Sequence[JobItem]) -> None:
        """Record a new job with all its items."""
        ...

    def get(self, job_id: str) -> JobRecord | None:
        """The job, or None if this ledger has no job of that id."""
        ...

    def jobs(self, *, active: bool = False) -> list[JobRecord]:
        """Every job, newest first; ``active``: only those not ended or not all delivered."""
        ...

    def items(self, job_id: str) -> list[JobItem]:
        """The job's items in request order."""
        ...

    def save(self, job: JobRecord, items: Iterable[JobItem] = ()) -> None:
        """Replace the job's row and the given items' rows, all at once."""
        ...

    def claim(self, job_id: str, custom_ids: Iterable[str] | None = None) -> list[JobItem]:
        """Mark final, undelivered items delivered and return them (with their results).

        An item is returned by exactly one call, in any process; its stored result is then
        dropped. ``custom_ids`` limits the claim to those items.
        """
        ...


def check_items(job: JobRecord, items: Sequence[JobItem]) -> None:
    """Items must belong to the job and have unique custom ids."""
    seen: set[str] = set()
    for item in items:
        if item.job_id != job.id:
            raise ConfigError(f"item {item.custom_id!r} belongs to job {item.job_id!r}, not "
                              f"{job.id!r}")
        if item.custom_id in seen:
            raise ConfigError(f"custom_id {item.custom_id!r} appears twice in job {job.id!r}")
        seen.add(item.custom_id)


def is_active(job: JobRecord, items: Iterable[JobItem]) -> bool:
    """Not ended, or holding results nobody has collected yet."""
    return job.state in ("reserved", "submitted") or any(
        item.final and not item.delivered for item in items)


class MemoryJobStore:
    """The job store of a ``memory://`` ledger: the same rules, kept in this process."""

    def __init__(self) -> None:
        self._jobs: dict[str, JobRecord] = {}
        self._items: dict[str, dict[str, JobItem]] = {}
        self._lock = threading.RLock()

    def add(self, job: JobRecord, items: Sequence[JobItem]) -> None:
        check_items(job, items)
        with self._lock:
            if job.id in self._jobs:
                raise LedgerError(f"batch job {job.id} is already recorded")
            self._jobs[job.id] = job
            self._items[job.id] = {item.custom_id: item for item in items}

    def get(self, job_id: str) -> JobRecord | None:
        with self._lock:
            return self._jobs.get(job_id)

    def jobs(self, *, active: bool = False) -> list[JobRecord]:
        with self._lock:
            found = [job for job in self._jobs.values()
                     if not active or is_active(job, self._items[job.id].values())]
        # Newest first; jobs made at the same moment, the last recorded first.
        return sorted(reversed(found), key=lambda job: job.created_at, reverse=True)

    def items(self, job_id: str) -> list[JobItem]:
        with self._lock:
            return sorted(self._items.get(job_id, {}).values(), key=lambda item: item.position)

    def save(self, job: JobRecord, items: Iterable[JobItem] = ()) -> None:
        items = list(items)
        with self._lock:
            known = self._items.get(job.id)
            if known is None:
                raise LedgerError(f"no batch job {job.id} in this ledger")
            for item in items:
                if item.job_id != job.id or item.custom_id not in known:
                    raise LedgerError(f"batch job {job.id} has no item {item.custom_id!r}")
            self._jobs[job.id] = job
            for item in items:
                known[item.custom_id] = item

    def claim(self, job_id: str, custom_ids: Iterable[str] | None = None) -> list[JobItem]:
        wanted = None if custom_ids is None else set(custom_ids)
        claimed: list[JobItem] = []
        with self._lock:
            known = self._items.get(job_id, {})
            for item in sorted(known.values(), key=lambda i: i.position):
                if item.final and not item.delivered and (
                        wanted is None or item.custom_id in wanted):
                    claimed.append(replace(item, delivered=True))
                    known[item.custom_id] = replace(item, delivered=True, result=None)
        return claimed


# A memory ledger's jobs live exactly as long as the ledger object.
_memory_stores: weakref.WeakKeyDictionary[object, MemoryJobStore] = weakref.WeakKeyDictionary()
_stores_lock = threading.Lock()


def job_store(ledger: Ledger) -> JobStore:
    """The batch-job store of ``ledger`` (SQLite, PostgreSQL or in-memory)."""
    from spendguard._budget.ledger.memory import MemoryLedger  # noqa: PLC0415 - avoid an import cycle
    from spendguard._budget.ledger.postgres import PostgresLedger  # noqa: PLC0415
    from spendguard._budget.ledger.sqlite import SqliteLedger  # noqa: PLC0415

    if isinstance(ledger, SqliteLedger):
        from spendguard._budget.ledger.jobs_sqlite import SqliteJobStore  # noqa: PLC0415

        return SqliteJobStore(ledger)
    if isinstance(ledger, PostgresLedger):
        from spendguard._budget.ledger.jobs_postgres import PostgresJobStore  # noqa: PLC0415

        return PostgresJobStore(ledger)
    if isinstance(ledger, MemoryLedger):
        with _stores_lock:
            store = _memory_stores.get(ledger)
            if store is None:
                store = _memory_stores[ledger] = MemoryJobStore()
            return store
    raise ConfigError(f"ledger: batch jobs are kept in a sqlite:///, postgresql:// or "
                      f"memory:// ledger; {masked_url(ledger.url)!r} cannot hold them. Pass "
                      f"ledger='sqlite:///batches.db' to spendguard.batch()")
