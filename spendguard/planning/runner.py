"""Running a plan: the sync (threads) and async (tasks) shells over one :class:`Schedule`.

Both shells do the same, in the same order: check the budget (and ask ``approve``), write
the plan's estimate to the ledger as a $0 marker, then send the requests with at most
``concurrency`` in flight, each one waiting for the request that writes its shared prefix.
Each call goes through the user's client, so a guarded client still reserves, refuses and
settles every call on its own. Calls are tagged ``plan.id`` (and ``task``) in the ledger.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from decimal import Decimal
from typing import Any

from spendguard import replies
from spendguard.cache_order.stats import EXPECTED_HIT_TAG, EXPECTED_USD_TAG
from spendguard.costing import billable_tier, cost
from spendguard.errors import ConfigError
from spendguard.money import ZERO
from spendguard.periods import utc_now
from spendguard.planning.approval import ledger_for, needs_approval, refusal
from spendguard.planning.history import TASK_TAG
from spendguard.planning.inputs import PlannedRequest
from spendguard.planning.model import Approve, Plan
from spendguard.planning.progress import Progress
from spendguard.planning.results import PlanResult, RequestOutcome
from spendguard.planning.schedule import Schedule
from spendguard.prices import PriceTable
from spendguard.scopes import tags
from spendguard.usage import usage_from

__all__ = ["arun_plan", "run_plan"]

PLAN_TAG = "plan.id"
MARKER_NOTE = "plan estimate (a $0 marker, not a charge)"
_SIGNATURES: dict[Any, frozenset[str]] = {}


def _check(plan: Plan, client: Any, concurrency: int, *, want_async: bool) -> None:
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


def _arguments(method: Any, body: dict[str, Any]) -> dict[str, Any]:
    """The body as keyword arguments; fields the SDK method does not name go in extra_body."""
    key = getattr(method, "__func__", method)
    if key not in _SIGNATURES:
        _SIGNATURES[key] = frozenset(inspect.signature(method).parameters)
    known = _SIGNATURES[key]
    arguments = {k: v for k, v in body.items() if k in known}
    extra = {k: v for k, v in body.items() if k not in known}
    if extra:
        arguments["extra_body"] = extra
    return arguments


def _outcome(request: PlannedRequest, response: Any = None,
             error: BaseException | None = None, *,
             table: PriceTable | None = None) -> RequestOutcome:
    model = str(request.body.get("model"))
    if error is not None:
        return RequestOutcome(request.index, request.custom_id, model, error=error)
    try:
        usage = usage_from(request.provider, response, endpoint=request.endpoint)
        tier = billable_tier(request.body.get("service_tier"))
        spent: Decimal | None = cost(model, usage, service_tier=tier, table=table).total
    except Exception as exc:  # the reply came back; its usage could not be read or priced
        return RequestOutcome(request.index, request.custom_id, model, response, error=exc)
    return RequestOutcome(request.index, request.custom_id, model, response, None, usage, spent)


@contextmanager
def _tagged(plan: Plan) -> Iterator[None]:
    labels = {PLAN_TAG: plan.id}
    if plan.task is not None:
        labels[TASK_TAG] = plan.task
    with tags(**labels):
        yield


def _mark_estimate(plan: Plan, client: Any) -> None:
    ledger_for(client).adjust([], ZERO, time=utc_now(), note=MARKER_NOTE, tags={
        PLAN_TAG: plan.id, EXPECTED_USD_TAG: str(plan.expected_usd),
        EXPECTED_HIT_TAG: f"{plan.expected_hit_rate:.4f}"})


def _approved(plan: Plan, client: Any, approve: Approve | None) -> Plan:
    checked, budget = needs_approval(plan, client)
    if budget is None:
        return checked
    if approve is None:
        raise refusal(checked, budget, asked=False)
    if not approve(checked):
        raise refusal(checked, budget, asked=True)
    return checked


def run_plan(plan: Plan, client: Any, *, concurrency: int, approve: Approve | None,
             progress: bool | None, warm_up: bool) -> PlanResult:
    """Send a plan's requests through a sync client (see :meth:`Plan.run`)."""
    _check(plan, client, concurrency, want_async=False)
    plan = _approved(plan, client, approve)
    _mark_estimate(plan, client)
    schedule = Schedule([row.after if warm_up else () for row in plan.rows])
    outcomes: list[RequestOutcome | None] = [None] * len(plan.requests)
    bar = Progress(len(plan.requests), enabled=progress)
    turn = threading.Condition()

    def send(request: PlannedRequest) -> RequestOutcome:
        try:
            method = request.endpoint.method_of(client)
            return _outcome(request, method(**_arguments(method, request.body)),
                            table=plan.table)
        except Exception as exc:
            return _outcome(request, error=exc)

    def worker() -> None:
        while True:
            with turn:
                index = schedule.take()
                while index is None:
                    if schedule.exhausted:
                        return
                    turn.wait()
                    index = schedule.take()
            outcome = send(plan.requests[index])
            with turn:
                outcomes[index] = outcome
                schedule.finish(index)
                bar.advance(outcome.cost_usd, failed=not outcome.ok)
                turn.notify_all()

    with _tagged(plan):
        # Each thread starts from a copy of this context: the budgets entered around the run
        # and the plan's tags follow every call.
        threads = [threading.Thread(target=contextvars.copy_context().run, args=(worker,),
                                    name=f"spendguard-plan-{n}", daemon=True)
                   for n in range(min(concurrency, len(plan.requests)))]
        try:
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        except BaseException:
            with turn:
                schedule.cancel()
                turn.notify_all()
            raise
        finally:
            bar.close()
    return PlanResult(plan, tuple(o for o in outcomes if o is not None))


async def arun_plan(plan: Plan, client: Any, *, concurrency: int, approve: Approve | None,
                    progress: bool | None, warm_up: bool) -> PlanResult:
    """The async twin of :func:`run_plan`."""
    _check(plan, client, concurrency, want_async=True)
    plan, budget = needs_approval(plan, client)
    if budget is not None:
        if approve is None:
            raise refusal(plan, budget, asked=False)
        decision = approve(plan)
        if not (await decision if inspect.isawaitable(decision) else decision):
            raise refusal(plan, budget, asked=True)
    _mark_estimate(plan, client)
    schedule = Schedule([row.after if warm_up else () for row in plan.rows])
    outcomes: list[RequestOutcome | None] = [None] * len(plan.requests)
    bar = Progress(len(plan.requests), enabled=progress)
    turn = asyncio.Condition()

    async def send(request: PlannedRequest) -> RequestOutcome:
        try:
            method = request.endpoint.method_of(client)
            return _outcome(request, await method(**_arguments(method, request.body)),
                            table=plan.table)
        except Exception as exc:
            return _outcome(request, error=exc)

    async def worker() -> None:
        while True:
            async with turn:
                index = schedule.take()
                while index is None:
                    if schedule.exhausted:
                        return
                    await turn.wait()
                    index = schedule.take()
            outcome = await send(plan.requests[index])
            async with turn:
                outcomes[index] = outcome
                schedule.finish(index)
                bar.advance(outcome.cost_usd, failed=not outcome.ok)
                turn.notify_all()

    with _tagged(plan):
        try:
            await asyncio.gather(*(worker() for _ in range(min(concurrency,
                                                               len(plan.requests)))))
        except BaseException:
            schedule.cancel()
            raise
        finally:
            bar.close()
    return PlanResult(plan, tuple(o for o in outcomes if o is not None))
