"""Jobs outlive their process: submit, crash, reopen the ledger, resume, collect exactly once."""

from __future__ import annotations

import gc
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import spendguard
from spendguard import BatchJob, ConfigError, batch_jobs
from spendguard._budget.ledger.sqlite import SqliteLedger
from spendguard._core.money import ZERO
from spendguard._strategies.batch.job import JobCore
from spendguard.testing import Emulator, ManualClock, serve
from tests.batching_helpers import World, chat, content, echo, message
from tests.paths import TESTS

WORKER = TESTS / "batching_worker.py"
REPO_ROOT = Path(spendguard.__file__).resolve().parent.parent


class Crash(BaseException):
    """The process dies here (nothing after this line runs)."""


def contents(results: list[spendguard.BatchResult]) -> list[str]:
    return [r.response.choices[0].message.content if hasattr(r.response, "choices")
            else r.response.text if hasattr(r.response, "candidates")
            else r.response.content[0].text for r in results]


def test_a_restarted_process_resumes_polling_and_collects_each_result_once(
        tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    world = World(ledger=f"sqlite:///{path}", scope="project:crash")
    run = spendguard.batch([chat(f"q{i}") for i in range(3)], client=world.openai(),
                           polling=world.polling)
    job_ids = run.job_ids
    del run  # the crash: nothing in memory survives, the provider keeps working
    gc.collect()
    world.clock.advance(600)

    ledger = SqliteLedger(path)  # a new process opens the same file
    after = world.restarted(ledger)
    assert [job.id for job in batch_jobs(ledger=ledger, active=True)] == job_ids
    results = spendguard.resume_batches(after.openai(), ledger=ledger, polling=after.polling)
    assert contents(results) == ["echo: q0", "echo: q1", "echo: q2"]
    assert spendguard.resume_batches(after.openai(), ledger=ledger, polling=after.polling) == []
    assert after.budget.spent == sum((r.cost_usd for r in results), ZERO) > 0
    assert after.budget.reserved == 0
    assert ledger.verify() == []
    assert batch_jobs(ledger=ledger, active=True) == []


def test_a_crash_after_settling_but_before_handing_over_loses_nothing(tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    world = World(ledger=f"sqlite:///{path}", scope="project:crash")
    run = spendguard.batch([message("a"), message("b")], client=world.anthropic(),
                           polling=world.polling)
    assert run.wait()  # collected and settled in the ledger...
    spent = world.budget.spent
    del run  # ...then the process died before anyone read the results
    gc.collect()
    ledger = SqliteLedger(path)
    after = world.restarted(ledger)
    results = spendguard.resume_batches(after.anthropic(), ledger=ledger, polling=after.polling)
    assert contents(results) == ["echo: a", "echo: b"]
    assert after.budget.spent == spent  # settled once, not again
    assert ledger.verify() == []


@pytest.mark.parametrize(("provider", "submissions"),
                         [("openai", 1), ("anthropic", 2), ("gemini", 1)])
def test_a_crash_right_after_submitting_finds_or_resubmits_the_batch(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, provider: str,
        submissions: int) -> None:
    world = World(ledger=f"sqlite:///{tmp_path / 'ledger.db'}", scope="project:crash")
    client, build = {"openai": (world.openai(), chat), "anthropic": (world.anthropic(), message),
                     "gemini": (world.gemini(), content)}[provider]

    def die(self: JobCore, *args: object) -> None:
        raise Crash

    with monkeypatch.context() as patch:
        patch.setattr(JobCore, "submitted", die)
        with pytest.raises(Crash):
            spendguard.batch([build("a")], client=client, polling=world.polling,
                             keep_bodies=True)
    # OpenAI keeps the job id in the batch's metadata and Gemini in its display name, so the
    # batch is found again; an Anthropic Message Batch carries none, so the request (its body
    # kept) is submitted again.
    results = spendguard.resume_batches(client, ledger=world.budget.ledger,
                                        polling=world.polling)
    assert contents(results) == ["echo: a"]
    assert world.submissions() == submissions
    assert world.budget.reserved == 0


def test_a_process_killed_while_waiting_is_resumed_by_another(tmp_path: Path) -> None:
    clock = ManualClock()
    emulator = Emulator(clock=clock, batch_completion_s=100, respond=echo)
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    with serve(emulator) as server:
        child = subprocess.Popen(
            [sys.executable, str(WORKER), "submit", url, "project:killed", server.base_url,
             "openai", "3"], env={**os.environ, "PYTHONPATH": str(REPO_ROOT)}, text=True,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            assert child.stdout is not None
            job_ids = json.loads(child.stdout.readline())
            world = World(clock=clock, ledger=url, scope="project:killed", provider=emulator)
            # While the owner lives, its job is left to it.
            assert spendguard.resume_batches(world.openai(), ledger=url, timeout=0,
                                             polling=world.polling) == []
            with pytest.raises(ConfigError, match="still running"):
                spendguard.resume_batches(world.openai(), job_id=job_ids[0], ledger=url,
                                          polling=world.polling)
        finally:
            child.send_signal(signal.SIGKILL)
            child.communicate()
        assert child.returncode == -signal.SIGKILL
        clock.advance(600)
        results = spendguard.resume_batches(world.openai(), ledger=url, polling=world.polling)
    assert contents(results) == ["echo: q0", "echo: q1", "echo: q2"]
    assert {r.job_id for r in results} == set(job_ids)
    assert spendguard.resume_batches(world.openai(), ledger=url, polling=world.polling) == []
    assert world.budget.reserved == 0
    assert world.budget.spent == sum((r.cost_usd for r in results), ZERO)


def test_resume_takes_one_job_by_id_and_checks_its_provider() -> None:
    world = World()
    first = spendguard.batch([chat("a")], client=world.openai(), polling=world.polling)
    spendguard.batch([chat("b")], client=world.openai(), polling=world.polling)
    world.clock.advance(600)
    only = spendguard.resume_batches(world.openai(), job_id=first.job_ids[0],
                                     ledger=world.budget.ledger, polling=world.polling)
    assert contents(only) == ["echo: a"]
    with pytest.raises(ConfigError, match="ran on openai, not on anthropic"):
        spendguard.resume_batches(world.anthropic(), job_id=first.job_ids[0],
                                  ledger=world.budget.ledger)
    with pytest.raises(ConfigError, match="no batch job"):
        BatchJob.load("sgb_missing", ledger=world.budget.ledger)


def test_a_job_summary_counts_outcomes_routes_and_collection() -> None:
    world = World()
    run = spendguard.batch([chat("a"), chat("b")], client=world.openai(),
                           polling=world.polling)
    assert run.wait()
    job = BatchJob.load(run.job_ids[0], ledger=world.budget.ledger)
    assert (job.state, job.outcomes, job.routes, job.uncollected) == (
        "ended", {"succeeded": 2}, {"batch": 2}, 2)
    assert job.active and job.cost_usd == world.budget.spent
    assert [r.state for r in job.requests] == ["succeeded", "succeeded"]
    run.results()
    assert not BatchJob.load(run.job_ids[0], ledger=world.budget.ledger).active
    assert json.loads(json.dumps(job.as_dict()))["worst_usd"] == str(job.worst_usd)


def test_a_job_that_never_reached_the_provider_is_submitted_on_resume_or_cancelled(
        monkeypatch: pytest.MonkeyPatch) -> None:
    world = World()

    def die(self: JobCore, now_s: float) -> None:
        raise Crash

    with monkeypatch.context() as patch:
        patch.setattr(JobCore, "mark_submitting", die)
        with pytest.raises(Crash):
            spendguard.batch([chat("a")], client=world.openai(), polling=world.polling,
                             keep_bodies=True)
        with pytest.raises(Crash):
            spendguard.batch([chat("b")], client=world.openai(), polling=world.polling,
                             keep_bodies=True)
    assert world.submissions() == 0
    first, second = reversed(batch_jobs(ledger=world.budget.ledger))
    assert (first.state, second.state) == ("reserved", "reserved")
    cancelled = spendguard.cancel_batch(world.openai(), second.id, ledger=world.budget.ledger)
    assert (cancelled.state, cancelled.outcomes) == ("ended", {"cancelled": 1})
    results = spendguard.resume_batches(world.openai(), ledger=world.budget.ledger,
                                        polling=world.polling)
    assert [(r.job_id, r.status) for r in results] == [(first.id, "succeeded"),
                                                       (second.id, "cancelled")]
    assert world.submissions() == 1
    assert world.budget.reserved == 0
