"""Batches that go wrong: errored requests, expiry, cancels, refused submissions, flaky polls."""

from __future__ import annotations

import logging
from decimal import Decimal

import openai
import pytest

import spendguard
from spendguard import BatchRequestFailed, Polling
from spendguard.testing import EmulatedError, Prompt
from tests.batching_helpers import World, batch_usd, chat, message

DAY_S = 24 * 3600


def fail_bad(prompt: Prompt) -> str:
    if "bad" in prompt.last_user_text:
        raise EmulatedError(400, "This request cannot be answered.")
    return f"echo: {prompt.last_user_text}"


def by_status(world: World) -> dict[str, int]:
    counts: dict[str, int] = {}
    for record in world.budget.ledger.records():
        counts[record.status] = counts.get(record.status, 0) + 1
    return counts


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_errored_requests_release_their_share_and_the_rest_settle(provider: str) -> None:
    world = World(emulator_options={"respond": fail_bad})
    client, build = ((world.openai(), chat) if provider == "openai"
                     else (world.anthropic(), message))
    results = spendguard.batch([build("good 1"), build("bad"), build("good 2")], client=client,
                               polling=world.polling).results()
    assert [r.status for r in results] == ["succeeded", "errored", "succeeded"]
    assert results[1].response is None and results[1].cost_usd == 0
    assert "cannot be answered" in str(results[1].error)
    with pytest.raises(BatchRequestFailed, match="errored") as caught:
        results[1].unwrap()
    assert (caught.value.status, caught.value.route) == ("errored", "batch")
    assert world.budget.spent == sum((r.cost_usd for r in results), Decimal(0))
    assert world.budget.reserved == 0
    assert by_status(world) == {"ok": 2, "released": 1}


def test_a_deferred_request_that_errored_raises_batch_request_failed() -> None:
    world = World(emulator_options={"respond": fail_bad})
    deferred = world.openai().deferred(polling=world.polling)
    good, bad = (deferred.chat.completions.create(**chat(t)) for t in ("fine", "bad"))
    with pytest.raises(BatchRequestFailed) as caught:
        bad.result()
    assert caught.value.custom_id == bad.custom_id
    assert good.result().choices[0].message.content == "echo: fine"


def test_a_seeded_error_rate_fails_some_lines_and_only_they_are_released() -> None:
    world = World(emulator_options={"batch_error_rate": 0.4, "seed": 5})
    results = spendguard.batch([chat(f"q{i}") for i in range(12)], client=world.openai(),
                               polling=world.polling).results()
    failed = [r for r in results if not r.ok]
    assert 0 < len(failed) < 12
    assert by_status(world) == {"ok": 12 - len(failed), "released": len(failed)}


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_requests_unfinished_at_the_24_hour_expiry_are_released(provider: str) -> None:
    world = World(emulator_options={"batch_completion_s": 2 * DAY_S})
    polling = Polling.manual(world.clock, progress=None, max_wait_s=3600)
    client, build = ((world.openai(), chat) if provider == "openai"
                     else (world.anthropic(), message))
    results = spendguard.batch([build(f"q{i}") for i in range(6)], client=client,
                               polling=polling).results()
    statuses = [r.status for r in results]
    assert "expired" in statuses and "succeeded" in statuses  # about half ran in time
    assert statuses == sorted(statuses, key=lambda s: s != "succeeded")  # in file order
    finished = [r for r in results if r.ok]
    assert world.budget.spent == sum((batch_usd(r.model, r.usage) for r in finished
                                      if r.usage), Decimal(0))
    assert world.budget.reserved == 0
    assert by_status(world)["released"] == statuses.count("expired")


def test_a_cancelled_run_releases_what_it_had_not_done() -> None:
    world = World(emulator_options={"batch_completion_s": 1000})
    run = spendguard.batch([chat(f"q{i}") for i in range(4)], client=world.openai(),
                           polling=world.polling)
    world.clock.advance(500)  # about half done
    run.cancel()
    results = run.results()
    assert [r.status for r in results] == ["succeeded", "succeeded", "cancelled", "cancelled"]
    assert world.budget.reserved == 0
    assert by_status(world) == {"ok": 2, "released": 2}


def test_a_cancel_that_takes_time_settles_what_finished_meanwhile() -> None:
    world = World(emulator_options={"batch_completion_s": 1000, "batch_cancel_s": 300})
    client = world.anthropic()
    run = spendguard.batch([message(f"q{i}") for i in range(4)], client=client,
                           polling=world.polling)
    world.clock.advance(100)
    job = spendguard.cancel_batch(client, run.job_ids[0], ledger=world.budget.ledger,
                                  clock=world.clock)
    assert job.state == "submitted" and not job.fallback
    results = spendguard.resume_batches(client, polling=world.polling)
    assert {r.status for r in results} <= {"succeeded", "cancelled"}
    assert "cancelled" in {r.status for r in results}
    assert world.budget.reserved == 0


def test_a_refused_submission_releases_everything_and_records_the_job_failed() -> None:
    world = World()
    world.emulator.fail_next(status=500, path="/v1/batches", retry_after_ms=None)
    with pytest.raises(openai.InternalServerError):
        spendguard.batch([chat("a"), chat("b")], client=world.openai(), polling=world.polling)
    assert world.budget.reserved == 0 and world.budget.spent == 0
    (job,) = spendguard.batch_jobs(ledger=world.budget.ledger)
    assert (job.state, job.outcomes) == ("failed", {"errored": 2})
    assert "InternalServerError" in (job.note or "")


def test_a_poll_that_fails_is_tried_again_later(caplog: pytest.LogCaptureFixture) -> None:
    world = World()
    run = spendguard.batch([chat("a")], client=world.openai(), polling=world.polling)
    world.emulator.fail_next(count=2, status=503, retry_after_ms=None,
                             path=f"/v1/batches/{run.cores[0].job.provider_batch_id}")
    with caplog.at_level(logging.WARNING, logger="spendguard.batching"):
        assert run.results()[0].ok
    assert caplog.text.count("trying again later") == 2


def test_a_poll_error_that_will_not_pass_reaches_the_caller() -> None:
    world = World()
    run = spendguard.batch([chat("a")], client=world.openai(), polling=world.polling)
    world.emulator.fail_next(status=404, path=f"/v1/batches/{run.cores[0].job.provider_batch_id}")
    with pytest.raises(openai.NotFoundError):
        run.results()
    assert world.budget.reserved > 0  # still held: a later resume settles it
    assert run.results()[0].ok


def test_a_batch_refused_halfway_through_reserving_holds_nothing(
        monkeypatch: pytest.MonkeyPatch) -> None:
    requests = [chat("same question", max_tokens=300)] * 8
    probe = World()
    each = spendguard.batch(requests[:1], client=probe.openai(), polling=probe.polling).worst_usd
    world = World(limit_usd=str(each * 3))  # three fit, eight do not
    # Another process takes the money between the up-front check and the reservations.
    monkeypatch.setattr("spendguard._strategies.batch.holds._check_total", lambda *args: None)
    with pytest.raises(spendguard.BudgetExceeded):
        spendguard.batch(requests, client=world.openai(), polling=world.polling)
    assert world.budget.reserved == 0 and world.emulator.requests == []
    assert {r.status for r in world.budget.ledger.records()} == {"released"}


def test_when_a_part_fails_to_submit_the_parts_after_it_are_not_sent() -> None:
    world = World()
    client = world.openai()
    world.emulator.fail_next(status=400, path="/v1/batches", retry_after_ms=None)
    with pytest.raises(openai.BadRequestError):
        spendguard.batch([chat("a"), chat("b", model="gpt-4o-mini")], client=client,
                         polling=world.polling)
    # The first part was refused, so the second is not sent: the caller has the error for all.
    jobs = spendguard.batch_jobs(ledger=world.budget.ledger)
    assert sorted(job.state for job in jobs) == ["failed", "failed"]
    assert any("an earlier part" in (job.note or "") for job in jobs)
    assert spendguard.resume_batches(client, ledger=world.budget.ledger) == []
    assert world.budget.reserved == 0 and world.submissions() == 1
