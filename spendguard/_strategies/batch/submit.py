"""Submitting: ``spendguard.batch()`` / ``abatch()`` plan, reserve, record and send requests.

The requests are read and priced (:mod:`.requests`), split to the provider's limits
(:mod:`.limits`), reserved all or none at batch prices (:mod:`.holds`) and recorded in the
ledger's job store before the first byte goes to the provider; what comes back is a
:class:`~.run.BatchRun` to wait on.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from spendguard._budget.ledger.jobs import JobItem, JobRecord
from spendguard._core.errors import ConfigError
from spendguard._core.money import ZERO
from spendguard._strategies.batch.context import ClientContext, client_context, store_for
from spendguard._strategies.batch.holds import Holds, hold_requests
from spendguard._strategies.batch.job import JobCore
from spendguard._strategies.batch.limits import BatchLimits, split
from spendguard._strategies.batch.polling import Polling
from spendguard._strategies.batch.requests import BatchRequest, plan_requests
from spendguard._strategies.batch.run import BatchRun, LedgerArg
from spendguard._strategies.batch.shells import adrive, drive
from spendguard._strategies.batch.steps import submit_all
from spendguard._strategies.batch.times import deadline_from, moment

__all__ = ["DEFAULT_FALLBACK_LEAD_S", "abatch", "batch", "keeps_bodies", "prepare"]

DEFAULT_FALLBACK_LEAD_S = 600.0
"""Time left before the deadline for the ordinary calls that rescue a late batch (seconds)."""

Requests = Iterable[Mapping[str, Any] | BatchRequest]


def keeps_bodies(context: ClientContext, keep_bodies: bool | None) -> bool:
    """Whether the ledger keeps request and response bodies: asked for, or the client
    stores prompts (``store_prompts=True``) and the caller did not say otherwise."""
    if keep_bodies is not None and not isinstance(keep_bodies, bool):
        raise ConfigError(f"keep_bodies: expected True, False or None, got {keep_bodies!r}")
    return context.store_prompts if keep_bodies is None else keep_bodies


def prepare(context: ClientContext, requests: Requests, *, endpoint: str | None,
            deadline: datetime | timedelta | float | None, fallback: bool,
            fallback_lead_s: float, ledger: LedgerArg, limits: BatchLimits | None,
            polling: Polling, keep_bodies: bool = False) -> list[JobCore]:
    """Plan, split, reserve (all or none) and record jobs; nothing is sent to the provider.

    Request bodies go into the ledger only with ``keep_bodies``; the cores hold them anyway.
    """
    if fallback and deadline is None:
        raise ConfigError("fallback=True needs a deadline: it is when ordinary calls take over")
    if fallback and not context.guarded:
        raise ConfigError("fallback=True needs a guarded client (spendguard.OpenAI(...) or "
                          "spendguard.wrap(client)), so the ordinary calls are budgeted too")
    if fallback_lead_s < 0:
        raise ConfigError(f"fallback_lead_s: {fallback_lead_s!r} must be >= 0 seconds")
    now_s = polling.clock()
    due = deadline_from(deadline, now_s)
    api = context.api
    planned = plan_requests(
        context.provider, requests, endpoint=endpoint, table=context.table,
        line_bytes=api.line_bytes, per_model=api.per_model,
        body_of=lambda params, where: api.request_body(context.client, params, where))
    parts = split(planned, context.provider, limits or BatchLimits(),
                  overhead_bytes=context.api.overhead_bytes())
    job_ids = [f"sgb_{uuid.uuid4().hex[:20]}" for _ in parts]
    owners = {p.custom_id: job_id for job_id, part in zip(job_ids, parts, strict=True)
              for p in part}
    store = store_for(ledger, context.budget)
    holds = hold_requests(context.budget, planned, provider=context.provider.value,
                          job_ids=owners, prompt_text=context.store_prompts,
                          window_s=api.window_s)
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
                             holds.stored(p.custom_id), body=p.body if keep_bodies else None)
                     for p in part]
            store.add(job, items)
            cores.append(JobCore(store, job, items, holds, context.api, context.table,
                                 bodies={p.custom_id: p.body for p in part},
                                 keep_bodies=keep_bodies))
    except BaseException as exc:
        _undo(cores, parts[len(cores):], holds, exc, now_s, context)
        raise
    return cores


def _undo(recorded: list[JobCore], unrecorded: Sequence[Sequence[Any]], holds: Holds,
          exc: BaseException, now_s: float, context: ClientContext) -> None:
    for core in recorded:
        core.submit_failed(exc, now_s)
    for part in unrecorded:
        for request in part:
            item = JobItem("", request.custom_id, 0, request.model, request.worst_usd, ())
            holds.release(holds.for_item(item, context.provider.value, ""), "batch not recorded")


def _prepared(client: Any, requests: Requests, *, want_async: bool, endpoint: str | None,
              deadline: datetime | timedelta | float | None, fallback: bool,
              fallback_lead_s: float, ledger: LedgerArg, limits: BatchLimits | None,
              polling: Polling | None, keep_bodies: bool | None
              ) -> tuple[ClientContext, list[JobCore], Polling]:
    """What :func:`batch` and :func:`abatch` share before sending: the checks and the jobs."""
    context = client_context(client)
    if context.is_async != want_async:
        raise ConfigError("client: an async client submits with `await spendguard.abatch(...)`"
                          if context.is_async else
                          "client: a sync client submits with spendguard.batch(...)")
    polling = polling or Polling()
    cores = prepare(context, requests, endpoint=endpoint, deadline=deadline, fallback=fallback,
                    fallback_lead_s=fallback_lead_s, ledger=ledger, limits=limits,
                    polling=polling, keep_bodies=keeps_bodies(context, keep_bodies))
    return context, cores, polling


def batch(requests: Requests, *, client: Any, endpoint: str | None = None,
          deadline: datetime | timedelta | float | None = None, fallback: bool = False,
          fallback_lead_s: float = DEFAULT_FALLBACK_LEAD_S, ledger: LedgerArg = None,
          limits: BatchLimits | None = None, polling: Polling | None = None,
          keep_bodies: bool | None = None) -> BatchRun:
    """Submit many requests through the provider's batch API, at its discount.

    ``requests`` are the ordinary ``create()`` arguments (dicts, or
    :class:`~spendguard.BatchRequest` to name an endpoint or a custom id). Their worst case at
    batch prices is reserved before anything is sent (``BudgetExceeded``, nothing submitted,
    if it does not fit). ``deadline`` (an aware datetime, a timedelta or seconds from now)
    bounds the wait; with ``fallback=True`` whatever the batch has not finished
    ``fallback_lead_s`` before it is cancelled and sent as ordinary calls (full price, still
    budgeted). Jobs are kept in the ledger (``ledger``, default: the budget's) so another
    process can resume them. ``keep_bodies=True`` also keeps each request's body (the prompt)
    there until it is answered, and each batch response until it is handed over, so a
    restarted process can resubmit or rescue; the default follows the client's
    ``store_prompts`` (off: bodies stay in this process's memory; results are fetched again
    from the provider after a restart). Returns a :class:`BatchRun`: call ``.results()``.
    """
    context, cores, polling = _prepared(
        client, requests, want_async=False, endpoint=endpoint, deadline=deadline,
        fallback=fallback, fallback_lead_s=fallback_lead_s, ledger=ledger, limits=limits,
        polling=polling, keep_bodies=keep_bodies)
    drive(submit_all(cores, polling.clock()), context)
    return BatchRun(context, cores, polling)


async def abatch(requests: Requests, *, client: Any, endpoint: str | None = None,
                 deadline: datetime | timedelta | float | None = None, fallback: bool = False,
                 fallback_lead_s: float = DEFAULT_FALLBACK_LEAD_S, ledger: LedgerArg = None,
                 limits: BatchLimits | None = None, polling: Polling | None = None,
                 keep_bodies: bool | None = None) -> BatchRun:
    """The async twin of :func:`batch` (an ``AsyncOpenAI`` / ``AsyncAnthropic`` client)."""
    context, cores, polling = _prepared(
        client, requests, want_async=True, endpoint=endpoint, deadline=deadline,
        fallback=fallback, fallback_lead_s=fallback_lead_s, ledger=ledger, limits=limits,
        polling=polling, keep_bodies=keep_bodies)
    await adrive(submit_all(cores, polling.clock()), context)
    return BatchRun(context, cores, polling)
