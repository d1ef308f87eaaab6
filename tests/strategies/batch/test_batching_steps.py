"""The batching core without any I/O: its generators are stepped by hand, replies made up.

Nothing here reaches a provider: each test reads the action the core yields, answers it with
a :class:`~spendguard._strategies.batch.wire.Snapshot` (or an exception) and checks the next
decision and what the job store recorded.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import httpx2
import openai
import pytest

from spendguard._strategies.batch.actions import Action, Cancel, FallBack, Fetch, Find, Poll, Submit
from spendguard._strategies.batch.context import client_context
from spendguard._strategies.batch.job import JobCore
from spendguard._strategies.batch.steps import advance, cancel, submit
from spendguard._strategies.batch.submit import prepare
from spendguard._strategies.batch.wire import Snapshot, Submitted
from tests.batching_helpers import World, chat

HOUR_S = 3600.0


def new_job(world: World, **options: Any) -> JobCore:
    """A reserved, recorded job of two requests, made at ``world.clock()``; nothing sent."""
    options.setdefault("deadline", None)
    options.setdefault("fallback", False)
    (core,) = prepare(client_context(world.openai()), [chat("a"), chat("b")], endpoint=None,
                      fallback_lead_s=600.0, ledger=None, limits=None, polling=world.polling,
                      **options)
    return core


def running(batch_id: str = "batch_1", *, ended: bool = False) -> Snapshot:
    return Snapshot(batch_id, "completed" if ended else "in_progress", ended,
                    {"total": 2, "done": 2 if ended else 0})


def server_error() -> openai.InternalServerError:
    request = httpx2.Request("GET", "http://emulator.spendguard.invalid/v1/batches/batch_1")
    return openai.InternalServerError("boom", response=httpx2.Response(500, request=request),
                                      body=None)


def test_a_reserved_job_is_submitted_with_its_pending_requests() -> None:
    world = World()
    core = new_job(world)
    t0 = world.clock()
    steps = submit(core, t0)
    action = next(steps)
    assert isinstance(action, Submit) and action.job_id == core.job.id
    assert [custom_id for custom_id, _ in action.requests] == list(core.items)
    assert core.job.note == "submitting"  # recorded before the request leaves
    with pytest.raises(StopIteration):
        steps.send(Submitted(running()))
    assert (core.job.state, core.job.provider_batch_id) == ("submitted", "batch_1")


def test_a_refused_submission_fails_the_job_and_raises() -> None:
    world = World()
    core = new_job(world)
    t0 = world.clock()
    steps = submit(core, t0)
    next(steps)
    with pytest.raises(RuntimeError, match="refused"):
        steps.throw(RuntimeError("refused"))
    assert core.job.state == "failed" and world.budget.reserved == 0


def test_a_submission_cut_short_is_looked_for_before_sending_again() -> None:
    world = World()
    core = new_job(world, keep_bodies=True)
    t0 = world.clock()
    core.mark_submitting(t0)
    steps = submit(core, t0 + 1.0)
    assert next(steps) == Find(core.job.id)
    assert steps.send("batch_9") == Poll("batch_9")
    with pytest.raises(StopIteration):
        steps.send(running("batch_9"))
    assert core.job.provider_batch_id == "batch_9"


def test_a_look_polls_and_collects_an_ended_batch() -> None:
    world = World()
    core = new_job(world)
    t0 = world.clock()
    drive_by_hand(submit(core, t0), {Submit: Submitted(running())})
    steps = advance(core, t0 + 10.0)
    assert next(steps) == Poll("batch_1")
    snapshot = running(ended=True)
    assert steps.send(snapshot) == Fetch(snapshot)
    lines = [{"custom_id": cid, "response": {"status_code": 200, "body": {}}}
             for cid in core.items]
    with pytest.raises(StopIteration):
        steps.send(lines)
    assert core.job.state == "ended"


def test_a_transient_poll_failure_waits_for_the_next_look() -> None:
    world = World()
    core = new_job(world)
    t0 = world.clock()
    drive_by_hand(submit(core, t0), {Submit: Submitted(running())})
    steps = advance(core, t0 + 10.0)
    next(steps)
    with pytest.raises(StopIteration):
        steps.throw(server_error())
    assert core.job.state == "submitted"


def test_other_poll_failures_reach_the_caller() -> None:
    world = World()
    core = new_job(world)
    t0 = world.clock()
    drive_by_hand(submit(core, t0), {Submit: Submitted(running())})
    steps = advance(core, t0 + 10.0)
    next(steps)
    with pytest.raises(ValueError, match="unreadable"):
        steps.throw(ValueError("unreadable"))


def test_a_late_batch_is_cancelled_and_its_requests_fall_back() -> None:
    world = World()
    core = new_job(world, deadline=timedelta(hours=1), fallback=True)
    t0 = world.clock()
    drive_by_hand(submit(core, t0), {Submit: Submitted(running())})
    late_s = t0 + HOUR_S - 60  # inside the fallback lead
    actions = drive_by_hand(advance(core, late_s), {
        Poll: running(), Cancel: Snapshot("batch_1", "cancelling", False),
        FallBack: RuntimeError("no answer")})
    assert [type(a) for a in actions] == [Poll, Cancel, FallBack, FallBack]
    assert core.job.cancel_requested
    assert {item.state for item in core.items.values()} == {"errored"}


def test_too_late_for_a_batch_nothing_is_submitted() -> None:
    world = World()
    core = new_job(world, deadline=timedelta(minutes=5), fallback=True)
    t0 = world.clock()
    actions = drive_by_hand(advance(core, t0), {FallBack: RuntimeError("no answer")})
    assert [type(a) for a in actions] == [FallBack, FallBack]
    assert core.job.provider_batch_id is None


def test_cancelling_an_unsubmitted_job_needs_no_provider() -> None:
    world = World()
    core = new_job(world)
    t0 = world.clock()
    assert drive_by_hand(cancel(core, t0), {}) == []
    assert {item.state for item in core.items.values()} == {"cancelled"}


def drive_by_hand(steps: Any, replies: dict[type[Action], Any]) -> list[Action]:
    """Answer each action by its type (an exception is thrown in); the actions seen."""
    seen: list[Action] = []
    reply: Any = None
    while True:
        try:
            action = steps.throw(reply) if isinstance(reply, Exception) else steps.send(reply)
        except StopIteration:
            return seen
        seen.append(action)
        reply = replies[type(action)]
