"""Learned input bounds: reserve less for inexact input counts once the ledger shows the truth.

Claude's input cannot be counted exactly offline, so :mod:`spendguard._costing.tokens` reserves a
static bound (o200k × the generation's ratio × ``CLAUDE_MARGIN``) that is often 1.4–2× what
is billed. Every settled call leaves a pair in the ledger: the bound that was counted
(``estimated_input_tokens``, or the :data:`STATIC_BOUND_TAG` when a learned bound was
reserved) and the input billed (uncached + cache reads + cache writes). Per ledger and per
(provider, model), this module keeps the billed ÷ counted ratios of the last :data:`WINDOW`
usable calls and reserves ``counted × min(1, max(ratios) × SAFETY)``.

The guarantee: if the next call's ratio is exchangeable with the ``n`` in the window (same
kind of traffic), the chance that it exceeds the window's maximum is at most ``1/(n+1)``;
the ``SAFETY`` factor only makes that rarer. With ``n`` from :data:`MIN_SAMPLES` (20) to
:data:`WINDOW` (500) that is at most 4.8 % to 0.2 % of calls. A call that does exceed its
bound is charged what was billed (``status="overrun"``, a ``CallOverrun`` warning), and its
ratio enters the window at the next refresh, so the bound re-learns. Traffic that changes
shape (a new tokenizer, much shorter prompts) is not exchangeable: expect overruns until the
window sees it. The learned bound never exceeds the static bound and is never used with
fewer than :data:`MIN_SAMPLES` samples.

Reading the ledger happens on a model's first call and then once per :data:`REFRESH_CALLS`
calls (:data:`MIN_SAMPLES` while history is thin) or :data:`REFRESH_S` seconds, whichever
comes first, reading only records newer than those already seen; one thread reads while the
others use the factor they have. A ledger that cannot be read gives the static bound (logged
once per ledger), never a failed call.
"""

from __future__ import annotations

import logging
import math
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from decimal import ROUND_CEILING, Decimal
from typing import TYPE_CHECKING

from spendguard._budget.ledger.base import Ledger, SpendRecord
from spendguard._budget.scopes import collect_budgets
from spendguard._core.periods import utc_now
from spendguard._costing.calls import Call
from spendguard._costing.estimate import Estimate, max_output_tokens, worst_cost_usd
from spendguard._costing.prices import PriceTable
from spendguard._costing.tokens import TokenCount

if TYPE_CHECKING:
    from spendguard._budget.budget import Budget

__all__ = ["MIN_SAMPLES", "REFRESH_CALLS", "REFRESH_S", "SAFETY", "STATIC_BOUND_TAG", "WINDOW",
           "learned_input_bound"]

log = logging.getLogger("spendguard")

WINDOW = 500
"""The most recent usable calls per (provider, model) whose ratios are kept."""
MIN_SAMPLES = 20
"""Fewer usable calls than this: the static bound (``1/(n+1)`` would be above 5 %)."""
SAFETY = Decimal("1.02")
"""Headroom over the largest ratio seen, for prompts a little unlike the window's."""
REFRESH_CALLS = 100
REFRESH_S = 60.0
LOOKBACK = (timedelta(hours=1), timedelta(days=1), timedelta(days=30))
"""How far back a model's first read looks, widened until the window is full."""
STATIC_BOUND_TAG = "spendguard.static_input_bound"
"""On a call reserved with a learned bound: the static bound it replaced (tokens)."""
_USABLE_STATUSES = frozenset({"ok", "overrun"})  # billed and read from the provider's usage
_FACTOR_STEP = Decimal("0.0001")


@dataclass(slots=True)
class _ModelWindow:
    """One (provider, model)'s recent ratios and when they were last read."""

    ratios: OrderedDict[str, Decimal] = field(default_factory=OrderedDict)  # record id -> ratio
    newest: datetime | None = None
    factor: Decimal | None = None
    calls: int = 0
    read_at: float = -math.inf
    reading: bool = False

    def due(self, now_s: float) -> bool:
        # While history is thin, read again as soon as it could have become enough.
        every = REFRESH_CALLS if len(self.ratios) >= MIN_SAMPLES else MIN_SAMPLES
        return not self.reading and (self.calls >= every or now_s - self.read_at >= REFRESH_S)

    def add(self, records: Iterable[SpendRecord], provider: str) -> None:
        for record in records:
            self.newest = record.time if self.newest is None else max(self.newest, record.time)
            ratio = _ratio(record, provider)
            if ratio is not None and record.id not in self.ratios:
                self.ratios[record.id] = ratio
                if len(self.ratios) > WINDOW:
                    self.ratios.popitem(last=False)
        self.factor = _factor(self.ratios.values())


class _Learner:
    """The learned factors of one ledger, per (provider, model); thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._models: dict[tuple[str, str], _ModelWindow] = {}
        self._failed = False

    def factor(self, ledger: Ledger, provider: str, model: str) -> Decimal | None:
        """The factor to apply to ``model``'s counted input, or None for the static bound."""
        now_s = time.monotonic()
        with self._lock:
            window = self._models.setdefault((provider, model), _ModelWindow())
            window.calls += 1
            if not window.due(now_s):
                return window.factor
            window.reading = True
        try:
            self._read(ledger, provider, model, window)
        except Exception:
            window.factor = None  # unsure what the ledger holds now: the static bound
            if not self._failed:
                self._failed = True
                log.warning("spendguard could not read the ledger %s to learn input bounds; "
                            "calls reserve the static bound until it can", ledger.url,
                            exc_info=True)
        finally:
            with self._lock:
                window.reading = False
                window.calls = 0
                window.read_at = now_s
        return window.factor

    @staticmethod
    def _read(ledger: Ledger, provider: str, model: str, window: _ModelWindow) -> None:
        if window.newest is not None:  # only what is newer than what was seen
            window.add(ledger.records(since=window.newest, model=model), provider)
            return
        now = utc_now()
        for back in LOOKBACK:
            fresh = _ModelWindow()
            fresh.add(ledger.records(since=now - back, model=model), provider)
            if len(fresh.ratios) >= WINDOW or back == LOOKBACK[-1]:
                window.ratios, window.newest = fresh.ratios, fresh.newest or now
                window.factor = fresh.factor
                return


_learners: weakref.WeakKeyDictionary[Ledger, _Learner] = weakref.WeakKeyDictionary()
_learners_lock = threading.Lock()


def _learner(ledger: Ledger) -> _Learner:
    with _learners_lock:
        learner = _learners.get(ledger)
        if learner is None:
            learner = _learners[ledger] = _Learner()
        return learner


def _ratio(record: SpendRecord, provider: str) -> Decimal | None:
    """Billed input ÷ the static bound counted for it, for a call usable as a sample."""
    if (record.provider != provider or record.status not in _USABLE_STATUSES
            or record.input_exact is not False or record.usage_estimated):
        return None
    try:
        counted = int(record.tags.get(STATIC_BOUND_TAG, record.estimated_input_tokens or 0))
    except ValueError:
        return None
    billed = sum(n for kind, n in record.tokens.items()
                 if kind == "input" or kind.startswith("cache_"))
    # No input billed at all says nothing about the tokenizer (and would learn a zero bound).
    return Decimal(billed) / counted if counted > 0 and billed > 0 else None


def _factor(ratios: Iterable[Decimal]) -> Decimal | None:
    """``min(1, max × SAFETY)`` once there are :data:`MIN_SAMPLES` ratios, else None."""
    values = list(ratios)
    if len(values) < MIN_SAMPLES:
        return None
    factor = (max(values) * SAFETY).quantize(_FACTOR_STEP, rounding=ROUND_CEILING)
    return None if factor >= 1 else factor


def _learning_ledger(budget: Budget | None,
                     budgets: tuple[Budget, ...] | None) -> Ledger | None:
    """The ledger whose history bounds a call: the client's budget's, else the innermost
    budget's; None when no budget applies or one of them opted out (``learn_bounds=False``)."""
    if budgets is None:
        budgets = collect_budgets(budget)
    if not budgets or not all(b.learn_bounds for b in budgets):
        return None
    return (budget or budgets[-1]).ledger


def learned_input_bound(budget: Budget | None, call: Call, estimate: Estimate,
                        table: PriceTable, *, budgets: tuple[Budget, ...] | None = None,
                        ) -> tuple[Estimate, Mapping[str, str]]:
    """``estimate`` with its inexact input bound tightened from the ledger's history, and the
    tags that let later calls learn from this one; ``estimate`` itself (no tags) when there is
    no history to learn from, the input is exact, or the ledger cannot be read. ``budgets``
    are the call's (``collect_budgets(budget)``), when the caller has them already."""
    counted = estimate.input_tokens
    # An explicit cache's worst case also holds its storage, which a learned bound would drop.
    if counted.exact or counted <= 0 or call.endpoint.cache_storage:
        return estimate, {}
    try:
        ledger = _learning_ledger(budget, budgets)
    except Exception:  # opening the ledger failed: reserving will say why
        return estimate, {}
    factor = None if ledger is None else _learner(ledger).factor(ledger, call.provider.value,
                                                                 call.model)
    if factor is None:
        return estimate, {}
    value = math.ceil(int(counted) * factor)
    expected = min(counted.expected, value)
    margin = (Decimal(value) / expected - 1).quantize(_FACTOR_STEP, rounding=ROUND_CEILING) \
        if 0 < expected < value else Decimal(0)
    learned = TokenCount(value, exact=False, margin=margin, expected=expected,
                         method=f"{counted.method}; learned bound ×{factor} of the static")
    # The entry that priced the static worst case prices the learned one (no second look-up).
    model_price = estimate.price or table.get(call.model)
    output = max_output_tokens(call, model_price, value)
    tightened = replace(estimate, input_tokens=learned, output_tokens_worst=output,
                        worst_usd=worst_cost_usd(call, value, output, price=model_price))
    return tightened, {STATIC_BOUND_TAG: str(int(counted))}
