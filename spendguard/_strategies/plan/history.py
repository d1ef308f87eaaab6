"""What past calls of the same model and task produced: output tokens and latency.

A plan expects each request to use its whole output cap unless the ledger knows better: once
calls tagged ``task=<name>`` (``plan(..., task=...)`` tags its run's calls so) have settled
for a model, their mean output and latency are used instead, and the plan says so.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from spendguard._budget.ledger.base import Ledger, SpendRecord

__all__ = ["TASK_TAG", "Observed", "observed"]

TASK_TAG = "task"


@dataclass(frozen=True, slots=True)
class Observed:
    """Means over the settled calls of one model on one task."""

    calls: int
    mean_output_tokens: float
    mean_latency_s: float | None


def _summarise(records: Iterable[SpendRecord]) -> Observed | None:
    calls = output = 0
    latency = 0.0
    timed = 0
    for record in records:
        # Only reported usage teaches anything: estimated or failed calls are guesses.
        if record.status != "ok" or record.usage_estimated or "output" not in record.tokens:
            continue
        calls += 1
        output += record.tokens["output"]
        if record.latency_s is not None:
            latency += record.latency_s
            timed += 1
    if not calls:
        return None
    return Observed(calls, output / calls, latency / timed if timed else None)


def observed(ledger: Ledger, task: str, models: Iterable[str]) -> dict[str, Observed]:
    """Per model: the means of its settled calls on ``task`` (models with none are left out)."""
    found = {}
    for model in sorted(set(models)):
        summary = _summarise(ledger.records(tag=f"{TASK_TAG}={task}", model=model))
        if summary is not None:
            found[model] = summary
    return found
