"""Deferrable work through the providers' batch APIs, at their discount, losing nothing.

- ``client.deferred.chat.completions.create(...)`` / ``client.deferred.messages.create(...)``:
  the ordinary call, returning a :class:`Deferred` handle (``.result()`` or ``await``).
- :func:`batch` / :func:`abatch`: many requests at once, returning a :class:`BatchRun`.
- :func:`resume_batches`, :func:`reopen_batches`, :func:`batch_jobs`, :func:`cancel_batch`,
  :func:`batch_results`: jobs kept in the ledger, for a process that restarted (and for
  ``spendguard batches``). ``run.each()`` acknowledges each result as the caller advances.

Every request's worst case at batch prices is reserved before anything is submitted; each
result settles its own share; errored, expired and cancelled requests release theirs.
"""

from __future__ import annotations

from spendguard._strategies.batch.catalog import (
    BatchJob,
    acancel_batch,
    aresume_batches,
    batch_jobs,
    cancel_batch,
    reopen_batches,
    resume_batches,
)
from spendguard._strategies.batch.deferred import Deferred, DeferredAnthropic, DeferredOpenAI
from spendguard._strategies.batch.limits import BatchLimits
from spendguard._strategies.batch.polling import Polling
from spendguard._strategies.batch.refetch import batch_results
from spendguard._strategies.batch.requests import BatchRequest
from spendguard._strategies.batch.results import BatchResult
from spendguard._strategies.batch.run import BatchRun
from spendguard._strategies.batch.submit import abatch, batch

__all__ = [
    "BatchJob",
    "BatchLimits",
    "BatchRequest",
    "BatchResult",
    "BatchRun",
    "Deferred",
    "DeferredAnthropic",
    "DeferredOpenAI",
    "Polling",
    "abatch",
    "acancel_batch",
    "aresume_batches",
    "batch",
    "batch_jobs",
    "batch_results",
    "cancel_batch",
    "reopen_batches",
    "resume_batches",
]
