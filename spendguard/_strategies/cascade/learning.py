"""Learning which cascade tiers are worth trying, per task name.

A tier that almost never passes a task's check is only money spent before the escalation that
follows anyway, so :class:`Learning` skips it, except on a random ``explore`` share of calls
that keeps re-testing it (the rng is injected, so runs are reproducible). The statistics live
in a small pluggable store: :class:`MemoryStats` here, ``LedgerStats`` over the spend ledger.
"""

from __future__ import annotations

import os
import random
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Protocol

from spendguard._budget.ledger import open_ledger
from spendguard._budget.ledger.base import Ledger, SpendRecord
from spendguard._core.errors import ConfigError
from spendguard._core.money import ZERO
from spendguard._core.periods import utc_now

__all__ = [
    "Learning",
    "LedgerStats",
    "MemoryStats",
    "Savings",
    "SkipDecision",
    "StatsStore",
    "TierStats",
]


@dataclass(frozen=True, slots=True)
class TierStats:
    """How often one model passed one task's check."""

    tries: int = 0
    passes: int = 0

    @property
    def pass_rate(self) -> float:
        """Share of tries that passed (0.0 with no tries)."""
        return self.passes / self.tries if self.tries else 0.0


@dataclass(frozen=True, slots=True)
class Savings:
    """What cascades cost next to always calling the largest model, in USD."""

    runs: int = 0
    cost_usd: Decimal = ZERO
    baseline_usd: Decimal = ZERO

    @property
    def saved_usd(self) -> Decimal:
        """Baseline minus actual (negative when the cascade cost more)."""
        return self.baseline_usd - self.cost_usd

    @property
    def saved_fraction(self) -> float:
        """Saved share of the baseline (0.0 with no baseline)."""
        return float(self.saved_usd / self.baseline_usd) if self.baseline_usd else 0.0


class StatsStore(Protocol):
    """Where per-task tier statistics are kept."""

    def tier_stats(self, task: str, model: str) -> TierStats:
        """Tries and passes of ``model`` on ``task`` so far."""
        ...

    def record_attempt(self, task: str, model: str, *, passed: bool, cost_usd: Decimal) -> None:
        """Remember one checked attempt."""
        ...

    def record_run(self, task: str, *, cost_usd: Decimal, baseline_usd: Decimal) -> None:
        """Remember one finished cascade and its always-largest baseline."""
        ...

    def savings(self, task: str | None = None) -> Savings:
        """Totals over one task, or all of them."""
        ...


class MemoryStats:
    """Tier statistics and savings in process memory (lost at exit; the test double)."""

    def __init__(self) -> None:
        self._tiers: dict[tuple[str, str], TierStats] = defaultdict(TierStats)
        self._savings: dict[str, Savings] = defaultdict(Savings)

    def tier_stats(self, task: str, model: str) -> TierStats:
        return self._tiers.get((task, model), TierStats())

    def record_attempt(self, task: str, model: str, *, passed: bool, cost_usd: Decimal) -> None:
        old = self._tiers[task, model]
        self._tiers[task, model] = TierStats(old.tries + 1, old.passes + int(passed))

    def record_run(self, task: str, *, cost_usd: Decimal, baseline_usd: Decimal) -> None:
        old = self._savings[task]
        self._savings[task] = Savings(old.runs + 1, old.cost_usd + cost_usd,
                                      old.baseline_usd + baseline_usd)

    def savings(self, task: str | None = None) -> Savings:
        if task is not None:
            return self._savings.get(task, Savings())
        parts = list(self._savings.values())
        return Savings(sum(s.runs for s in parts), sum((s.cost_usd for s in parts), ZERO),
                       sum((s.baseline_usd for s in parts), ZERO))


TASK_TAG, MODEL_TAG, OUTCOME_TAG = "cascade.task", "cascade.model", "cascade.outcome"
COST_TAG, BASELINE_TAG = "cascade.cost_usd", "cascade.baseline_usd"
OUTCOME_NOTE = "cascade outcome (a $0 marker, not a charge)"


class LedgerStats(MemoryStats):
    """Tier statistics kept in the spend ledger, so they outlive the process and are shared.

    Each checked attempt and each finished cascade is written as a $0 adjustment record (it
    charges no scope) tagged ``cascade.task``, ``cascade.model`` and ``cascade.outcome``
    (``pass``, ``fail`` or ``run``; runs also carry their cost and baseline). A task's records
    are read once, on first use, then kept up to date in memory; :meth:`refresh` re-reads them
    (to see other processes' outcomes).
    """

    def __init__(self, ledger: Ledger | str | os.PathLike[str] | None = None, *,
                 clock: Callable[[], datetime] = utc_now) -> None:
        super().__init__()
        self.ledger: Ledger = ledger if isinstance(ledger, Ledger) else open_ledger(ledger)
        self.clock = clock
        self._loaded: set[str] = set()

    def refresh(self) -> None:
        """Forget what was read; the next look-up reads the ledger again."""
        self._tiers.clear()
        self._savings.clear()
        self._loaded.clear()

    def _load(self, task: str) -> None:
        if task in self._loaded:
            return
        self._loaded.add(task)
        for record in self.ledger.records(tag=f"{TASK_TAG}={task}"):
            self._replay(task, record)

    def _replay(self, task: str, record: SpendRecord) -> None:
        outcome = record.tags.get(OUTCOME_TAG)
        if outcome in ("pass", "fail"):
            MemoryStats.record_attempt(self, task, record.tags.get(MODEL_TAG, ""),
                                       passed=outcome == "pass", cost_usd=ZERO)
        elif outcome == "run":
            MemoryStats.record_run(self, task, cost_usd=Decimal(record.tags[COST_TAG]),
                                   baseline_usd=Decimal(record.tags[BASELINE_TAG]))

    def _mark(self, tags: dict[str, str]) -> None:
        self.ledger.adjust([], ZERO, time=self.clock(), note=OUTCOME_NOTE, tags=tags)

    def tier_stats(self, task: str, model: str) -> TierStats:
        self._load(task)
        return super().tier_stats(task, model)

    def record_attempt(self, task: str, model: str, *, passed: bool, cost_usd: Decimal) -> None:
        self._load(task)
        self._mark({TASK_TAG: task, MODEL_TAG: model, OUTCOME_TAG: "pass" if passed else "fail"})
        super().record_attempt(task, model, passed=passed, cost_usd=cost_usd)

    def record_run(self, task: str, *, cost_usd: Decimal, baseline_usd: Decimal) -> None:
        self._load(task)
        self._mark({TASK_TAG: task, OUTCOME_TAG: "run", COST_TAG: str(cost_usd),
                    BASELINE_TAG: str(baseline_usd)})
        super().record_run(task, cost_usd=cost_usd, baseline_usd=baseline_usd)

    def savings(self, task: str | None = None) -> Savings:
        if task is None:
            for record in self.ledger.records(tag=f"{OUTCOME_TAG}=run"):
                self._load(record.tags.get(TASK_TAG, ""))
        else:
            self._load(task)
        return super().savings(task)


@dataclass(frozen=True, slots=True)
class SkipDecision:
    """Whether to try a tier, and why (shown in the cascade's trace when skipped)."""

    attempt: bool
    reason: str = ""


class Learning:
    """Skips tiers that almost never pass a task, re-testing them on a share of calls.

    A tier is skipped once it has ``min_tries`` checked attempts on the task and passed fewer
    than ``skip_below`` of them, except with probability ``explore`` per call. Break-even for
    cost alone is a pass rate equal to the price ratio of this tier to the next; set it higher
    to also avoid leaning on a leaky check where the small model is usually wrong.
    """

    def __init__(self, store: StatsStore | None = None, *, skip_below: float = 0.1,
                 min_tries: int = 20, explore: float = 0.1,
                 rng: random.Random | None = None) -> None:
        if not 0.0 <= skip_below <= 1.0:
            raise ConfigError(f"skip_below: expected a pass rate in [0, 1], got {skip_below}")
        if not 0.0 <= explore <= 1.0:
            raise ConfigError(f"explore: expected a probability in [0, 1], got {explore}")
        if min_tries < 1:
            raise ConfigError(f"min_tries: expected at least 1, got {min_tries}")
        self.store: StatsStore = store if store is not None else MemoryStats()
        self.skip_below = skip_below
        self.min_tries = min_tries
        self.explore = explore
        self.rng = rng if rng is not None else random.Random()

    def decide(self, task: str, model: str) -> SkipDecision:
        """Try ``model`` on ``task`` now? (The cascade never asks this for its last tier.)"""
        stats = self.store.tier_stats(task, model)
        if stats.tries < self.min_tries or stats.pass_rate >= self.skip_below:
            return SkipDecision(True)
        # Draw only when the rule says skip, so the rng sequence depends on skips alone.
        if self.rng.random() < self.explore:
            return SkipDecision(True, "re-testing a tier that rarely passes")
        return SkipDecision(False, f"learned: passed {stats.passes} of {stats.tries} tries on "
                                   f"task {task!r} (below {self.skip_below:.0%})")

    def record_attempt(self, task: str, model: str, *, passed: bool, cost_usd: Decimal) -> None:
        """Feed one checked attempt back into the store."""
        self.store.record_attempt(task, model, passed=passed, cost_usd=cost_usd)

    def record_run(self, task: str, *, cost_usd: Decimal, baseline_usd: Decimal) -> None:
        """Feed one finished cascade's cost and baseline into the store."""
        self.store.record_run(task, cost_usd=cost_usd, baseline_usd=baseline_usd)

    def savings(self, task: str | None = None) -> Savings:
        """Cost against always using the largest model, over one task or all."""
        return self.store.savings(task)
