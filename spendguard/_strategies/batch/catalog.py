"""Batch jobs kept in the ledger: list them, resume them after a restart, cancel them.

A process that submitted a batch and died leaves the job in the ledger with every request's
reservation held. :func:`resume_batches` picks it up — from the same program after a restart,
or from ``spendguard batches resume`` — polls it to the end, settles each request and returns
each result that no one has collected yet, exactly once.
"""

from __future__ import annotations

import os
import socket
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from decimal import Decimal
from typing import Any

from spendguard._budget.ledger.base import Ledger
from spendguard._budget.ledger.jobs import JobItem, JobRecord, JobStore, is_active, job_store
from spendguard._core.errors import ConfigError
from spendguard._core.money import ZERO
from spendguard._strategies.batch.context import (
    ClientContext,
    client_context,
    ledger_for,
    live_ledgers,
    store_for,
)
from spendguard._strategies.batch.holds import Holds
from spendguard._strategies.batch.job import JobCore
from spendguard._strategies.batch.polling import Polling
from spendguard._strategies.batch.results import BatchResult
from spendguard._strategies.batch.run import BatchRun, LedgerArg
from spendguard._strategies.batch.shells import adrive, drive
from spendguard._strategies.batch.steps import cancel

__all__ = ["BatchJob", "RequestState", "acancel_batch", "aresume_batches", "batch_jobs",
           "cancel_batch", "reopen_batches", "resume_batches"]


@dataclass(frozen=True, slots=True)
class RequestState:
    """One request of a job, as the ledger keeps it (no prompt, no response)."""

    custom_id: str
    model: str
    state: str
    route: str
    cost_usd: Decimal
    collected: bool
    note: str | None = None


@dataclass(frozen=True, slots=True)
class BatchJob:
    """One provider batch spendguard submitted, as the ledger keeps it (money in USD)."""

    id: str
    provider: str
    endpoint: str
    state: str
    """``reserved`` (not yet accepted), ``submitted``, ``ended`` or ``failed``."""
    provider_batch_id: str | None
    provider_status: str | None
    request_count: int
    worst_usd: Decimal
    """Reserved before submitting: every request's worst case at batch prices."""
    cost_usd: Decimal
    """Billed so far (batch prices, plus full price for requests that fell back)."""
    created_at: datetime
    deadline: datetime | None
    fallback: bool
    outcomes: Mapping[str, int]
    """Requests by state: pending, succeeded, errored, expired, cancelled, refused."""
    routes: Mapping[str, int]
    """Answered requests by route: batch or fallback."""
    uncollected: int
    """Results in the ledger that no one has collected yet."""
    owner_pid: int | None
    owner_host: str | None
    note: str | None
    requests: tuple[RequestState, ...] = ()

    @property
    def active(self) -> bool:
        """Still running, or holding results to collect."""
        return self.state in ("reserved", "submitted") or self.uncollected > 0

    @classmethod
    def of(cls, job: JobRecord, items: list[JobItem]) -> BatchJob:
        outcomes = Counter(item.state for item in items)
        routes = Counter(item.route for item in items if item.final)
        return cls(job.id, job.provider, job.endpoint, job.state, job.provider_batch_id,
                   job.provider_status, job.request_count, job.worst_usd,
                   sum((item.actual_usd or ZERO for item in items), ZERO), job.created_at,
                   job.deadline, job.fallback, dict(outcomes), dict(routes),
                   sum(1 for item in items if item.final and not item.delivered),
                   job.owner_pid, job.owner_host, job.note,
                   tuple(RequestState(item.custom_id, item.model, item.state, item.route,
                                      item.actual_usd or ZERO, item.delivered, item.note)
                         for item in items))

    @classmethod
    def load(cls, job_id: str, *, ledger: LedgerArg = None) -> BatchJob:
        """The job of that id in ``ledger`` (default: spendguard's default ledger)."""
        store = store_for(ledger, None)
        return cls.of(_job(store, job_id), store.items(job_id))

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready (amounts as exact decimal strings, times as ISO 8601)."""
        out: dict[str, Any] = {}
        for name in self.__dataclass_fields__:
            value = getattr(self, name)
            if isinstance(value, Decimal):
                value = str(value)
            elif isinstance(value, datetime):
                value = value.isoformat()
            elif isinstance(value, Mapping):
                value = dict(value)
            elif name == "requests":
                value = [{"custom_id": r.custom_id, "model": r.model, "state": r.state,
                          "route": r.route, "cost_usd": str(r.cost_usd),
                          "collected": r.collected, "note": r.note} for r in value]
            out[name] = value
        out["active"] = self.active
        return out


def batch_jobs(*, ledger: LedgerArg = None, active: bool = False) -> list[BatchJob]:
    """Every batch job in ``ledger``, newest first; ``active``: only unfinished or uncollected."""
    store = store_for(ledger, None)
    return [BatchJob.of(job, store.items(job.id)) for job in store.jobs(active=active)]


def _job(store: JobStore, job_id: str) -> JobRecord:
    job = store.get(job_id)
    if job is None:
        raise ConfigError(f"job_id: no batch job {job_id!r} in this ledger; `spendguard "
                          f"batches list` shows the jobs (add --ledger URL for another ledger)")
    return job


def _owned_elsewhere(job: JobRecord) -> bool:
    """Whether another live process on this machine is still working on the job."""
    if job.owner_pid is None or job.owner_pid == os.getpid() or (
            job.owner_host != socket.gethostname()):
        return False
    try:
        os.kill(job.owner_pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _cores(context: ClientContext, ledger: Ledger, job_id: str | None, *,
           take_over: bool, fallback: bool) -> list[JobCore]:
    store = job_store(ledger)
    if job_id is not None:
        job = _job(store, job_id)
        if job.provider != context.provider.value:
            raise ConfigError(f"client: job {job_id} ran on {job.provider}, not on "
                              f"{context.provider.value}; resume it with a {job.provider} "
                              f"client (spendguard.OpenAI / spendguard.Anthropic / "
                              f"spendguard.Gemini)")
        if _owned_elsewhere(job) and not take_over:
            raise ConfigError(f"job {job_id} belongs to process {job.owner_pid}, which is "
                              f"still running; pass take_over=True (--take-over) to resume "
                              f"it here anyway")
        jobs = [job]
    else:
        jobs = [job for job in store.jobs(active=True)
                if job.provider == context.provider.value
                and (take_over or not _owned_elsewhere(job))]
    holds = Holds(ledgers=live_ledgers(ledger, context.budget))
    cores = []
    for job in reversed(jobs):  # oldest first
        items = store.items(job.id)
        if job_id is None and not is_active(job, items):
            continue
        chosen = job
        if job.fallback and not fallback:  # recorded, so every later look honours it
            chosen = replace(job, fallback=False)
            store.save(chosen)
        # Only what the ledger kept: without keep_bodies a request that needs its body to be
        # resubmitted or rescued ends with a note saying so (see JobCore.cannot_submit).
        bodies = {item.custom_id: item.body for item in items
                  if item.body is not None and not item.final}
        cores.append(JobCore(store, chosen, items, holds, context.api, context.table,
                             bodies=bodies, keep_bodies=bool(bodies) or context.store_prompts))
    return cores


def _resumed(client: Any, job_id: str | None, ledger: LedgerArg, polling: Polling | None,
             take_over: bool, fallback: bool) -> BatchRun:
    context = client_context(client)
    cores = _cores(context, ledger_for(ledger, context.budget), job_id, take_over=take_over,
                   fallback=fallback)
    return BatchRun(context, cores, polling or Polling(), until_ended=True)


def reopen_batches(client: Any, *, job_id: str | None = None, ledger: LedgerArg = None,
                   polling: Polling | None = None, fallback: bool = True,
                   take_over: bool = False) -> BatchRun:
    """The jobs a stopped process left (all of this provider's, or ``job_id``) as a run.

    Consume it with ``for result in run.each():`` to acknowledge each result as you advance
    (a crash re-delivers the rest); the arguments are :func:`resume_batches`'s.
    """
    return _resumed(client, job_id, ledger, polling, take_over, fallback)


def resume_batches(client: Any, *, job_id: str | None = None, ledger: LedgerArg = None,
                   timeout: float | None = None, polling: Polling | None = None,
                   fallback: bool = True, take_over: bool = False) -> list[BatchResult]:
    """Finish the batch jobs a stopped process left (all of this provider's, or ``job_id``).

    Polls until they end (or ``timeout`` seconds pass: ``0`` looks once), settles every
    request, and returns the results no one has collected yet — each exactly once, across
    processes. Jobs owned by another live process are left to it unless ``take_over``.
    ``fallback=False`` turns off the deadline rescue for the jobs resumed.
    """
    run = _resumed(client, job_id, ledger, polling, take_over, fallback)
    run.wait(timeout)
    return run.collect(new_only=True)


async def aresume_batches(client: Any, *, job_id: str | None = None, ledger: LedgerArg = None,
                          timeout: float | None = None, polling: Polling | None = None,
                          fallback: bool = True, take_over: bool = False) -> list[BatchResult]:
    """The async twin of :func:`resume_batches` (an async client)."""
    run = _resumed(client, job_id, ledger, polling, take_over, fallback)
    await run.await_(timeout)
    return run.collect(new_only=True)


def _one(client: Any, job_id: str, ledger: LedgerArg) -> tuple[ClientContext, JobCore]:
    context = client_context(client)
    (core,) = _cores(context, ledger_for(ledger, context.budget), job_id, take_over=True,
                     fallback=True)
    return context, core


def cancel_batch(client: Any, job_id: str, *, ledger: LedgerArg = None,
                 clock: Callable[[], float] | None = None) -> BatchJob:
    """Cancel one job; its unfinished requests are released and answered ``cancelled``.

    A provider takes a while to stop a batch: resume the job afterwards to settle what it
    finished meanwhile and to collect the results. ``clock`` returns epoch seconds.
    """
    context, core = _one(client, job_id, ledger)
    drive(cancel(core, (clock or time.time)()), context)
    return BatchJob.of(core.job, list(core.items.values()))


async def acancel_batch(client: Any, job_id: str, *, ledger: LedgerArg = None,
                        clock: Callable[[], float] | None = None) -> BatchJob:
    """The async twin of :func:`cancel_batch`."""
    context, core = _one(client, job_id, ledger)
    await adrive(cancel(core, (clock or time.time)()), context)
    return BatchJob.of(core.job, list(core.items.values()))
