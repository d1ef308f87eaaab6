"""Gemini Batch Mode through spendguard.batch(): half price, all or nothing, every request
that reached the provider recorded once."""

from __future__ import annotations

import json
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from google.genai import types

import spendguard
from spendguard._strategies.batch import Polling, batch_jobs
from spendguard.cli import main
from spendguard.testing import Emulator, ManualClock, serve
from tests.batching_helpers import FLASH, World, content, echo

MILLION = Decimal(1_000_000)
# gemini-2.5-flash: $0.30 in, $2.50 out per million (pricing/gemini.toml); Batch Mode is
# 50% of that (ai.google.dev/gemini-api/docs/batch-mode).
FLASH_IN, FLASH_OUT = Decimal("0.30"), Decimal("2.50")


def standard_usd(meta: Any) -> Decimal:
    """An ordinary gemini-2.5-flash call's bill, from a response's usage_metadata."""
    output = meta.candidates_token_count + (meta.thoughts_token_count or 0)
    usd: Decimal = (meta.prompt_token_count * FLASH_IN + output * FLASH_OUT) / MILLION
    return usd


def inline_requests_received(world: World) -> int:
    """Requests the provider received inside batch submissions."""
    return sum(len(r.body["batch"]["inputConfig"]["requests"]["requests"])
               for r in world.emulator.requests if r.path.endswith(":batchGenerateContent"))


def test_a_gemini_batch_costs_exactly_half_the_standard_price_of_each_request() -> None:
    world = World()
    run = spendguard.batch([content(f"q{i}") for i in range(3)], client=world.gemini(),
                           polling=world.polling)
    assert world.budget.reserved == run.worst_usd > 0  # held before the first poll
    results = run.results()
    assert [r.response.text for r in results] == ["echo: q0", "echo: q1", "echo: q2"]
    for result in results:
        standard = standard_usd(result.response.usage_metadata)
        assert result.route == "batch" and result.model == FLASH
        assert result.standard_usd == standard
        assert result.cost_usd == standard / 2 == result.savings_usd
    records = list(world.budget.ledger.records())
    assert [(r.provider, r.endpoint, r.status) for r in records] == [
        ("gemini", "generate_content", "ok")] * 3
    assert inline_requests_received(world) == len(records)  # reached the provider == records
    assert world.budget.spent == sum((r.cost_usd for r in results), Decimal(0))
    assert world.budget.reserved == 0
    assert world.submissions() == 1


def test_a_refused_gemini_batch_sends_nothing_and_holds_nothing() -> None:
    world = World(limit_usd="0.00001")
    with pytest.raises(spendguard.BudgetExceeded, match="nothing was submitted"):
        spendguard.batch([content(f"q{i}") for i in range(3)], client=world.gemini(),
                         polling=world.polling)
    assert world.emulator.requests == []
    assert batch_jobs(ledger=world.budget.ledger) == []
    assert world.budget.reserved == 0 and world.budget.spent == 0


def test_a_batch_created_directly_through_a_guarded_gemini_client_is_refused_unsent() -> None:
    world = World()
    with pytest.raises(spendguard.UnsupportedEndpointError, match=r"spendguard\.batch\(\)"):
        world.gemini().batches.create(model=FLASH, src=[types.InlinedRequest(contents="hi")])
    assert world.emulator.requests == []


def test_each_gemini_batch_runs_one_model() -> None:
    world = World(emulator_options={"batch_completion_s": 0})
    run = spendguard.batch([content("a"), content("b", model="gemini-2.5-pro"), content("c")],
                           client=world.gemini(), polling=world.polling)
    assert len(run.job_ids) == 2 and world.submissions() == 2
    assert [r.model for r in run.results()] == [FLASH, "gemini-2.5-pro", FLASH]


async def test_an_async_gemini_batch_runs_through_client_aio() -> None:
    world = World()
    run = await spendguard.abatch([content("a"), content("b")], client=world.gemini().aio,
                                  polling=world.polling)
    results = await run
    assert [r.response.text for r in results] == ["echo: a", "echo: b"]
    assert all(r.cost_usd == standard_usd(r.response.usage_metadata) / 2 for r in results)
    assert world.budget.reserved == 0


def test_a_late_gemini_batch_is_cancelled_and_what_it_did_not_run_falls_back() -> None:
    world = World(emulator_options={"batch_completion_s": 10_000})
    run = spendguard.batch([content(f"q{i}") for i in range(4)], client=world.gemini(),
                           polling=world.polling, deadline=timedelta(seconds=1000),
                           fallback=True, fallback_lead_s=600)
    results = run.results()
    assert [r.response.text for r in results] == [f"echo: q{i}" for i in range(4)]
    assert {r.route for r in results} == {"fallback"}  # nothing finished by the rescue
    assert world.sent("POST", ":cancel") == 1
    for result in results:  # an ordinary call: full price
        assert result.cost_usd == standard_usd(result.response.usage_metadata)
    assert world.budget.reserved == 0
    records = list(world.budget.ledger.records())
    # The batch ran none of them: its holds were released; each ordinary call billed once.
    assert sorted(r.status for r in records) == ["ok"] * 4 + ["released"] * 4


def test_requests_that_are_not_generate_content_arguments_are_refused_by_name() -> None:
    world = World()
    body = {"model": FLASH, "contents": "hi", "generationConfig": {"maxOutputTokens": 5}}
    with pytest.raises(spendguard.ConfigError, match=r"requests\[0\]: generationConfig"):
        spendguard.batch([body], client=world.gemini(), polling=world.polling)
    assert world.emulator.requests == [] and world.budget.reserved == 0


def test_a_vertex_ai_client_is_refused_before_anything_is_reserved() -> None:
    world = World()
    client = spendguard.Gemini(vertexai=True, api_key="k", budget=world.budget,
                               http_options=world.emulator.gemini_http_options())
    with pytest.raises(spendguard.ConfigError, match="Developer API"):
        spendguard.batch([content("a")], client=client, polling=world.polling)
    assert world.emulator.requests == [] and world.budget.reserved == 0


def test_the_batches_command_collects_a_gemini_job_a_stopped_process_left(
        tmp_path: Path) -> None:
    emulator = Emulator(clock=ManualClock(), batch_completion_s=0, respond=echo)
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    with serve(emulator) as server:
        budget = spendguard.Budget("10", scope="project:cli", ledger=url, warn_at=None)
        client = spendguard.Gemini(api_key="k", budget=budget, http_options=types.HttpOptions(
            base_url=server.base_url))
        run = spendguard.batch([content("x"), content("y")], client=client,
                               polling=Polling.manual(ManualClock(), progress=None))
        job_id, = run.job_ids
        del run  # stopped before collecting anything
        resumed = CliRunner().invoke(main, ["batches", "resume", "--ledger", url,
                                            "--base-url", server.base_url],
                                     env={"GEMINI_API_KEY": "k"})
        again = CliRunner().invoke(main, ["batches", "results", job_id, "--ledger", url,
                                          "--base-url", server.base_url],
                                   env={"GEMINI_API_KEY": "k"})
    assert resumed.exit_code == 0, resumed.output
    lines = [json.loads(line) for line in resumed.stdout.splitlines()]
    texts = [line["response"]["candidates"][0]["content"]["parts"][0]["text"] for line in lines]
    assert texts == ["echo: x", "echo: y"]
    assert again.exit_code == 0 and again.stdout == resumed.stdout  # read again, unchanged
    after = spendguard.Budget("10", scope="project:cli", ledger=url, warn_at=None)
    assert after.reserved == 0
    assert after.spent == sum((Decimal(line["cost_usd"]) for line in lines), Decimal(0)) > 0


def test_requests_an_expired_gemini_batch_did_not_run_are_released_as_expired() -> None:
    world = World(emulator_options={"batch_completion_s": 60 * 3600})  # past the 48 hours
    run = spendguard.batch([content(f"q{i}") for i in range(5)], client=world.gemini(),
                           polling=Polling.manual(world.clock, progress=None,
                                                  first_wait_s=3600, max_wait_s=3600))
    results = run.results()
    assert [r.status for r in results] == ["succeeded"] * 4 + ["expired"]
    assert world.budget.spent == sum((r.cost_usd for r in results), Decimal(0)) > 0
    assert results[4].cost_usd == 0 and world.budget.reserved == 0


def test_a_gemini_batch_over_the_limits_is_split_in_order() -> None:
    world = World(emulator_options={"batch_completion_s": 0})
    run = spendguard.batch([content(f"q{i}") for i in range(3)], client=world.gemini(),
                           polling=world.polling,
                           limits=spendguard.BatchLimits(gemini_max_requests=2))
    assert len(run.job_ids) == 2 and world.submissions() == 2
    assert [r.response.text for r in run.results()] == ["echo: q0", "echo: q1", "echo: q2"]
    assert inline_requests_received(world) == 3
