"""Running a plan: the sync (threads) and async (tasks) shells over one :class:`PlanWork`.

Every decision is :mod:`.dispatch`'s: whether the run may start (the budget check, and
``approve``), which request goes next, what a reply means. A shell only asks ``approve``,
starts its workers, makes each call through the user's client and hands the reply back, with
at most ``concurrency`` calls in flight. A guarded client still reserves, refuses and settles
every call on its own; calls are tagged ``plan.id`` (and ``task``) in the ledger.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import threading
from typing import Any

from spendguard._strategies.plan.dispatch import (
    Idle,
    PlanWork,
    Reply,
    Send,
    check,
    question,
    sdk_call,
)
from spendguard._strategies.plan.model import Approve, Plan
from spendguard._strategies.plan.results import PlanResult

__all__ = ["arun_plan", "run_plan"]


def _call(client: Any, send: Send) -> Reply:
    try:
        method, arguments = sdk_call(client, send)
        return Reply(method(**arguments))
    except Exception as exc:  # the core records it as the request's outcome
        return Reply(error=exc)


async def _acall(client: Any, send: Send) -> Reply:
    try:
        method, arguments = sdk_call(client, send)
        return Reply(await method(**arguments))
    except Exception as exc:
        return Reply(error=exc)


def run_plan(plan: Plan, client: Any, *, concurrency: int, approve: Approve | None,
             progress: bool | None, warm_up: bool) -> PlanResult:
    """Send a plan's requests through a sync client (see :meth:`Plan.run`)."""
    check(plan, client, concurrency, want_async=False)
    plan, asked = question(plan, client, approve)
    if asked is not None:
        asked.answer(asked.approve(plan))
    work = PlanWork.begin(plan, client, warm_up=warm_up, progress=progress)
    turn = threading.Condition()

    def worker() -> None:
        while True:
            with turn:
                while (step := work.next()) is Idle.WAIT:
                    turn.wait()
            if not isinstance(step, Send):
                return
            reply = _call(client, step)
            with turn:
                work.record(step, reply)
                turn.notify_all()

    with work.tagged():
        # Each thread starts from a copy of this context: the budgets entered around the run
        # and the plan's tags follow every call.
        threads = [threading.Thread(target=contextvars.copy_context().run, args=(worker,),
                                    name=f"spendguard-plan-{n}", daemon=True)
                   for n in range(work.workers(concurrency))]
        try:
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        except BaseException:
            with turn:
                work.cancel()
                turn.notify_all()
            raise
        finally:
            work.bar.close()
    return work.result()


async def arun_plan(plan: Plan, client: Any, *, concurrency: int, approve: Approve | None,
                    progress: bool | None, warm_up: bool) -> PlanResult:
    """The async twin of :func:`run_plan` (``approve`` may be a coroutine function)."""
    check(plan, client, concurrency, want_async=True)
    plan, asked = question(plan, client, approve)
    if asked is not None:
        answer = asked.approve(plan)
        asked.answer(await answer if inspect.isawaitable(answer) else answer)
    work = PlanWork.begin(plan, client, warm_up=warm_up, progress=progress)
    turn = asyncio.Condition()

    async def worker() -> None:
        while True:
            async with turn:
                while (step := work.next()) is Idle.WAIT:
                    await turn.wait()
            if not isinstance(step, Send):
                return
            reply = await _acall(client, step)
            async with turn:
                work.record(step, reply)
                turn.notify_all()

    with work.tagged():
        try:
            await asyncio.gather(*(worker() for _ in range(work.workers(concurrency))))
        except BaseException:
            work.cancel()
            raise
        finally:
            work.bar.close()
    return work.result()
