"""``spendguard.batch()``: many requests at once through the provider's batch API.

The requests are read and priced (:mod:`.requests`), split to the provider's limits
(:mod:`.limits`), reserved all or none at batch prices (:mod:`.holds`), recorded in the
ledger's job store, then submitted. :class:`BatchRun` waits for them: it polls with back-off,
rescues late work with ordinary calls when asked to, settles each request, and hands each
result over once, in the order the requests were given.
"""

from __future__ import annotations

import asyncio
import os
import socket
import threading
import uuid
from collections.abc import Generator, Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from spendguard.batching.context import ClientContext, client_context, store_for
from spendguard.batching.driver import aadvance, acancel, advance, asubmit, cancel, submit
from spendguard.batching.holds import Holds, hold_requests
from spendguard.batching.job import JobCore, deadline_from, epoch, moment
from spendguard.batching.limits import BatchLimits, split
from spendguard.batching.polling import Polling, Round, apoll_until, poll_until
from spendguard.batching.requests import BatchRequest, plan_requests
from spendguard.batching.results import BatchResult
from spendguard.errors import ConfigError
from spendguard.ledger.base import Ledger
from spendguard.ledger.jobs import JobItem, JobRecord
from spendguard.money import ZERO

__all__ = ["DEFAULT_FALLBACK_LEAD_S", "BatchRun", "abatch", "batch", "prepare"]

DEFAULT_FALLBACK_LEAD_S = 600.0
"""Time left before the deadline for the ordinary calls that rescue a late batch (seconds)."""

Requests = Iterable[Mapping[str, Any] | BatchRequest]
LedgerArg = str | os.PathLike[str] | Ledger | None


class BatchRun:
    """Requests submitted as one or more provider batches; wait on it for their results."""

    def __init__(self, context: ClientContext, cores: Sequence[JobCore], polling: Polling, *,
                 until_ended: bool = False) -> None:
        self.context = context
        self.cores = list(cores)
        self.polling = polling
        self.until_ended = until_ended
        self._delivered: dict[str, BatchResult] = {}
        self._looked_s: dict[str, float] = {}
        self._lock = threading.RLock()
        self._async_lock: asyncio.Lock | None = None

    @property
    def job_ids(self) -> list[str]:
        """The ids of its jobs (one per provider batch), as ``spendguard batches`` shows them."""
        return [core.job.id for core in self.cores]

    @property
    def worst_usd(self) -> Decimal:
        """What it reserved: every request's worst case at batch prices (USD)."""
        return sum((core.job.worst_usd for core in self.cores), ZERO)

    def core_of(self, custom_id: str) -> JobCore:
        """The job a request belongs to."""
        return next(core for core in self.cores if custom_id in core.items)

    def custom_ids(self) -> list[str]:
        """Every request's custom id, in the order the requests were given."""
        return self._order()

    def _order(self) -> list[str]:
        items = [item for core in self.cores for item in core.items.values()]
        return [item.custom_id for item in sorted(items, key=lambda item: item.position)]

    # -- waiting --------------------------------------------------------------------------

    def _until(self, timeout: float | None, cores: Sequence[JobCore]) -> float | None:
        moments = [] if timeout is None else [self.polling.clock() + timeout]
        if not self.until_ended:
            # Without a fallback a deadline bounds the caller's wait: past it they are late.
            moments += [epoch(core.job.deadline) for core in cores
                        if core.job.deadline is not None and not core.job.fallback]
        return min(moments, default=None)

    def _busy(self, core: JobCore) -> bool:
        # A waiting caller needs every result; a resume also settles what a rescued batch
        # still holds, so it waits for the batches themselves to end.
        return core.unresolved() or (self.until_ended and not core.ended())

    def _round(self, cores: Sequence[JobCore], now_s: float) -> Round:
        rescues = [moment_s for core in cores if core.unresolved()
                   and (moment_s := core.rescue_at_s()) is not None and moment_s > now_s]
        busy = [core for core in cores if self._busy(core)]
        return Round(done=not busy, status="; ".join(core.status_line() for core in busy),
                     wake_at_s=min(rescues, default=None))

    def _fresh(self, core: JobCore, now_s: float) -> bool:
        # Several waiters (threads, or handles gathered by asyncio) share one run: a job
        # looked at moments ago by one of them is not fetched again by the next.
        looked = self._looked_s.get(core.job.id)
        return looked is not None and now_s - looked < self.polling.first_wait_s / 2 and (
            not core.rescue_due(now_s) or core.job.cancel_requested)

    def _look(self, cores: Sequence[JobCore]) -> Round:
        with self._lock:
            now_s = self.polling.clock()
            for core in cores:
                if self._busy(core) and not self._fresh(core, now_s):
                    advance(core, self.context.client, now_s)
                    self._looked_s[core.job.id] = now_s
            return self._round(cores, now_s)

    async def _alook(self, cores: Sequence[JobCore]) -> Round:
        if self._async_lock is None:
            self._async_lock = asyncio.Lock()
        async with self._async_lock:
            now_s = self.polling.clock()
            for core in cores:
                if self._busy(core) and not self._fresh(core, now_s):
                    await aadvance(core, self.context.client, now_s)
                    self._looked_s[core.job.id] = now_s
            return self._round(cores, now_s)

    def _need(self, is_async: bool) -> None:
        if self.context.is_async != is_async:
            kind, use = (("an async", "await run (or run.aresults())") if self.context.is_async
                         else ("a sync", "run.results()"))
            raise ConfigError(f"this batch was made with {kind} client; wait on it with {use}")

    def wait(self, timeout: float | None = None, *, cores: Sequence[JobCore] | None = None
             ) -> bool:
        """Poll until every request has its result (True) or ``timeout`` seconds pass."""
        self._need(False)
        chosen = self.cores if cores is None else cores
        return poll_until(lambda: self._look(chosen), self.polling,
                          until_s=self._until(timeout, chosen))

    async def await_(self, timeout: float | None = None, *,
                     cores: Sequence[JobCore] | None = None) -> bool:
        """The async twin of :meth:`wait`."""
        self._need(True)
        chosen = self.cores if cores is None else cores
        return await apoll_until(lambda: self._alook(chosen), self.polling,
                                 until_s=self._until(timeout, chosen))

    # -- results --------------------------------------------------------------------------

    def results(self, timeout: float | None = None) -> list[BatchResult]:
        """Every request's result in request order, waiting up to ``timeout`` seconds.

        Raises ``TimeoutError`` when they are not all in by then (or by the deadline, without
        a fallback); the jobs keep running and stay in the ledger to be resumed.
        """
        if not self.wait(timeout):
            raise self._late()
        return self.collect()

    async def aresults(self, timeout: float | None = None) -> list[BatchResult]:
        """The async twin of :meth:`results`."""
        if not await self.await_(timeout):
            raise self._late()
        return self.collect()

    def __await__(self) -> Generator[Any, None, list[BatchResult]]:
        return self.aresults().__await__()

    def collect(self, custom_ids: Iterable[str] | None = None, *,
                new_only: bool = False) -> list[BatchResult]:
        """The results that are in (all, or those of ``custom_ids``), each claimed once.

        A result another process claimed first comes back without its response, unless
        ``new_only`` leaves it out.
        """
        with self._lock:
            return self._collect(None if custom_ids is None else set(custom_ids), new_only)

    def _collect(self, wanted: set[str] | None, new_only: bool) -> list[BatchResult]:
        fresh: set[str] = set()
        for core in self.cores:
            ids = [cid for cid in core.items if wanted is None or cid in wanted]
            if not any(cid not in self._delivered for cid in ids):
                continue
            for item in core.store.claim(core.job.id, ids):
                self._delivered[item.custom_id] = core.result(item)
                fresh.add(item.custom_id)
            for cid in ids:  # final, but claimed by another process (``batches resume``)
                item = core.items[cid]
                if cid not in self._delivered and item.final and not new_only:
                    self._delivered[cid] = _elsewhere(core.result(item))
        return [self._delivered[cid] for cid in self._order()
                if cid in self._delivered and (wanted is None or cid in wanted)
                and (cid in fresh or not new_only)]

    def _late(self) -> TimeoutError:
        late = [core.job.id for core in self.cores if core.unresolved()]
        return TimeoutError(
            f"batch job(s) {', '.join(late)} are not finished; they keep running and stay in "
            f"the ledger: wait again, or resume them later with spendguard.resume_batches(client)"
            f" or `spendguard batches resume`")

    def cancel(self) -> None:
        """Cancel its batches; what they did not finish is answered ``cancelled``."""
        self._need(False)
        for core in self.cores:
            cancel(core, self.context.client, self.polling.clock())

    async def acancel(self) -> None:
        """The async twin of :meth:`cancel`."""
        self._need(True)
        for core in self.cores:
            await acancel(core, self.context.client, self.polling.clock())

    def __repr__(self) -> str:
        return f"<BatchRun jobs={self.job_ids} requests={len(self._order())}>"


def _elsewhere(result: BatchResult) -> BatchResult:
    from dataclasses import replace  # noqa: PLC0415

    return replace(result, response=None, error={
        "message": "this result was collected by another process (spendguard batches resume)"})


def prepare(context: ClientContext, requests: Requests, *, endpoint: str | None,
            deadline: datetime | timedelta | float | None, fallback: bool,
            fallback_lead_s: float, ledger: LedgerArg, limits: BatchLimits | None,
            polling: Polling) -> list[JobCore]:
    """Plan, split, reserve (all or none) and record jobs; nothing is sent to the provider."""
    if fallback and deadline is None:
        raise ConfigError("fallback=True needs a deadline: it is when ordinary calls take over")
    if fallback and context.guard is None:
        raise ConfigError("fallback=True needs a guarded client (spendguard.OpenAI(...) or "
                          "spendguard.wrap(client)), so the ordinary calls are budgeted too")
    if fallback_lead_s < 0:
        raise ConfigError(f"fallback_lead_s: {fallback_lead_s!r} must be >= 0 seconds")
    now_s = polling.clock()
    due = deadline_from(deadline, now_s)
    planned = plan_requests(context.provider, requests, endpoint=endpoint, table=context.table,
                            line_bytes=context.api.line_bytes)
    parts = split(planned, context.provider, limits or BatchLimits(),
                  overhead_bytes=context.api.overhead_bytes())
    job_ids = [f"sgb_{uuid.uuid4().hex[:20]}" for _ in parts]
    owners = {p.custom_id: job_id for job_id, part in zip(job_ids, parts, strict=True)
              for p in part}
    store = store_for(ledger, context.budget)
    holds = hold_requests(context.budget, planned, provider=context.provider.value,
                          job_ids=owners, prompt_text=context.store_prompts)
    cores: list[JobCore] = []
    try:
        for job_id, part in zip(job_ids, parts, strict=True):
            job = JobRecord(job_id, context.provider.value, part[0].path, "reserved",
                            moment(now_s), moment(now_s), len(part),
                            sum((p.worst_usd for p in part), ZERO), deadline=due,
                            fallback=fallback, fallback_lead_s=float(fallback_lead_s),
                            counts={"total": len(part)}, owner_pid=os.getpid(),
                            owner_host=socket.gethostname())
            items = [JobItem(job_id, p.custom_id, p.index, p.model, p.worst_usd,
                             holds.stored(p.custom_id), body=p.body) for p in part]
            store.add(job, items)
            cores.append(JobCore(store, job, items, holds, context.api, context.table))
    except BaseException as exc:
        _undo(cores, parts[len(cores):], holds, exc, now_s, context)
        raise
    return cores


def _not_sent(cores: Sequence[JobCore], exc: BaseException, now_s: float) -> None:
    """A part was refused: the caller gets that error, so the parts after it are not sent."""
    for core in cores:
        core.submit_failed(f"not submitted: an earlier part of the same batch was refused "
                           f"({type(exc).__name__}: {exc})", now_s)


def _undo(recorded: list[JobCore], unrecorded: Sequence[Sequence[Any]], holds: Holds,
          exc: BaseException, now_s: float, context: ClientContext) -> None:
    for core in recorded:
        core.submit_failed(exc, now_s)
    for part in unrecorded:
        for request in part:
            item = JobItem("", request.custom_id, 0, request.model, request.worst_usd, ())
            holds.release(holds.for_item(item, context.provider.value, ""), "batch not recorded")


def batch(requests: Requests, *, client: Any, endpoint: str | None = None,
          deadline: datetime | timedelta | float | None = None, fallback: bool = False,
          fallback_lead_s: float = DEFAULT_FALLBACK_LEAD_S, ledger: LedgerArg = None,
          limits: BatchLimits | None = None, polling: Polling | None = None) -> BatchRun:
    """Submit many requests through the provider's batch API, at its discount.

    ``requests`` are the ordinary ``create()`` arguments (dicts, or
    :class:`~spendguard.BatchRequest` to name an endpoint or a custom id). Their worst case at
    batch prices is reserved before anything is sent (``BudgetExceeded``, nothing submitted,
    if it does not fit). ``deadline`` (an aware datetime, a timedelta or seconds from now)
    bounds the wait; with ``fallback=True`` whatever the batch has not finished
    ``fallback_lead_s`` before it is cancelled and sent as ordinary calls (full price, still
    budgeted). Jobs are kept in the ledger (``ledger``, default: the budget's) so another
    process can resume them. Returns a :class:`BatchRun`: call ``.results()``.
    """
    context = client_context(client)
    if context.is_async:
        raise ConfigError("client: an async client submits with `await spendguard.abatch(...)`")
    polling = polling or Polling()
    cores = prepare(context, requests, endpoint=endpoint, deadline=deadline, fallback=fallback,
                    fallback_lead_s=fallback_lead_s, ledger=ledger, limits=limits,
                    polling=polling)
    now_s = polling.clock()
    for index, core in enumerate(cores):
        if not core.rescue_due(now_s):
            try:
                submit(core, client, now_s)
            except Exception as exc:
                _not_sent(cores[index + 1:], exc, now_s)
                raise
    return BatchRun(context, cores, polling)


async def abatch(requests: Requests, *, client: Any, endpoint: str | None = None,
                 deadline: datetime | timedelta | float | None = None, fallback: bool = False,
                 fallback_lead_s: float = DEFAULT_FALLBACK_LEAD_S, ledger: LedgerArg = None,
                 limits: BatchLimits | None = None, polling: Polling | None = None,
                 ) -> BatchRun:
    """The async twin of :func:`batch` (an ``AsyncOpenAI`` / ``AsyncAnthropic`` client)."""
    context = client_context(client)
    if not context.is_async:
        raise ConfigError("client: a sync client submits with spendguard.batch(...)")
    polling = polling or Polling()
    cores = prepare(context, requests, endpoint=endpoint, deadline=deadline, fallback=fallback,
                    fallback_lead_s=fallback_lead_s, ledger=ledger, limits=limits,
                    polling=polling)
    now_s = polling.clock()
    for index, core in enumerate(cores):
        if not core.rescue_due(now_s):
            try:
                await asubmit(core, client, now_s)
            except Exception as exc:
                _not_sent(cores[index + 1:], exc, now_s)
                raise
    return BatchRun(context, cores, polling)
