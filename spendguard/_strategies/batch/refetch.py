"""Every result of a finished batch job again, downloaded from the provider: nothing is changed.

What ``spendguard batches results JOB`` prints. An application that lost results it had
acknowledged (a disk that failed after the result was written) reads them here for as long as
the provider keeps a batch's output: OpenAI's output files by default for 30 days, Anthropic's
Message Batch results for 29 days (see docs/batching.md for the sources). Nothing is settled,
acknowledged or resubmitted; the ledger is only read.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from spendguard._budget.ledger.jobs import job_store
from spendguard._core.errors import ConfigError
from spendguard._strategies.batch.actions import Fetch, Poll, Steps
from spendguard._strategies.batch.context import client_context, ledger_for, live_ledgers
from spendguard._strategies.batch.holds import Holds
from spendguard._strategies.batch.job import JobCore
from spendguard._strategies.batch.results import BatchResult
from spendguard._strategies.batch.run import LedgerArg
from spendguard._strategies.batch.shells import drive

__all__ = ["batch_results"]

_NOT_KEPT = ("this fallback response was handed over and is not kept; no provider returns an "
             "ordinary call's answer again")


def batch_results(client: Any, job_id: str, *, ledger: LedgerArg = None) -> list[BatchResult]:
    """Every final result of job ``job_id`` in request order, batch responses fetched again.

    Raises ``ConfigError`` for an unknown job or one of another provider, and the provider's
    error when it no longer has the batch's output.
    """
    context = client_context(client)
    chosen = ledger_for(ledger, context.budget)
    store = job_store(chosen)
    job = store.get(job_id)
    if job is None:
        raise ConfigError(f"job_id: no batch job {job_id!r} in this ledger; `spendguard "
                          f"batches list` shows the jobs (add --ledger URL for another ledger)")
    if job.provider != context.provider.value:
        raise ConfigError(f"client: job {job_id} ran on {job.provider}, not on "
                          f"{context.provider.value}")
    items = store.items(job.id)
    core = JobCore(store, job, items, Holds(ledgers=live_ledgers(chosen, context.budget)),
                   context.api, context.table)
    if job.provider_batch_id is not None and any(
            item.route == "batch" and item.state == "succeeded" for item in items):
        drive(_responses(core, job.provider_batch_id), context)
    results = []
    for item in items:
        if not item.final:
            continue
        result = core.result(item)
        if result.ok and result.response is None:
            result = replace(result, error={"message": _NOT_KEPT if item.route == "fallback"
                                            else "the provider no longer returns this result"})
        results.append(result)
    return results


def _responses(core: JobCore, batch_id: str) -> Steps[None]:
    """Hold the batch's response bodies on ``core`` again, if the batch ended."""
    snapshot = yield Poll(batch_id)
    if snapshot.ended:
        for line in (yield Fetch(snapshot)):
            outcome = core.api.outcome(line, core.job.endpoint)
            if outcome.body is not None:
                core.responses[outcome.custom_id] = outcome.body
