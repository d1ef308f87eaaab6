"""The plan worker's decisions, sans I/O: whether to start, what to send next, what came back.

The runners (:mod:`.runner`: threads, or asyncio tasks) are shells around :class:`PlanWork`.
Before anything is sent :func:`check` and :func:`question` decide whether the run may start
(a plan over budget goes to ``approve`` as a :class:`Question`); then each worker asks
:meth:`PlanWork.next` for an action — :class:`Send` a request, :attr:`Idle.WAIT` for one in
flight, :attr:`Idle.STOP` — carries a send out through the SDK client and hands the
:class:`Reply` to :meth:`PlanWork.record`. Nothing here calls a provider, waits or locks: the
shells hold their own lock around every call (the pattern of https://sans-io.readthedocs.io/).
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from decimal import Decimal
from enum import Enum
from typing import Any

from spendguard._budget.budget import Budget
from spendguard._budget.scopes import tags
from spendguard._caching.stats import EXPECTED_HIT_TAG, EXPECTED_USD_TAG
from spendguard._core.errors import ConfigError
from spendguard._core.money import ZERO
from spendguard._core.periods import utc_now
from spendguard._costing.cost import billable_tier, cost
from spendguard._costing.prices import PriceTable
from spendguard._costing.usage import usage_from
from spendguard._strategies import replies
from spendguard._strategies.plan.approval import ledger_for, needs_approval, refusal
from spendguard._strategies.plan.history import TASK_TAG
from spendguard._strategies.plan.inputs import PlannedRequest
from spendguard._strategies.plan.model import Approve, Plan
from spendguard._strategies.plan.progress import Progress
from spendguard._strategies.plan.results import PlanResult, RequestOutcome
from spendguard._strategies.plan.schedule import Schedule

__all__ = ["MARKER_NOTE", "PLAN_TAG", "Idle", "PlanWork", "Question", "Reply", "Send", "check",
           "question", "sdk_call"]

PLAN_TAG = "plan.id"
MARKER_NOTE = "plan estimate (a $0 marker, not a charge)"
_SIGNATURES: dict[Any, frozenset[str]] = {}


def check(plan: Plan, client: Any, concurrency: int, *, want_async: bool) -> None:
    """Refuse, before anything is sent, a run its client or requests cannot make."""
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ConfigError(f"concurrency: expected a whole number >= 1, got {concurrency!r}")
    provider = replies.provider_of(client)
    if replies.is_async_client(client) != want_async:
        fix = "await plan.arun(client)" if not want_async else "plan.run(client)"
        raise ConfigError(f"client: a {'sync' if not want_async else 'async'} run needs a "
                          f"{'sync' if not want_async else 'async'} client; use {fix}")
    others = sorted({r.provider for r in plan.requests} - {provider})
    if others:
        raise ConfigError(f"client: this {provider} client cannot send the plan's {others[0]} "
                          f"requests; plan each provider's requests separately")
    streamed = next((r.index for r in plan.requests if r.body.get("stream")), None)
    if streamed is not None:
        raise ConfigError(f"requests[{streamed}]: stream=True; a plan's replies must be complete "
                          "to be measured, so remove 'stream' from its requests")


@dataclass(frozen=True, slots=True)
class Question:
    """A plan over budget, to put to ``approve`` before anything is sent."""

    plan: Plan
    budget: Budget
    approve: Approve

    def answer(self, approved: object) -> None:
        """Refuse the run (``BudgetExceeded``, nothing sent) unless ``approve`` said yes."""
        if not approved:
            raise refusal(self.plan, self.budget, asked=True)


def question(plan: Plan, client: Any, approve: Approve | None) -> tuple[Plan, Question | None]:
    """The plan with what its budgets have left, and what to ask ``approve`` (None: it fits).

    A plan over budget without ``approve`` is refused here.
    """
    remaining, budget = needs_approval(plan, client)
    checked = replace(plan, budget_left_usd=remaining)
    if budget is None:
        return checked, None
    if approve is None:
        raise refusal(checked, budget, asked=False)
    return checked, Question(checked, budget, approve)


class Idle(Enum):
    """What a worker does when there is nothing to send now."""

    WAIT = "wait"
    """Wait for a request in flight to be answered: it may free the ones waiting for it."""
    STOP = "stop"
    """Stop: every request was taken (or the run was cancelled)."""


@dataclass(frozen=True, slots=True)
class Send:
    """Send request ``index`` of the plan."""

    index: int
    request: PlannedRequest


@dataclass(frozen=True, slots=True)
class Reply:
    """What a send brought back: the SDK's reply, or the exception it raised."""

    response: Any = None
    error: Exception | None = None


def sdk_call(client: Any, send: Send) -> tuple[Any, dict[str, Any]]:
    """The SDK method that makes a send and its keyword arguments (unknown fields in
    ``extra_body``, so that nothing of the request is dropped)."""
    body = send.request.body
    method = send.request.endpoint.method_of(client)
    key = getattr(method, "__func__", method)
    if key not in _SIGNATURES:
        _SIGNATURES[key] = frozenset(inspect.signature(method).parameters)
    known = _SIGNATURES[key]
    if "extra_body" not in known:  # an SDK that takes nothing beyond its own arguments
        return method, replies.sdk_arguments(send.request.endpoint, body)
    arguments = {k: v for k, v in body.items() if k in known}
    extra = {k: v for k, v in body.items() if k not in known}
    if extra:
        arguments["extra_body"] = extra
    return method, arguments


def _outcome(request: PlannedRequest, reply: Reply, table: PriceTable | None) -> RequestOutcome:
    model = str(request.body.get("model"))
    if reply.error is not None:
        return RequestOutcome(request.index, request.custom_id, model, error=reply.error)
    try:
        usage = usage_from(request.provider, reply.response, endpoint=request.endpoint)
        tier = billable_tier(request.body.get("service_tier"))
        spent: Decimal | None = cost(model, usage, service_tier=tier, table=table).total
    except Exception as exc:  # the reply came back; its usage could not be read or priced
        return RequestOutcome(request.index, request.custom_id, model, reply.response,
                              error=exc)
    return RequestOutcome(request.index, request.custom_id, model, reply.response, None, usage,
                          spent)


class PlanWork:
    """An approved plan being sent: the schedule, each request's outcome, the progress bar.

    Not thread-safe: the shells call it under their own lock (or on one event loop).
    """

    def __init__(self, plan: Plan, *, warm_up: bool, progress: bool | None) -> None:
        self.plan = plan
        self.schedule = Schedule([row.after if warm_up else () for row in plan.rows])
        self.outcomes: list[RequestOutcome | None] = [None] * len(plan.requests)
        self.bar = Progress(len(plan.requests), enabled=progress)

    @classmethod
    def begin(cls, plan: Plan, client: Any, *, warm_up: bool,
              progress: bool | None) -> PlanWork:
        """Start sending: the plan's estimate goes to the ledger first, as a $0 marker."""
        ledger_for(client).adjust([], ZERO, time=utc_now(), note=MARKER_NOTE, tags={
            PLAN_TAG: plan.id, EXPECTED_USD_TAG: str(plan.expected_usd),
            EXPECTED_HIT_TAG: f"{plan.expected_hit_rate:.4f}"})
        return cls(plan, warm_up=warm_up, progress=progress)

    def workers(self, concurrency: int) -> int:
        """How many workers to start: no more than there are requests."""
        return min(concurrency, len(self.plan.requests))

    @contextmanager
    def tagged(self) -> Iterator[None]:
        """Every call of the run tagged ``plan.id`` (and ``task``) in the ledger."""
        labels = {PLAN_TAG: self.plan.id}
        if self.plan.task is not None:
            labels[TASK_TAG] = self.plan.task
        with tags(**labels):
            yield

    def next(self) -> Send | Idle:
        """What a worker does next: the earliest request free to go, else wait or stop."""
        index = self.schedule.take()
        if index is not None:
            return Send(index, self.plan.requests[index])
        return Idle.STOP if self.schedule.exhausted else Idle.WAIT

    def record(self, send: Send, reply: Reply) -> None:
        """A send came back (a failure is an outcome, never the run's exception)."""
        outcome = _outcome(send.request, reply, self.plan.table)
        self.outcomes[send.index] = outcome
        self.schedule.finish(send.index)
        self.bar.advance(outcome.cost_usd, failed=not outcome.ok)

    def cancel(self) -> None:
        """The run was interrupted: send nothing more."""
        self.schedule.cancel()

    def result(self) -> PlanResult:
        """The outcomes, in request order."""
        return PlanResult(self.plan, tuple(o for o in self.outcomes if o is not None))
