"""What happens to a job next, decided once for both shells: submit, poll, fetch, cancel, fall back.

Each function here is a sans-I/O core (a generator of :mod:`.actions`): it reads the job's
state from its :class:`~.job.JobCore`, yields the provider operation it needs, and records what
comes back through the core. It never calls the provider, sleeps or reads the clock (the
shell passes ``now_s``); :func:`~.shells.drive` and :func:`~.shells.adrive` carry the actions
out, so the sync and async paths take the same decisions by construction.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from spendguard._guard.metering import prereserved
from spendguard._strategies.batch.actions import Cancel, FallBack, Fetch, Find, Poll, Steps, Submit
from spendguard._strategies.batch.job import JobCore
from spendguard._strategies.batch.wire import Snapshot, Submitted

__all__ = ["advance", "cancel", "submit", "submit_all"]

log = logging.getLogger("spendguard.batching")


def submit(core: JobCore, now_s: float) -> Steps[None]:
    """Send a reserved job to the provider (after looking for one a crash left behind)."""
    job = core.job
    found = (yield Find(job.id)) if job.note == "submitting" else None
    if found is not None:
        core.submitted(Submitted((yield Poll(found))), now_s)
        return
    if core.bodies_missing():
        core.cannot_submit(now_s)
        return
    core.mark_submitting(now_s)
    try:
        # The worst case is already reserved per request: the guard lets this one through.
        with prereserved() as headers:
            sent = yield Submit(job.id, job.endpoint, core.pending_requests(), headers)
    except Exception as exc:
        core.submit_failed(exc, now_s)
        raise
    core.submitted(sent, now_s)


def submit_all(cores: Sequence[JobCore], now_s: float) -> Steps[None]:
    """Submit the parts of a new batch in order; the first refusal stops the rest."""
    for index, core in enumerate(cores):
        if core.rescue_due(now_s):
            continue  # too late for a batch: the first look sends it as ordinary calls
        try:
            yield from submit(core, now_s)
        except Exception as exc:
            for later in cores[index + 1:]:
                later.submit_failed(f"not submitted: an earlier part of the same batch was "
                                    f"refused ({type(exc).__name__}: {exc})", now_s)
            raise


def advance(core: JobCore, now_s: float) -> Steps[None]:
    """One look at a job: submit, poll, rescue, collect, fall back — whatever is due."""
    core.refresh()
    if core.job.state == "reserved":
        if core.rescue_due(now_s):
            core.abandon(now_s)
        else:
            yield from submit(core, now_s)
    batch_id = core.job.provider_batch_id
    if core.job.state == "submitted" and batch_id is not None:
        yield from _retried_later(core, _check(core, batch_id, now_s), "check %s")
    for item in core.fallback_targets(now_s):
        try:
            response = yield FallBack(core.job.endpoint, core.bodies[item.custom_id])
        except Exception as exc:  # refused by the budget, or failed: recorded, not raised
            core.fell_back(item, now_s, error=exc)
        else:
            core.fell_back(item, now_s, response=response)
    core.give_up(now_s)
    if core.job.state == "ended" and batch_id is not None and core.missing_responses():
        # Results settled before a restart (or elsewhere), not kept: fetch them again.
        yield from _retried_later(core, _refill(core, batch_id), "fetch the results of %s again")


def cancel(core: JobCore, now_s: float) -> Steps[None]:
    """The caller's cancel: the batch stops; what it did not finish is ``cancelled``."""
    batch_id = core.job.provider_batch_id
    if core.job.state == "reserved":
        core.cancel_unsubmitted(now_s)
    elif core.job.state == "submitted" and batch_id is not None:
        snapshot = yield Cancel(batch_id)
        core.request_cancel(now_s, rescue=False)
        yield from _observed(core, snapshot, now_s)


def _check(core: JobCore, batch_id: str, now_s: float) -> Steps[None]:
    """Poll a submitted batch; cancel it when its rescue is due; collect it once it ended."""
    snapshot = yield Poll(batch_id)
    if not snapshot.ended and core.rescue_due(now_s) and not core.job.cancel_requested:
        snapshot = yield Cancel(batch_id)
        core.request_cancel(now_s, rescue=True)
    yield from _observed(core, snapshot, now_s)


def _observed(core: JobCore, snapshot: Snapshot, now_s: float) -> Steps[None]:
    core.observe(snapshot, now_s)
    if snapshot.ended:
        core.collect(snapshot, (yield Fetch(snapshot)), now_s)


def _refill(core: JobCore, batch_id: str) -> Steps[None]:
    core.refill((yield Fetch((yield Poll(batch_id)))))


def _retried_later(core: JobCore, steps: Steps[None], what: str) -> Steps[None]:
    """A provider hiccup (connection, 5xx, 429) only postpones ``steps`` to the next look."""
    try:
        yield from steps
    except Exception as exc:
        if not core.api.transient(exc):
            raise
        log.warning("spendguard: could not %s (%s); trying again later", what % core.job.id,
                    exc)
