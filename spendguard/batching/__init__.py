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

from spendguard.batching.catalog import (
    BatchJob,
    acancel_batch,
    aresume_batches,
    batch_jobs,
    cancel_batch,
    reopen_batches,
    resume_batches,
)
from spendguard.batching.deferred import Deferred, DeferredAnthropic, DeferredOpenAI
from spendguard.batching.limits import BatchLimits
from spendguard.batching.polling import Polling
from spendguard.batching.refetch import batch_results
from spendguard.batching.requests import BatchRequest
from spendguard.batching.results import BatchResult
from spendguard.batching.run import BatchRun
from spendguard.batching.submit import abatch, batch

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
