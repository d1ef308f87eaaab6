"""Parity of the sync and async shells over the batching core, one scenario per twin.

Each scenario is written once and run twice on identical emulated worlds (same manual clock,
same emulator options): once through the sync functions with a sync client, once through
their async twins with an async client. What the provider received (every request, its
body and the moment it came), what the ledger recorded (spend records, jobs, items) and what
the caller got back must be the same, ids aside (job ids are random).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

import anthropic
import pytest

import spendguard
from spendguard import BatchLimits
from spendguard._budget.ledger.jobs import job_store
from spendguard._strategies.batch.job import JobCore
from spendguard._strategies.batch.polling import Round, apoll_until, poll_until
from spendguard.testing import EmulatedError, Prompt
from tests.batching_helpers import World, chat, content, echo, message

HOUR_S = 3600.0
_VOLATILE = {"id", "time", "latency_s"}  # record ids are random; budget times are wall-clock
_IDS = re.compile(r"[0-9a-f]{12,}")


class Crash(BaseException):
    """The process dies here (nothing after this line runs)."""


def fail_bad(prompt: Prompt) -> str:
    if "bad" in prompt.last_user_text:
        raise EmulatedError(400, "This request cannot be answered.")
    return echo(prompt)


class Twin:
    """One side of a parity test: the sync functions (run in a thread) or the async ones."""

    def __init__(self, is_async: bool, provider: str, **world: Any) -> None:
        self.is_async = is_async
        self.provider = provider
        self.world = World(scope="parity", **world)

    def client(self, **options: Any) -> Any:
        name = ("async_" if self.is_async else "") + self.provider
        return getattr(self.world, name)(**options)

    def request(self, text: str) -> dict[str, Any]:
        return {"openai": chat, "anthropic": message, "gemini": content}[self.provider](text)

    async def call(self, sync: Callable[..., Any], async_: Callable[..., Awaitable[Any]],
                   *args: Any, **kwargs: Any) -> Any:
        if self.is_async:
            return await async_(*args, **kwargs)
        return await asyncio.to_thread(sync, *args, **kwargs)

    async def batch(self, texts: list[str], **options: Any) -> spendguard.BatchRun:
        options.setdefault("polling", self.world.polling)
        return await self.call(spendguard.batch, spendguard.abatch,  # type: ignore[no-any-return]
                               [self.request(t) for t in texts],
                               client=options.pop("client", None) or self.client(), **options)


def _plain(value: Any) -> Any:
    """Dataclasses (records, jobs, results) and SDK objects as JSON-ready values."""
    if hasattr(value, "model_dump"):  # an SDK response object
        return value.model_dump()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)
                if f.name not in _VOLATILE}
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _normalised(value: Any) -> str:
    """JSON of ``value`` with each random id replaced by the order it first appears in."""
    text = json.dumps(_plain(value), default=str, sort_keys=True)
    seen: dict[str, str] = {}
    return _IDS.sub(lambda m: seen.setdefault(m.group(), f"<id{len(seen)}>"), text)


def trace(twin: Twin, returned: Any) -> str:
    """Everything a run did, as one comparable text."""
    world = twin.world
    ledger = world.budget.ledger
    jobs = spendguard.batch_jobs(ledger=ledger)
    store = job_store(ledger)
    return _normalised({
        "requests": [(r.method, r.path, r.body, r.time_s, r.status)
                     for r in world.emulator.requests],
        # Records of one batch share their time; the ledger orders those ties by random id.
        "records": sorted(ledger.records(), key=lambda r: (r.prompt_hash or "", r.status,
                                                           r.attempt, r.actual_usd)),
        "jobs": jobs,
        "items": [store.items(job.id) for job in store.jobs()],
        "progress": world.progress,
        "spent": world.budget.spent, "reserved": world.budget.reserved,
        "returned": returned,
    })


Scenario = Callable[[Twin], Awaitable[Any]]


async def assert_parity(scenario: Scenario, provider: str, **world: Any) -> None:
    sync_twin, async_twin = Twin(False, provider, **world), Twin(True, provider, **world)
    sync_trace = trace(sync_twin, await scenario(sync_twin))
    async_trace = trace(async_twin, await scenario(async_twin))
    if sync_trace != async_trace:  # show where they part
        at = next(i for i, (a, b) in enumerate(zip(sync_trace, async_trace, strict=False))
                  if a != b)
        assert sync_trace[at - 400:at + 200] == async_trace[at - 400:at + 200]
    assert sync_trace == async_trace
    assert sync_twin.world.emulator.requests  # the scenario did talk to the provider


PROVIDERS = pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini"])


@PROVIDERS
async def test_submit_poll_and_collect_are_the_same_in_both_shells(provider: str) -> None:
    async def scenario(twin: Twin) -> Any:
        run = await twin.batch(["a", "bad", "c"])
        return await twin.call(run.results, run.aresults)

    await assert_parity(scenario, provider, emulator_options={"respond": fail_bad})


@PROVIDERS
async def test_a_deadline_rescue_cancels_and_falls_back_the_same_way(provider: str) -> None:
    async def scenario(twin: Twin) -> Any:
        run = await twin.batch(["good", "bad", "late"], deadline=timedelta(hours=2),
                               fallback=True)
        return await twin.call(run.results, run.aresults)

    await assert_parity(scenario, provider, emulator_options={
        "batch_completion_s": 6 * HOUR_S, "respond": fail_bad})


@PROVIDERS
async def test_a_deadline_too_close_for_a_batch_goes_straight_to_ordinary_calls(
        provider: str) -> None:
    async def scenario(twin: Twin) -> Any:
        run = await twin.batch(["a", "b"], deadline=timedelta(minutes=5), fallback=True)
        return await twin.call(run.results, run.aresults)

    await assert_parity(scenario, provider)


@PROVIDERS
async def test_a_late_batch_without_fallback_times_out_the_same_way(provider: str) -> None:
    async def scenario(twin: Twin) -> Any:
        run = await twin.batch(["a"], deadline=timedelta(hours=1))
        with pytest.raises(TimeoutError):
            await twin.call(run.results, run.aresults)
        return None

    await assert_parity(scenario, provider, emulator_options={"batch_completion_s": 3 * HOUR_S})


@PROVIDERS
async def test_a_poll_that_fails_for_a_moment_is_retried_the_same_way(provider: str) -> None:
    async def scenario(twin: Twin) -> Any:
        run = await twin.batch(["a", "b"])
        twin.world.emulator.fail_next(2, status=500)  # the next look, and its retry
        return await twin.call(run.results, run.aresults)

    await assert_parity(scenario, provider)


async def test_a_part_the_provider_refuses_stops_the_parts_after_it_alike() -> None:
    async def scenario(twin: Twin) -> Any:
        client = twin.client()
        twin.world.emulator.fail_next(1, status=400, path="/v1/messages/batches")
        with pytest.raises(anthropic.BadRequestError):
            await twin.batch(["a", "b", "c"], client=client,
                             limits=BatchLimits(anthropic_max_requests=1))

    await assert_parity(scenario, "anthropic")


@PROVIDERS
async def test_each_acknowledges_in_the_same_order(provider: str) -> None:
    async def scenario(twin: Twin) -> Any:
        run = await twin.batch(["a", "b", "c"])
        if twin.is_async:
            return [r async for r in run.aeach()]
        return await asyncio.to_thread(lambda: list(run.each()))

    await assert_parity(scenario, provider)


@PROVIDERS
async def test_the_callers_cancel_is_the_same_in_both_shells(provider: str) -> None:
    async def scenario(twin: Twin) -> Any:
        run = await twin.batch(["a", "b"])
        await twin.call(run.cancel, run.acancel)
        return await twin.call(run.results, run.aresults)

    await assert_parity(scenario, provider, emulator_options={"batch_completion_s": 1000})


@PROVIDERS
async def test_cancel_batch_and_resume_batches_are_the_same_in_both_shells(
        provider: str) -> None:
    async def scenario(twin: Twin) -> Any:
        client = twin.client()
        ledger, clock = twin.world.budget.ledger, twin.world.clock
        first = await twin.batch(["a"], client=client)
        second = await twin.batch(["b", "c"], client=client)
        job = await twin.call(spendguard.cancel_batch, spendguard.acancel_batch, client,
                              second.job_ids[0], ledger=ledger, clock=clock)
        resumed = await twin.call(spendguard.resume_batches, spendguard.aresume_batches,
                                  client, ledger=ledger, polling=twin.world.polling)
        return [job, first.job_ids, second.job_ids, resumed]

    await assert_parity(scenario, provider, emulator_options={"batch_completion_s": 1000})


async def test_a_crashed_submission_is_found_again_the_same_way() -> None:
    async def scenario(twin: Twin) -> Any:
        client = twin.client()

        def die(self: JobCore, *args: object) -> None:
            raise Crash

        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(JobCore, "submitted", die)
            with pytest.raises(Crash):
                await twin.batch(["a", "b"], client=client, keep_bodies=True)
        return await twin.call(spendguard.resume_batches, spendguard.aresume_batches, client,
                               ledger=twin.world.budget.ledger, polling=twin.world.polling)

    await assert_parity(scenario, "openai")


@pytest.mark.parametrize("provider", ["openai", "anthropic"])  # client.deferred's clients
@pytest.mark.parametrize("flush", [False, True])
async def test_deferred_handles_are_submitted_and_answered_alike(provider: str,
                                                                 flush: bool) -> None:
    async def scenario(twin: Twin) -> Any:
        deferred = twin.client().deferred(polling=twin.world.polling)
        create = (deferred.chat.completions.create if provider == "openai"
                  else deferred.messages.create)
        handles = [create(**twin.request(text)) for text in ("a", "b", "c")]
        if flush:
            await twin.call(deferred.flush, deferred.aflush)
        if twin.is_async:
            return [await handle.aoutcome() for handle in handles]
        return await asyncio.to_thread(lambda: [handle.outcome() for handle in handles])

    await assert_parity(scenario, provider)


async def test_poll_until_and_apoll_until_look_and_sleep_alike() -> None:
    async def scenario(twin: Twin) -> Any:
        clock = twin.world.clock
        looks: list[float] = []

        def look() -> Round:
            looks.append(clock())
            return Round(done=len(looks) == 6, status="waiting", wake_at_s=clock() + 25)

        async def alook() -> Round:
            return look()

        done = await twin.call(poll_until, apoll_until, look if not twin.is_async else alook,
                               twin.world.polling, until_s=clock() + 400)
        return [done, [t - looks[0] for t in looks]]

    sync_twin, async_twin = Twin(False, "openai"), Twin(True, "openai")
    assert trace(sync_twin, await scenario(sync_twin)) == trace(
        async_twin, await scenario(async_twin))
