"""Prompts stay out of the ledger unless asked for: request and response bodies of batches.

By default a batch's request bodies live only in the memory of the process that submitted them
and its batch responses are fetched again from the provider after a restart; ``keep_bodies=True``
(or a client with ``store_prompts=True``) keeps both in the ledger until they are not needed.
"""

from __future__ import annotations

import gc
import sqlite3
from datetime import timedelta
from pathlib import Path
from typing import Any

import openai
import pytest

import spendguard
from spendguard import BatchRequestFailed, ConfigError, Polling, batch_jobs
from spendguard._budget.ledger.sqlite import SqliteLedger
from spendguard._core.money import ZERO
from spendguard._strategies.batch.job import JobCore
from spendguard.testing import Prompt
from tests.batching_helpers import World, chat, message

SECRET = "PURPLE-OTTER-7731"
"""A prompt string that appears nowhere else: found in the ledger only if a prompt was kept."""
HOUR_S = 3600.0


class Crash(BaseException):
    """The process dies here (nothing after this line runs)."""


def ledger_bytes(path: Path) -> bytes:
    """Every byte of a SQLite ledger: its files (WAL included) and every row of every table."""
    raw = b"".join(part.read_bytes() for part in sorted(path.parent.glob(f"{path.name}*")))
    db = sqlite3.connect(path)
    try:
        tables = [name for (name,) in db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'")]
        rows = "".join(repr(row) for table in tables
                       for row in db.execute(f'SELECT * FROM "{table}"'))
    finally:
        db.close()
    return raw + rows.encode()


def stored_bodies(path: Path) -> list[str | None]:
    db = sqlite3.connect(path)
    try:
        return [body for (body,) in db.execute("SELECT body FROM batch_items ORDER BY position")]
    finally:
        db.close()


def crash(run: spendguard.BatchRun) -> None:
    """Nothing in memory survives; the provider keeps working."""
    del run
    gc.collect()


def texts(results: list[spendguard.BatchResult]) -> list[str]:
    return [r.response.choices[0].message.content if hasattr(r.response, "choices")
            else r.response.content[0].text for r in results]


def sqlite_world(tmp_path: Path, emulator_options: dict[str, Any] | None = None
                 ) -> tuple[World, Path]:
    path = tmp_path / "ledger.db"
    return World(ledger=f"sqlite:///{path}", scope="project:bodies",
                 emulator_options=emulator_options or {}), path


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_by_default_no_prompt_or_reply_reaches_the_ledger_even_across_a_restart(
        tmp_path: Path, provider: str) -> None:
    world, path = sqlite_world(tmp_path)
    client, build = ((world.openai(), chat) if provider == "openai"
                     else (world.anthropic(), message))
    run = spendguard.batch([build(f"{SECRET} q{i}") for i in range(3)], client=client,
                           polling=world.polling)
    assert stored_bodies(path) == [None, None, None]
    assert SECRET.encode() not in ledger_bytes(path)
    world.clock.advance(600)  # the batch ends while no process is there
    crash(run)

    ledger = SqliteLedger(path)
    after = world.restarted(ledger)
    again = after.openai() if provider == "openai" else after.anthropic()
    results = spendguard.resume_batches(again, ledger=ledger, polling=after.polling)
    assert texts(results) == [f"echo: {SECRET} q{i}" for i in range(3)]  # the replies echo it
    assert spendguard.resume_batches(again, ledger=ledger, polling=after.polling) == []
    assert SECRET.encode() not in ledger_bytes(path)
    assert after.budget.reserved == 0
    assert after.budget.spent == sum((r.cost_usd for r in results), ZERO) > 0
    # Each request is still identified by the SHA-256 of its body, never by its text.
    records = list(ledger.records())
    assert all(len(r.prompt_hash or "") == 64 and r.prompt_text is None for r in records)


def test_a_result_collected_before_a_crash_is_fetched_again_and_not_settled_again(
        tmp_path: Path) -> None:
    world, path = sqlite_world(tmp_path)
    run = spendguard.batch([message(f"{SECRET} a"), message(f"{SECRET} b")],
                           client=world.anthropic(), polling=world.polling)
    assert run.wait()  # collected and settled; the replies were only in this process's memory
    spent = world.budget.spent
    crash(run)
    assert SECRET.encode() not in ledger_bytes(path)

    ledger = SqliteLedger(path)
    after = world.restarted(ledger)
    results = spendguard.resume_batches(after.anthropic(), ledger=ledger, polling=after.polling)
    assert texts(results) == [f"echo: {SECRET} a", f"echo: {SECRET} b"]
    assert world.sent("GET", "/results") == 2  # once to settle, once more to hand over
    assert after.budget.spent == spent
    assert ledger.verify() == []
    assert batch_jobs(ledger=ledger, active=True) == []


async def test_an_async_resume_fetches_results_again_too(tmp_path: Path) -> None:
    world, path = sqlite_world(tmp_path)
    run = await spendguard.abatch([chat(f"{SECRET} a")], client=world.async_openai(),
                                  polling=world.polling)
    assert await run.await_()
    crash(run)
    ledger = SqliteLedger(path)
    after = world.restarted(ledger)
    results = await spendguard.aresume_batches(after.async_openai(), ledger=ledger,
                                               polling=after.polling)
    assert texts(results) == [f"echo: {SECRET} a"]
    assert SECRET.encode() not in ledger_bytes(path)


def test_a_result_the_provider_no_longer_has_is_not_handed_over_empty(tmp_path: Path) -> None:
    world, path = sqlite_world(tmp_path)
    run = spendguard.batch([chat("a")], client=world.openai(), polling=world.polling)
    assert run.wait()
    output_file = world.emulator.openai_client().batches.retrieve(
        run.cores[0].job.provider_batch_id or "").output_file_id
    crash(run)
    world.emulator.openai_client().files.delete(output_file or "")
    ledger = SqliteLedger(path)
    after = world.restarted(ledger)
    with pytest.raises(openai.NotFoundError):
        spendguard.resume_batches(after.openai(), ledger=ledger, polling=after.polling)
    (job,) = batch_jobs(ledger=ledger)
    assert job.uncollected == 1  # still owed, not claimed as delivered


def test_a_result_not_fetched_again_yet_stays_owed_until_a_later_resume(
        tmp_path: Path) -> None:
    world, path = sqlite_world(tmp_path)
    run = spendguard.batch([chat("a")], client=world.openai(), polling=world.polling)
    assert run.wait()
    batch_id = run.cores[0].job.provider_batch_id
    crash(run)
    world.emulator.fail_next(status=503, retry_after_ms=None, path=f"/v1/batches/{batch_id}")
    ledger = SqliteLedger(path)
    after = world.restarted(ledger)
    assert spendguard.resume_batches(after.openai(), ledger=ledger, timeout=0,
                                     polling=after.polling) == []
    (result,) = spendguard.resume_batches(after.openai(), ledger=ledger, polling=after.polling)
    assert texts([result]) == ["echo: a"]


def test_a_restart_without_bodies_lets_a_late_batch_finish_instead_of_cancelling_it(
        tmp_path: Path) -> None:
    world, path = sqlite_world(tmp_path, emulator_options={"batch_completion_s": 6 * HOUR_S})
    run = spendguard.batch([chat(f"q{i}") for i in range(3)], client=world.openai(),
                           deadline=timedelta(hours=2), fallback=True, polling=world.polling)
    crash(run)
    ledger = SqliteLedger(path)
    after = world.restarted(ledger)
    results = spendguard.resume_batches(after.openai(), ledger=ledger, polling=after.polling)
    # Nothing could be rescued, so cancelling at the rescue point would only lose answers.
    assert world.sent("POST", "/cancel") == 0
    assert [(r.status, r.route) for r in results] == [("succeeded", "batch")] * 3
    assert world.clock() - 1_800_000_000.0 > 2 * HOUR_S  # late, but every answer delivered


def test_in_process_fallback_works_without_keeping_bodies(tmp_path: Path) -> None:
    world, path = sqlite_world(tmp_path, emulator_options={"batch_completion_s": 6 * HOUR_S})
    run = spendguard.batch([chat(f"{SECRET} q{i}") for i in range(3)], client=world.openai(),
                           deadline=timedelta(hours=2), fallback=True, polling=world.polling)
    world.clock.advance(HOUR_S)
    # Another look at the job (here: a resume in this process) changes its record, so the run
    # reads its items back from the ledger, which holds no bodies: its own memory still does.
    assert spendguard.resume_batches(world.openai(), ledger=world.budget.ledger, timeout=0,
                                     polling=world.polling) == []
    assert stored_bodies(path) == [None, None, None]
    results = run.results()
    assert [r.route for r in results] == ["fallback"] * 3
    assert texts(results) == [f"echo: {SECRET} q{i}" for i in range(3)]
    assert world.budget.reserved == 0


def test_a_restart_that_would_resubmit_without_the_body_says_so() -> None:
    world = World()
    client = world.anthropic()

    def die(self: JobCore, *args: object) -> None:
        raise Crash

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(JobCore, "submitted", die)
        with pytest.raises(Crash):
            spendguard.batch([message("a")], client=client, polling=world.polling)
    # An Anthropic Message Batch cannot be found again, and the body to resend was not kept.
    (result,) = spendguard.resume_batches(client, ledger=world.budget.ledger,
                                          polling=world.polling)
    assert (result.status, result.response) == ("errored", None)
    with pytest.raises(BatchRequestFailed, match="keep_bodies=True"):
        result.unwrap()
    assert world.submissions() == 1
    assert world.budget.reserved == 0
    (job,) = batch_jobs(ledger=world.budget.ledger)
    assert job.state == "failed" and "may have run it" in (job.note or "")
    assert spendguard.resume_batches(client, ledger=world.budget.ledger) == []


def test_a_job_that_never_reached_the_provider_ends_errored_on_resume() -> None:
    world = World()

    def die(self: JobCore, now_s: float) -> None:
        raise Crash

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(JobCore, "mark_submitting", die)
        with pytest.raises(Crash):
            spendguard.batch([chat("a"), chat("b")], client=world.openai(),
                             polling=world.polling)
    results = spendguard.resume_batches(world.openai(), ledger=world.budget.ledger,
                                        polling=world.polling)
    assert [r.status for r in results] == ["errored", "errored"]
    assert all("request body not kept" in str(r.error) for r in results)
    assert world.submissions() == 0
    assert world.budget.reserved == 0 and world.budget.spent == 0


def expiring_world(tmp_path: Path) -> tuple[World, Path, Polling]:
    world, path = sqlite_world(tmp_path, emulator_options={"batch_completion_s": 48 * HOUR_S})
    return world, path, Polling.manual(world.clock, progress=None, max_wait_s=HOUR_S)


@pytest.mark.parametrize("keep_bodies", [False, True])
def test_after_a_restart_expired_requests_are_rescued_only_with_kept_bodies(
        tmp_path: Path, keep_bodies: bool) -> None:
    world, path, polling = expiring_world(tmp_path)
    run = spendguard.batch([chat(f"q{i}") for i in range(4)], client=world.openai(),
                           deadline=timedelta(hours=30), fallback=True, polling=polling,
                           keep_bodies=keep_bodies)
    crash(run)
    ledger = SqliteLedger(path)
    after = world.restarted(ledger)
    results = spendguard.resume_batches(after.openai(), ledger=ledger, polling=polling)
    late = [r for r in results if r.route == "fallback" or not r.ok]
    assert 0 < len(late) < 4  # about half ran within the 24 hours
    if keep_bodies:
        assert all(r.ok and r.route == "fallback" for r in late)
    else:
        assert all(r.status == "expired" and r.route == "batch" for r in late)
        assert all("request body not kept" in str(r.error) for r in late)
        assert world.sent("POST", "/chat/completions") == 0  # no ordinary call, no cancel
        assert world.sent("POST", "/cancel") == 0
    assert after.budget.reserved == 0
    assert after.budget.spent == sum((r.cost_usd for r in results), ZERO)


@pytest.mark.parametrize(("keep_bodies", "fallback", "note"), [
    (False, True, "request body not kept"),
    (True, False, "the fallback is off"),
])
def test_requests_left_waiting_for_a_rescue_end_instead_of_waiting_forever(
        tmp_path: Path, keep_bodies: bool, fallback: bool, note: str) -> None:
    world, path, polling = expiring_world(tmp_path)

    def die(self: JobCore, *args: object, **kwargs: object) -> None:
        raise Crash

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(JobCore, "fell_back", die)  # dies just before the first ordinary call
        run = spendguard.batch([chat(f"q{i}") for i in range(4)], client=world.openai(),
                               deadline=timedelta(hours=30), fallback=True, polling=polling,
                               keep_bodies=keep_bodies)
        with pytest.raises(Crash):
            run.results()
    crash(run)
    ledger = SqliteLedger(path)
    after = world.restarted(ledger)
    results = spendguard.resume_batches(after.openai(), ledger=ledger, polling=polling,
                                        fallback=fallback)
    late = [r for r in results if not r.ok]
    assert late and all(r.status == "expired" and note in str(r.error) for r in late)
    assert after.budget.reserved == 0
    assert batch_jobs(ledger=ledger, active=True) == []


def test_keep_bodies_keeps_each_prompt_in_the_ledger_until_it_is_answered(
        tmp_path: Path) -> None:
    world, path = sqlite_world(tmp_path)
    run = spendguard.batch([chat(f"{SECRET} a")], client=world.openai(), polling=world.polling,
                           keep_bodies=True)
    (body,) = stored_bodies(path)
    assert body is not None and SECRET in body
    assert texts(run.results()) == [f"echo: {SECRET} a"]
    assert stored_bodies(path) == [None]


def test_a_client_that_stores_prompts_keeps_bodies_unless_told_otherwise(
        tmp_path: Path) -> None:
    world, path = sqlite_world(tmp_path)
    client = world.openai(store_prompts=True)
    spendguard.batch([chat("kept")], client=client, polling=world.polling)
    spendguard.batch([chat("not kept")], client=client, polling=world.polling,
                     keep_bodies=False)
    deferred = world.openai().deferred(keep_bodies=True, polling=world.polling)
    deferred.chat.completions.create(**chat("deferred"))
    deferred.flush()
    db = sqlite3.connect(path)
    kept = {job: body is not None for job, body in db.execute(
        "SELECT job_id, body FROM batch_items")}
    db.close()
    jobs = [job.id for job in reversed(batch_jobs(ledger=world.budget.ledger))]
    assert [kept[job] for job in jobs] == [True, False, True]


def test_keep_bodies_must_be_a_bool() -> None:
    world = World()
    with pytest.raises(ConfigError, match="keep_bodies"):
        spendguard.batch([chat("a")], client=world.openai(), keep_bodies="yes")  # type: ignore[arg-type]


REPLY = "a reply that does not repeat the prompt"


def fixed_reply(prompt: Prompt) -> str:
    return REPLY


def test_a_deferred_call_keeps_no_prompt_in_the_ledger(tmp_path: Path) -> None:
    world, path = sqlite_world(tmp_path, emulator_options={"respond": fixed_reply})
    deferred = world.openai().deferred(polling=world.polling)
    handle = deferred.chat.completions.create(**chat(f"{SECRET} deferred"))
    deferred.flush()
    assert SECRET.encode() not in ledger_bytes(path)
    assert handle.result().choices[0].message.content == REPLY
    assert SECRET.encode() not in ledger_bytes(path)
