"""The twin shells that talk to the provider for a :class:`~.job.JobCore`: sync and async.

Each does the same few steps in the same order and only differs by ``await``; every decision
(is it time to rescue? what does this line mean? what is settled?) is the core's. A parity test
keeps the twins in step.
"""

from __future__ import annotations

import logging
from typing import Any

from spendguard.batching.job import JobCore
from spendguard.batching.wire import Submitted
from spendguard.metering import prereserved

__all__ = ["aadvance", "acancel", "advance", "asubmit", "cancel", "submit"]

log = logging.getLogger("spendguard.batching")


def submit(core: JobCore, client: Any, now_s: float) -> None:
    """Send a reserved job to the provider (after looking for one a crash left behind)."""
    api, job = core.api, core.job
    found = api.find(client, job.id) if job.note == "submitting" else None
    if found is not None:
        core.submitted(Submitted(api.retrieve(client, found)), now_s)
        return
    if core.bodies_missing():
        core.cannot_submit(now_s)
        return
    core.mark_submitting(now_s)
    try:
        # The worst case is already reserved per request: the guard lets this one through.
        with prereserved() as headers:
            sent = api.submit(client, job.id, job.endpoint, core.pending_requests(), headers)
    except Exception as exc:
        core.submit_failed(exc, now_s)
        raise
    core.submitted(sent, now_s)


async def asubmit(core: JobCore, client: Any, now_s: float) -> None:
    """The async twin of :func:`submit`."""
    api, job = core.api, core.job
    found = await api.afind(client, job.id) if job.note == "submitting" else None
    if found is not None:
        core.submitted(Submitted(await api.aretrieve(client, found)), now_s)
        return
    if core.bodies_missing():
        core.cannot_submit(now_s)
        return
    core.mark_submitting(now_s)
    try:
        with prereserved() as headers:
            sent = await api.asubmit(client, job.id, job.endpoint, core.pending_requests(),
                                     headers)
    except Exception as exc:
        core.submit_failed(exc, now_s)
        raise
    core.submitted(sent, now_s)


def advance(core: JobCore, client: Any, now_s: float) -> None:
    """One look at a job: submit, poll, rescue, collect, fall back — whatever is due."""
    api = core.api
    core.refresh()
    if core.job.state == "reserved":
        if core.rescue_due(now_s):
            core.abandon(now_s)
        else:
            submit(core, client, now_s)
    batch_id = core.job.provider_batch_id
    if core.job.state == "submitted" and batch_id is not None:
        try:
            snapshot = api.retrieve(client, batch_id)
            if not snapshot.ended and core.rescue_due(now_s) and not core.job.cancel_requested:
                snapshot = api.cancel(client, batch_id)
                core.request_cancel(now_s, rescue=True)
            core.observe(snapshot, now_s)
            if snapshot.ended:
                core.collect(snapshot, api.results(client, snapshot), now_s)
        except Exception as exc:
            if not api.transient(exc):
                raise
            log.warning("spendguard: could not check %s (%s); trying again later",
                        core.job.id, exc)
    for item in core.fallback_targets(now_s):
        try:
            response = api.call(client, core.job.endpoint, core.bodies[item.custom_id])
        except Exception as exc:  # refused by the budget, or failed: recorded, not raised
            core.fell_back(item, now_s, error=exc)
        else:
            core.fell_back(item, now_s, response=response)
    core.give_up(now_s)
    if core.job.state == "ended" and batch_id is not None and core.missing_responses():
        try:  # results settled before a restart (or elsewhere), not kept: fetch them again
            core.refill(api.results(client, api.retrieve(client, batch_id)))
        except Exception as exc:
            if not api.transient(exc):
                raise
            log.warning("spendguard: could not fetch the results of %s again (%s); trying "
                        "again later", core.job.id, exc)


async def aadvance(core: JobCore, client: Any, now_s: float) -> None:
    """The async twin of :func:`advance`."""
    api = core.api
    core.refresh()
    if core.job.state == "reserved":
        if core.rescue_due(now_s):
            core.abandon(now_s)
        else:
            await asubmit(core, client, now_s)
    batch_id = core.job.provider_batch_id
    if core.job.state == "submitted" and batch_id is not None:
        try:
            snapshot = await api.aretrieve(client, batch_id)
            if not snapshot.ended and core.rescue_due(now_s) and not core.job.cancel_requested:
                snapshot = await api.acancel(client, batch_id)
                core.request_cancel(now_s, rescue=True)
            core.observe(snapshot, now_s)
            if snapshot.ended:
                core.collect(snapshot, await api.aresults(client, snapshot), now_s)
        except Exception as exc:
            if not api.transient(exc):
                raise
            log.warning("spendguard: could not check %s (%s); trying again later",
                        core.job.id, exc)
    for item in core.fallback_targets(now_s):
        try:
            response = await api.acall(client, core.job.endpoint, core.bodies[item.custom_id])
        except Exception as exc:
            core.fell_back(item, now_s, error=exc)
        else:
            core.fell_back(item, now_s, response=response)
    core.give_up(now_s)
    if core.job.state == "ended" and batch_id is not None and core.missing_responses():
        try:
            core.refill(await api.aresults(client, await api.aretrieve(client, batch_id)))
        except Exception as exc:
            if not api.transient(exc):
                raise
            log.warning("spendguard: could not fetch the results of %s again (%s); trying "
                        "again later", core.job.id, exc)


def cancel(core: JobCore, client: Any, now_s: float) -> None:
    """The caller's cancel: the batch stops; what it did not finish is ``cancelled``."""
    batch_id = core.job.provider_batch_id
    if core.job.state == "reserved":
        core.cancel_unsubmitted(now_s)
    elif core.job.state == "submitted" and batch_id is not None:
        snapshot = core.api.cancel(client, batch_id)
        core.request_cancel(now_s, rescue=False)
        core.observe(snapshot, now_s)
        if snapshot.ended:
            core.collect(snapshot, core.api.results(client, snapshot), now_s)


async def acancel(core: JobCore, client: Any, now_s: float) -> None:
    """The async twin of :func:`cancel`."""
    batch_id = core.job.provider_batch_id
    if core.job.state == "reserved":
        core.cancel_unsubmitted(now_s)
    elif core.job.state == "submitted" and batch_id is not None:
        snapshot = await core.api.acancel(client, batch_id)
        core.request_cancel(now_s, rescue=False)
        core.observe(snapshot, now_s)
        if snapshot.ended:
            core.collect(snapshot, await core.api.aresults(client, snapshot), now_s)
