"""The async twins: awaited handles, abatch, aresume, acancel, and parity with the sync shell."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from decimal import Decimal
from typing import Any

import anthropic
import pytest
from openai.types.chat import ChatCompletion

import spendguard
from spendguard import ConfigError
from spendguard.testing import EmulatedError, Prompt
from tests.batching_helpers import World, chat, message

HOUR_S = 3600.0


def fail_bad(prompt: Prompt) -> str:
    if "bad" in prompt.last_user_text:
        raise EmulatedError(400, "This request cannot be answered.")
    return f"echo: {prompt.last_user_text}"


async def test_gathered_deferred_messages_share_one_batch() -> None:
    world = World()
    deferred = world.async_anthropic().deferred(polling=world.polling)
    handles = [deferred.messages.create(**message(f"q{i}")) for i in range(4)]
    replies = await asyncio.gather(*handles)
    assert all(isinstance(r, anthropic.types.Message) for r in replies)
    assert [r.content[0].text for r in replies] == [f"echo: q{i}" for i in range(4)]
    assert world.submissions() == 1
    assert world.sent("GET", "/results") == 1  # one waiter collected for all of them
    assert world.budget.reserved == 0 and world.budget.spent > 0


async def test_abatch_is_awaited_for_its_results() -> None:
    world = World()
    run = await spendguard.abatch([chat("a"), chat("b")], client=world.async_openai(),
                                  polling=world.polling)
    results = await run
    assert all(isinstance(r.response, ChatCompletion) for r in results)
    assert world.budget.spent == sum((r.cost_usd for r in results), Decimal(0))


async def test_an_async_deadline_rescue_makes_awaited_ordinary_calls() -> None:
    world = World(emulator_options={"batch_completion_s": 6 * HOUR_S})
    run = await spendguard.abatch([chat("a"), chat("b")], client=world.async_openai(),
                                  deadline=timedelta(hours=1), fallback=True,
                                  polling=world.polling)
    results = await run.aresults()
    assert [r.route for r in results] == ["fallback", "fallback"]
    assert all(r.ok for r in results)


async def test_aresume_and_acancel_work_on_the_jobs_left_in_the_ledger() -> None:
    world = World(emulator_options={"batch_completion_s": 1000})
    client = world.async_openai()
    first = await spendguard.abatch([chat("a")], client=client, polling=world.polling)
    second = await spendguard.abatch([chat("b"), chat("c")], client=client,
                                     polling=world.polling)
    job = await spendguard.acancel_batch(client, second.job_ids[0],
                                         ledger=world.budget.ledger, clock=world.clock)
    assert job.outcomes == {"cancelled": 2}
    results = await spendguard.aresume_batches(client, ledger=world.budget.ledger,
                                               polling=world.polling)
    assert [(r.job_id, r.status) for r in results] == [
        (first.job_ids[0], "succeeded"), (second.job_ids[0], "cancelled"),
        (second.job_ids[0], "cancelled")]
    assert world.budget.reserved == 0


async def test_a_sync_handle_can_be_awaited_from_async_code() -> None:
    world = World()
    handle = world.openai().deferred(polling=world.polling).chat.completions.create(**chat("a"))
    completion = await handle
    assert completion.choices[0].message.content == "echo: a"


async def test_sync_and_async_waits_are_not_mixed_up() -> None:
    world = World()
    handle = world.async_openai().deferred(polling=world.polling).chat.completions.create(
        **chat("a"))
    with pytest.raises(ConfigError, match="`await` it"):
        handle.result()
    run = await spendguard.abatch([chat("b")], client=world.async_openai(),
                                  polling=world.polling)
    with pytest.raises(ConfigError, match="await run"):
        run.results()
    with pytest.raises(ConfigError, match=r"client\.deferred\.flush"):
        await world.openai().deferred.aflush()
    with pytest.raises(ConfigError, match=r"spendguard\.batch"):
        await spendguard.abatch([chat("c")], client=world.openai())
    await handle


def scenario_sync(world: World) -> list[tuple[Any, ...]]:
    client = world.openai()
    run = spendguard.batch([chat("good"), chat("bad"), chat("late")], client=client,
                           deadline=timedelta(hours=2), fallback=True, polling=world.polling)
    return [(r.index, r.status, r.route, r.cost_usd) for r in run.results()]


async def scenario_async(world: World) -> list[tuple[Any, ...]]:
    client = world.async_openai()
    run = await spendguard.abatch([chat("good"), chat("bad"), chat("late")], client=client,
                                  deadline=timedelta(hours=2), fallback=True,
                                  polling=world.polling)
    return [(r.index, r.status, r.route, r.cost_usd) for r in await run]


async def test_the_sync_and_async_shells_make_the_same_calls_with_the_same_results() -> None:
    options = {"batch_completion_s": 6 * HOUR_S, "respond": fail_bad}
    sync_world, async_world = World(emulator_options=options), World(emulator_options=options)
    sync_results = await asyncio.to_thread(scenario_sync, sync_world)
    async_results = await scenario_async(async_world)
    assert sync_results == async_results
    assert [(r.method, r.path) for r in sync_world.emulator.requests] == [
        (r.method, r.path) for r in async_world.emulator.requests]
    assert [line.split(")", 1)[1] for line in sync_world.progress] == [
        line.split(")", 1)[1] for line in async_world.progress]  # job ids are random
    assert sync_world.budget.spent == async_world.budget.spent
