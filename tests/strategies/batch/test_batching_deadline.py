"""Deadlines: a batch that would finish late is rescued by ordinary calls (route "fallback")."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from openai.types.chat import ChatCompletion

import spendguard
from spendguard import Polling
from tests.batching_helpers import GPT, World, chat

HOUR_S = 3600.0


def records(world: World) -> list[tuple[str, str, bool]]:
    """(endpoint, status, tagged as a batch request) per ledger record, sorted."""
    return sorted((r.endpoint, r.status, "batch_job" in r.tags)
                  for r in world.budget.ledger.records())


def test_a_late_batch_is_cancelled_and_its_unfinished_requests_go_ordinary() -> None:
    world = World(emulator_options={"batch_completion_s": 6 * HOUR_S})
    run = spendguard.batch([chat(f"q{i}") for i in range(4)], client=world.openai(),
                           deadline=timedelta(hours=2), fallback=True, polling=world.polling)
    results = run.results()
    assert world.clock() - 1_800_000_000.0 == 2 * HOUR_S - 600  # rescued 10 minutes early
    assert [r.route for r in results] == ["batch", "fallback", "fallback", "fallback"]
    assert all(r.ok and isinstance(r.response, ChatCompletion) for r in results)
    assert [r.response.choices[0].message.content for r in results] == [
        f"echo: q{i}" for i in range(4)]
    fallback = results[1]
    assert fallback.usage is not None
    assert fallback.cost_usd == fallback.standard_usd == spendguard.cost(
        GPT, fallback.usage).total
    assert fallback.savings_usd == 0 < results[0].savings_usd
    assert world.budget.spent == sum((r.cost_usd for r in results), Decimal(0))
    assert world.budget.reserved == 0
    assert records(world) == sorted([("chat.completions", "ok", True)]
                                    + [("chat.completions", "released", True)] * 3
                                    + [("chat.completions", "ok", False)] * 3)


def test_a_deadline_too_close_for_a_batch_sends_ordinary_calls_at_once() -> None:
    world = World()
    results = spendguard.batch([chat("a"), chat("b")], client=world.openai(), deadline=300,
                               fallback=True, polling=world.polling).results()
    assert [r.route for r in results] == ["fallback", "fallback"]
    assert world.submissions() == 0
    (job,) = spendguard.batch_jobs(ledger=world.budget.ledger)
    assert job.state == "ended" and "too close" in (job.note or "")
    assert world.budget.reserved == 0


def test_expired_requests_are_rescued_when_the_deadline_is_still_ahead() -> None:
    world = World(emulator_options={"batch_completion_s": 48 * HOUR_S})
    polling = Polling.manual(world.clock, progress=None, max_wait_s=HOUR_S)
    results = spendguard.batch([chat(f"q{i}") for i in range(4)], client=world.openai(),
                               deadline=timedelta(hours=40), fallback=True,
                               polling=polling).results()
    routes = [r.route for r in results]
    assert "batch" in routes and "fallback" in routes
    assert all(r.ok for r in results)
    assert world.clock() - 1_800_000_000.0 < 40 * HOUR_S - 600  # rescued at expiry, not later


def test_a_rescue_the_budget_cannot_afford_is_refused_not_sent() -> None:
    world = World(emulator_options={"batch_completion_s": 6 * HOUR_S, "batch_cancel_s": 900})
    worst = spendguard.batch([chat("probe", max_tokens=400)], client=world.openai(),
                             polling=world.polling).worst_usd
    world.budget.limit_usd = world.budget.spent + worst * Decimal(2)  # batch fits, rescue won't
    run = spendguard.batch([chat("late", max_tokens=400)], client=world.openai(),
                           deadline=timedelta(hours=1), fallback=True, polling=world.polling)
    (late,) = run.results()
    assert (late.status, late.route) == ("refused", "fallback")
    with pytest.raises(spendguard.BatchRequestFailed, match="refused"):
        late.unwrap()


def test_without_fallback_the_deadline_bounds_the_wait() -> None:
    world = World(emulator_options={"batch_completion_s": 6 * HOUR_S})
    run = spendguard.batch([chat("a")], client=world.openai(), deadline=timedelta(hours=1),
                           polling=world.polling)
    with pytest.raises(TimeoutError):
        run.results()
    assert world.clock() - 1_800_000_000.0 == HOUR_S
    assert world.budget.reserved > 0  # still running, kept in the ledger


def test_a_deferred_view_with_a_deadline_reports_its_route() -> None:
    world = World(emulator_options={"batch_completion_s": 6 * HOUR_S})
    deferred = world.openai().deferred(deadline=timedelta(hours=1), fallback=True,
                                       fallback_lead_s=1800, polling=world.polling)
    handle = deferred.chat.completions.create(**chat("soon"))
    outcome = handle.outcome()
    assert outcome.route == "fallback"
    assert handle.result().choices[0].message.content == "echo: soon"
