"""Batch results are acknowledged as the application advances: kill -9 anywhere, resume, lose
nothing, and never see an acknowledged result twice."""

from __future__ import annotations

import os
import random
import signal
import warnings
from pathlib import Path
from typing import Any, NoReturn

import httpx2
import pytest
from click.testing import CliRunner
from google.genai import types

import spendguard
from spendguard import Polling, batch_jobs, batch_results
from spendguard._budget.ledger.sqlite import SqliteLedger
from spendguard._core.money import ZERO
from spendguard._strategies.batch.job import JobCore
from spendguard.cli import main
from spendguard.testing import Emulator, ManualClock, serve
from tests.batching_helpers import GPT, World, chat, content, echo, message

COUNT = 5
TRIALS = 24
PROVIDERS = ("openai", "anthropic", "gemini")


def text_of(result: spendguard.BatchResult) -> str:
    response = result.unwrap()
    return str(response.choices[0].message.content if hasattr(response, "choices")
               else response.text if hasattr(response, "candidates")
               else response.content[0].text)


def die(*_: object) -> NoReturn:
    os.kill(os.getpid(), signal.SIGKILL)
    raise AssertionError("unreachable")


def client_for(provider: str, base_url: str, budget: spendguard.Budget) -> Any:
    # Plain HTTP to the loopback emulator: no certificates to load for every client built.
    if provider == "gemini":  # its own httpx2 client, which it closes (not a given one)
        return spendguard.Gemini(api_key="k", budget=budget, http_options=types.HttpOptions(
            base_url=base_url, client_args={"verify": False}))
    http = httpx2.Client(verify=False)
    if provider == "openai":
        return spendguard.OpenAI(api_key="k", base_url=f"{base_url}/v1", budget=budget,
                                 max_retries=0, http_client=http)
    return spendguard.Anthropic(api_key="k", base_url=base_url, budget=budget, max_retries=0,
                                http_client=http)


def requests_for(provider: str) -> list[dict[str, Any]]:
    build = {"openai": chat, "anthropic": message, "gemini": content}[provider]
    return [build(f"q{i}") for i in range(COUNT)]


def application(url: str, base_url: str, provider: str, kill: tuple[str, int, str],
                log_path: Path) -> NoReturn:
    """The application in a child process: submit, wait, consume — and die at ``kill``."""
    try:
        phase, at, moment = kill
        if phase == "submit":  # the provider accepted the batch; its id is not recorded yet
            JobCore.submitted = die  # type: ignore[assignment,method-assign]
        if phase == "poll":  # the results were downloaded; nothing is settled yet
            JobCore.collect = die  # type: ignore[assignment,method-assign]
        budget = spendguard.Budget("10", scope="project:ack", ledger=url, warn_at=None)
        run = spendguard.batch(requests_for(provider), client=client_for(provider, base_url,
                                                                         budget),
                               polling=Polling.manual(ManualClock(), progress=None),
                               keep_bodies=phase == "submit")
        with log_path.open("a") as log:
            for n, result in enumerate(run.each()):
                if n == at and moment == "in hand":
                    die()
                log.write(text_of(result) + "\n")  # the application keeps it safely...
                log.flush()
                if n == at and moment == "kept":
                    die()  # ...and dies before it asked for the next one (no ack)
        die()  # everything consumed and acknowledged
    finally:
        os._exit(3)  # never return into pytest from a forked child


def run_child(*args: Any) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork with the server's thread
        pid = os.fork()
    if pid == 0:
        application(*args)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL


def kill_points(rng: random.Random) -> list[tuple[str, tuple[str, int, str]]]:
    """(provider, kill point): each provider killed at submit and at poll, and run to the
    end (the last: no kill); then random points while consuming."""
    fixed = [("submit", -1, ""), ("poll", -1, ""), ("consume", COUNT, "")]
    points = [(provider, kill) for kill in fixed for provider in PROVIDERS]
    points += [(PROVIDERS[n % len(PROVIDERS)],
                ("consume", rng.randrange(COUNT), rng.choice(["in hand", "kept"])))
               for n in range(TRIALS - len(points))]
    return points


def test_kill_9_at_any_point_then_resume_delivers_every_result_and_none_twice_once_acked(
        tmp_path: Path) -> None:
    rng = random.Random(1606)
    emulator = Emulator(clock=ManualClock(), batch_completion_s=0, respond=echo)
    expected = [f"echo: q{i}" for i in range(COUNT)]
    with serve(emulator) as server:
        for provider in PROVIDERS:  # import and warm up here, not in each child
            warm = spendguard.Budget("1", ledger=f"sqlite:///{tmp_path / 'warm.db'}")
            with client_for(provider, server.base_url, warm) as warm_client:
                spendguard.batch(requests_for(provider), client=warm_client, polling=Polling.manual(
                    ManualClock(), progress=None)).results()
        for trial, (provider, kill) in enumerate(kill_points(rng)):
            url = f"sqlite:///{tmp_path / f'{trial}.db'}"
            log_path = tmp_path / f"{trial}.log"
            seen_before = len(emulator.requests)
            run_child(url, server.base_url, provider, kill, log_path)

            ledger = SqliteLedger(tmp_path / f"{trial}.db")
            budget = spendguard.Budget("10", scope="project:ack", ledger=ledger, warn_at=None)
            polling = Polling.manual(ManualClock(), progress=None)
            with client_for(provider, server.base_url, budget) as client:
                resumed = spendguard.reopen_batches(client, ledger=ledger, polling=polling)
                with log_path.open("a") as log:
                    for result in resumed.each():
                        log.write(text_of(result) + "\n")
                again = spendguard.reopen_batches(client, ledger=ledger, polling=polling)
                assert list(again.each()) == [], kill

            delivered = log_path.read_text().splitlines()
            assert sorted(set(delivered)) == expected, kill  # every result, at least once
            _, at, moment = kill
            # Only the one result the application kept but had not acknowledged comes twice.
            twice = [expected[at]] if moment == "kept" else []
            assert sorted(delivered) == sorted(expected + twice), kill
            assert budget.reserved == 0, kill
            assert ledger.verify() == [], kill
            records = list(ledger.records(scope="project:ack"))
            assert len([r for r in records if r.status == "ok"]) == COUNT, kill
            if provider == "gemini":  # found again after a cut-off submission: never resent
                sent = [r.body for r in emulator.requests[seen_before:]
                        if r.path.endswith(":batchGenerateContent")]
                assert [len(b["batch"]["inputConfig"]["requests"]["requests"])
                        for b in sent] == [COUNT], kill  # what reached it == the records
            assert batch_jobs(ledger=ledger, active=True) == [], kill
            ledger.close()


def test_results_after_each_acknowledges_nothing_twice_and_break_keeps_the_rest() -> None:
    world = World(emulator_options={"batch_completion_s": 0})
    run = spendguard.batch([chat(f"q{i}") for i in range(4)], client=world.openai(),
                           polling=world.polling)
    seen = []
    for result in run.each():
        seen.append(text_of(result))
        if len(seen) == 2:
            run.ack(result)  # acknowledged before breaking out
            break
    resumed = spendguard.reopen_batches(world.openai(), ledger=world.budget.ledger,
                                        polling=world.polling, take_over=True)
    assert [text_of(r) for r in resumed.each()] == ["echo: q2", "echo: q3"]
    assert seen == ["echo: q0", "echo: q1"]


def test_a_result_in_hand_at_a_break_is_delivered_again() -> None:
    world = World(emulator_options={"batch_completion_s": 0})
    run = spendguard.batch([message("a"), message("b")], client=world.anthropic(),
                           polling=world.polling)
    for _ in run.each():
        break  # not acknowledged: the caller may not have kept it
    resumed = spendguard.reopen_batches(world.anthropic(), ledger=world.budget.ledger,
                                        polling=world.polling, take_over=True)
    assert [text_of(r) for r in resumed.each()] == ["echo: a", "echo: b"]
    assert world.budget.reserved == 0


def test_each_waits_and_partial_yields_only_what_is_in() -> None:
    world = World()  # batches take 100 s on the emulator's clock
    run = spendguard.batch([chat("a")], client=world.openai(), polling=world.polling)
    with pytest.raises(TimeoutError, match="not finished"):
        list(run.each(timeout=0))
    assert list(run.each(timeout=0, partial=True)) == []
    assert [text_of(r) for r in run.each()] == ["echo: a"]


def test_batch_results_fetches_acknowledged_results_again_and_changes_nothing(
        tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    world = World(ledger=f"sqlite:///{path}", emulator_options={"batch_completion_s": 0})
    run = spendguard.batch([message("a"), message("b")], client=world.anthropic(),
                           polling=world.polling)
    assert [text_of(r) for r in run.results()] == ["echo: a", "echo: b"]  # acknowledged
    spent = world.budget.spent
    ledger = SqliteLedger(path)  # another process: nothing in memory
    after = world.restarted(ledger)
    again = batch_results(after.anthropic(), run.job_ids[0], ledger=ledger)
    assert [text_of(r) for r in again] == ["echo: a", "echo: b"]
    assert sum((r.cost_usd for r in again), ZERO) == spent == after.budget.spent
    assert spendguard.resume_batches(after.anthropic(), ledger=ledger,
                                     polling=after.polling) == []
    assert ledger.verify() == []


def test_the_results_command_writes_every_result_of_a_job_again(tmp_path: Path) -> None:
    emulator = Emulator(clock=ManualClock(), batch_completion_s=0, respond=echo)
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    with serve(emulator) as server:
        budget = spendguard.Budget("10", scope="project:cli", ledger=url, warn_at=None)
        with client_for("openai", server.base_url, budget) as client:
            run = spendguard.batch([chat("x"), chat("y", model=GPT)], client=client,
                                   polling=Polling.manual(ManualClock(), progress=None))
            run.results()
        env = {"OPENAI_API_KEY": "k"}
        args = ["batches", "results", run.job_ids[0], "--ledger", url, "--base-url",
                f"{server.base_url}/v1"]
        first = CliRunner().invoke(main, args, env=env)
        second = CliRunner().invoke(main, args, env=env)
    assert first.exit_code == 0, first.output
    assert first.stdout.count('"status": "succeeded"') == 2
    assert "echo: x" in first.stdout and "echo: y" in first.stdout
    assert second.stdout == first.stdout  # read-only: the same again
    missing = CliRunner().invoke(main, ["batches", "results", "sgb_nope", "--ledger", url])
    assert missing.exit_code != 0 and "no batch job" in missing.output
    assert "Traceback" not in missing.output


async def test_aeach_acknowledges_as_the_async_consumer_advances() -> None:
    world = World(emulator_options={"batch_completion_s": 0})
    run = await spendguard.abatch([chat("a"), chat("b"), chat("c")],
                                  client=world.async_openai(), polling=world.polling)
    seen = []
    async for result in run.aeach():
        seen.append(text_of(result))
        if len(seen) == 2:
            break  # "b" in hand, not acknowledged
    resumed = spendguard.reopen_batches(world.openai(), ledger=world.budget.ledger,
                                        polling=world.polling, take_over=True)
    assert seen == ["echo: a", "echo: b"]
    assert [text_of(r) for r in resumed.each()] == ["echo: b", "echo: c"]
