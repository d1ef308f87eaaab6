"""A submitted batch to wait on: :class:`BatchRun`, what ``spendguard.batch()`` returns.

It polls its jobs with back-off, rescues late work with ordinary calls when asked to, settles
each request, and hands each result over once, in the order the requests were given. Several
waiters (threads, or handles gathered by asyncio) may share one run.

A result counts as handed over when it is *acknowledged* in the ledger. :meth:`BatchRun.results`
acknowledges all of them as it returns the list; :meth:`BatchRun.each` acknowledges each one
only when the caller asks for the next (or calls :meth:`BatchRun.ack`), so a process killed
while it works through them leaves the unacknowledged ones to be delivered again on resume —
at least once, and never again once acknowledged.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import AsyncIterator, Generator, Iterable, Iterator, Sequence
from decimal import Decimal
from typing import Any

from spendguard._budget.ledger.base import Ledger
from spendguard._core.errors import ConfigError
from spendguard._core.money import ZERO
from spendguard._strategies.batch.actions import Steps
from spendguard._strategies.batch.context import ClientContext
from spendguard._strategies.batch.job import JobCore
from spendguard._strategies.batch.polling import Polling, Round, apoll_until, poll_until
from spendguard._strategies.batch.results import BatchResult
from spendguard._strategies.batch.shells import adrive, drive
from spendguard._strategies.batch.steps import advance, cancel
from spendguard._strategies.batch.times import epoch

__all__ = ["BatchRun", "LedgerArg"]

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
        self._async_locks: dict[int, asyncio.Lock] = {}

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
        # still holds, so it waits for the batches themselves to end. Results settled but
        # not held here (a restart without keep_bodies) are fetched again before they go out.
        return (core.unresolved() or (self.until_ended and not core.ended())
                or bool(core.missing_responses()))

    def _round(self, cores: Sequence[JobCore], now_s: float) -> Round:
        rescues = [moment_s for core in cores if core.unresolved()
                   and (moment_s := core.rescue_at_s()) is not None and moment_s > now_s]
        busy = [core for core in cores if self._busy(core)]
        # One job named, the rest counted: a wait over many jobs stays one short line.
        status = busy[0].status_line() if busy else ""
        if len(busy) > 1:
            status += f" (+{len(busy) - 1} more running)"
        requests_done = sum(core.job.counts.get("done", 0) if core in busy
                            else core.job.request_count for core in cores)
        return Round(done=not busy, status=status, wake_at_s=min(rescues, default=None),
                     jobs_done=len(cores) - len(busy), jobs_total=len(cores),
                     requests_done=requests_done,
                     requests_total=sum(core.job.request_count for core in cores))

    def _fresh(self, core: JobCore, now_s: float) -> bool:
        # Several waiters (threads, or handles gathered by asyncio) share one run: a job
        # looked at moments ago by one of them is not fetched again by the next.
        looked = self._looked_s.get(core.job.id)
        return looked is not None and now_s - looked < self.polling.first_wait_s / 2 and (
            not core.rescue_due(now_s) or core.job.cancel_requested)

    def _looks(self, cores: Sequence[JobCore]) -> Steps[Round]:
        """One look at every job that needs one (the shells hold the run's lock around it)."""
        now_s = self.polling.clock()
        for core in cores:
            if self._busy(core) and not self._fresh(core, now_s):
                yield from advance(core, now_s)
                self._looked_s[core.job.id] = now_s
        return self._round(cores, now_s)

    def _look(self, cores: Sequence[JobCore]) -> Round:
        with self._lock:
            return drive(self._looks(cores), self.context)

    async def _alook(self, cores: Sequence[JobCore]) -> Round:
        # An asyncio lock belongs to one event loop; a run awaited from another gets its own.
        loop = id(asyncio.get_running_loop())
        async with self._async_locks.setdefault(loop, asyncio.Lock()):
            return await adrive(self._looks(cores), self.context)

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
            # A result not fetched again yet is not claimed: claiming would lose it.
            ids = [cid for cid in core.items
                   if (wanted is None or cid in wanted) and not core.needs_fetch(cid)]
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

    def each(self, timeout: float | None = None, *, partial: bool = False
             ) -> Iterator[BatchResult]:
        """The results not yet acknowledged, in request order, each acknowledged on advancing.

        Waits like :meth:`results` (``partial``: without raising ``TimeoutError``, yielding
        only the results that are in by then). A result is acknowledged (in the ledger, for every
        process) when the caller asks for the next one or calls :meth:`ack`, the last one
        when the iteration ends. Stopping early (``break``, an exception, a crash) leaves the
        result in hand and those after it unacknowledged: a resume delivers them again.
        """
        if not self.wait(timeout) and not partial:
            raise self._late()
        yield from self._unacknowledged()

    async def aeach(self, timeout: float | None = None, *, partial: bool = False
                    ) -> AsyncIterator[BatchResult]:
        """The async twin of :meth:`each`."""
        if not await self.await_(timeout) and not partial:
            raise self._late()
        for result in self._unacknowledged():
            yield result

    def _unacknowledged(self) -> Iterator[BatchResult]:
        with self._lock:
            # What other processes acknowledged meanwhile is not delivered again.
            done = {item.custom_id for core in self.cores
                    for item in core.store.items(core.job.id) if item.delivered}
            due = [(core, cid) for cid in self._order()
                   if cid not in done and cid not in self._delivered
                   and (core := self.core_of(cid)).items[cid].final
                   and not core.needs_fetch(cid)]
        for core, cid in due:
            result = core.result(core.items[cid])
            yield result
            self.ack(result)

    def ack(self, result: BatchResult) -> None:
        """Acknowledge one result: it is not delivered again, here or by any resume."""
        with self._lock:
            core = self.core_of(result.custom_id)
            core.store.claim(core.job.id, [result.custom_id])
            self._delivered.setdefault(result.custom_id, result)

    def _late(self) -> TimeoutError:
        late = [core.job.id for core in self.cores if core.unresolved()]
        return TimeoutError(
            f"batch job(s) {', '.join(late)} are not finished; they keep running and stay in "
            f"the ledger: wait again, or resume them later with spendguard.resume_batches(client)"
            f" or `spendguard batches resume`")

    def _cancels(self) -> Steps[None]:
        for core in self.cores:
            yield from cancel(core, self.polling.clock())

    def cancel(self) -> None:
        """Cancel its batches; what they did not finish is answered ``cancelled``."""
        self._need(False)
        drive(self._cancels(), self.context)

    async def acancel(self) -> None:
        """The async twin of :meth:`cancel`."""
        self._need(True)
        await adrive(self._cancels(), self.context)

    def __repr__(self) -> str:
        return f"<BatchRun jobs={self.job_ids} requests={len(self._order())}>"


def _elsewhere(result: BatchResult) -> BatchResult:
    from dataclasses import replace  # noqa: PLC0415

    return replace(result, response=None, error={
        "message": "this result was collected by another process (spendguard batches resume)"})
