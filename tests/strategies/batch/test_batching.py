"""Deferred requests and spendguard.batch() against the emulated batch APIs, driven by a clock."""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal

import anthropic
import openai
import pytest
from openai.types import CreateEmbeddingResponse
from openai.types.chat import ChatCompletion
from openai.types.responses import Response

import spendguard
from spendguard import BatchRequest, BudgetExceeded, ConfigError, Polling
from tests.batching_helpers import CLAUDE, GPT, World, batch_usd, chat, message


def test_a_deferred_chat_call_returns_the_sdk_object_at_batch_price() -> None:
    world = World()
    client = world.openai()
    handle = client.deferred(polling=world.polling).chat.completions.create(**chat("hello"))
    assert world.submissions() == 0  # queued until someone waits
    completion = handle.result()
    assert isinstance(completion, ChatCompletion)
    assert completion.choices[0].message.content
    assert world.submissions() == 1
    assert completion.usage is not None
    usage = spendguard.usage_from("openai", completion)
    assert world.budget.spent == batch_usd(GPT, usage) > 0
    assert world.budget.reserved == 0


def test_deferred_calls_made_before_a_wait_share_one_batch() -> None:
    world = World()
    deferred = world.openai().deferred(polling=world.polling)
    handles = [deferred.chat.completions.create(**chat(f"q{i}")) for i in range(5)]
    assert deferred.pending == 5
    texts = [h.result().choices[0].message.content for h in reversed(handles)]
    assert texts == [f"echo: q{i}" for i in reversed(range(5))]
    assert world.submissions() == 1
    assert len({h.job_id for h in handles}) == 1
    assert deferred.pending == 0


def test_a_deferred_anthropic_message_comes_back_as_a_message() -> None:
    world = World()
    handle = world.anthropic().deferred(polling=world.polling).messages.create(**message("hi"))
    reply = handle.result()
    assert isinstance(reply, anthropic.types.Message)
    assert reply.usage.service_tier == "batch"
    assert world.budget.spent == batch_usd(CLAUDE, spendguard.usage_from("anthropic", reply))


def test_responses_and_embeddings_defer_too() -> None:
    world = World()
    deferred = world.openai().deferred(polling=world.polling)
    response = deferred.responses.create(model=GPT, input="hi", max_output_tokens=30)
    embedding = deferred.embeddings.create(model="text-embedding-3-small", input=["a", "b"])
    assert isinstance(embedding.result(), CreateEmbeddingResponse)
    assert isinstance(response.result(), Response)
    assert world.submissions() == 2  # one batch per endpoint (and model)


def test_batch_returns_results_in_request_order_with_costs_and_savings() -> None:
    world = World()
    run = spendguard.batch([chat(f"question {i}") for i in range(4)], client=world.openai(),
                           polling=world.polling)
    assert world.budget.reserved == run.worst_usd > 0
    results = run.results()
    assert [r.index for r in results] == [0, 1, 2, 3]
    assert all(r.ok and r.route == "batch" for r in results)
    assert all(isinstance(r.response, ChatCompletion) for r in results)
    for result in results:
        assert result.usage is not None
        assert result.cost_usd == batch_usd(GPT, result.usage)
        assert result.standard_usd == spendguard.cost(
            GPT, replace(result.usage, service_tier=None)).total
        assert result.savings_usd == result.standard_usd - result.cost_usd > 0
    assert world.budget.spent == sum((r.cost_usd for r in results), Decimal(0))
    assert world.budget.reserved == 0


def test_each_request_is_one_ledger_record_tagged_with_its_job() -> None:
    world = World()
    run = spendguard.batch([chat("a"), chat("b")], client=world.openai(), polling=world.polling)
    run.results()
    records = list(world.budget.ledger.records())
    assert [r.tags["batch_job"] for r in records] == run.job_ids * 2
    assert {(r.endpoint, r.status) for r in records} == {("chat.completions", "ok")}


def test_a_batch_that_does_not_fit_is_refused_and_nothing_is_submitted() -> None:
    world = World(limit_usd="0.001")
    with pytest.raises(BudgetExceeded, match="cannot take this batch") as caught:
        spendguard.batch([chat(f"q{i}", max_tokens=2000) for i in range(5)],
                         client=world.openai(), polling=world.polling)
    assert caught.value.estimate_usd > Decimal("0.001")
    assert world.emulator.requests == []
    assert world.budget.reserved == 0
    assert list(world.budget.ledger.records()) == []


def test_a_deferred_request_refused_by_the_budget_raises_on_result() -> None:
    world = World(limit_usd="0.0001")
    handle = world.openai().deferred(polling=world.polling).chat.completions.create(
        **chat("hi", max_tokens=5000))
    with pytest.raises(BudgetExceeded):
        handle.result()
    with pytest.raises(BudgetExceeded):
        handle.result()  # still refused: nothing was submitted
    assert world.submissions() == 0


def test_waiting_backs_off_and_reports_progress() -> None:
    world = World(emulator_options={"batch_completion_s": 300})
    spendguard.batch([chat("a")], client=world.openai(), polling=world.polling).results()
    waits = [int(line.rsplit("in ", 1)[1].rstrip("s")) for line in world.progress]
    assert waits == [10, 20, 40, 80, 160]
    assert "validating, 0/1 done" in world.progress[0]
    assert "in_progress" in world.progress[-1]


def test_progress_goes_to_stderr_by_default(capsys: pytest.CaptureFixture[str]) -> None:
    world = World()
    polling = Polling.manual(world.clock)
    spendguard.batch([chat("a")], client=world.openai(), polling=polling).results()
    err = capsys.readouterr().err
    assert "spendguard: batch job sgb_" in err and "next check in 10s" in err


def test_a_timeout_leaves_the_job_running_and_a_later_wait_collects_it() -> None:
    world = World(emulator_options={"batch_completion_s": 3600})
    run = spendguard.batch([chat("a")], client=world.openai(), polling=world.polling)
    with pytest.raises(TimeoutError, match="keep running"):
        run.results(timeout=60)
    assert world.budget.reserved > 0
    assert [r.ok for r in run.results()] == [True]


def test_results_are_handed_over_once_and_kept_for_the_same_run() -> None:
    world = World()
    run = spendguard.batch([chat("a")], client=world.openai(), polling=world.polling)
    first = run.results()
    assert run.results() == first
    assert spendguard.resume_batches(world.openai(), polling=world.polling) == []


def test_custom_ids_and_endpoints_can_be_named() -> None:
    world = World()
    run = spendguard.batch(
        [BatchRequest(chat("a"), custom_id="first"),
         BatchRequest({"model": GPT, "input": "b", "max_output_tokens": 20},
                      endpoint="responses", custom_id="second")],
        client=world.openai(), polling=world.polling)
    results = run.results()
    assert [(r.custom_id, type(r.response).__name__) for r in results] == [
        ("first", "ChatCompletion"), ("second", "Response")]


@pytest.mark.parametrize(("requests", "match"), [
    ([{**chat("a"), "stream": True}], "stream=True cannot be deferred"),
    ([BatchRequest(chat("a"), custom_id="bad id!")], "custom_id"),
    ([BatchRequest(chat("a"), custom_id="x"), BatchRequest(chat("b"), custom_id="x")],
     "used twice"),
    ([BatchRequest(chat("a"), endpoint="messages")], "openai batches run"),
    ([{**chat("a"), "extra_headers": {"x": "1"}}], "extra_headers"),
    ([{"messages": []}], "model"),
    ([], "at least one request"),
])
def test_bad_requests_are_refused_before_anything_is_reserved(requests: list[object],
                                                              match: str) -> None:
    world = World()
    with pytest.raises(ConfigError, match=match):
        spendguard.batch(requests, client=world.openai(), polling=world.polling)  # type: ignore[arg-type]
    assert world.budget.reserved == 0 and world.emulator.requests == []


def test_unknown_models_are_refused_with_the_usual_error() -> None:
    world = World()
    with pytest.raises(spendguard.UnknownModelError):
        spendguard.batch([chat("a", model="gpt-nonexistent")], client=world.openai(),
                         polling=world.polling)


def test_sdk_sentinels_and_extra_body_are_read_like_the_sdk_does() -> None:
    world = World()
    run = spendguard.batch([{**chat("a"), "temperature": openai.NOT_GIVEN,
                             "extra_body": {"seed": 7}, "timeout": 30}],
                           client=world.openai(), polling=world.polling)
    run.results()
    upload = next(r for r in world.emulator.requests if r.path.endswith("/files"))
    assert upload.body["bytes"] > 0
    assert run.cores[0].items[run.custom_ids()[0]].body is None  # dropped once final


def test_fallback_needs_a_deadline_and_a_guarded_client() -> None:
    world = World()
    with pytest.raises(ConfigError, match="needs a deadline"):
        spendguard.batch([chat("a")], client=world.openai(), fallback=True)
    plain = world.emulator.openai_client()
    with pytest.raises(ConfigError, match="guarded client"):
        spendguard.batch([chat("a")], client=plain, fallback=True, deadline=3600)


def test_an_unguarded_client_batches_under_the_budgets_around_it() -> None:
    world = World()
    with world.budget:
        run = spendguard.batch([chat("a")], client=world.emulator.openai_client(),
                               polling=world.polling)
        assert world.budget.reserved > 0
    assert run.results()[0].ok
    assert world.budget.spent == run.results()[0].cost_usd


def test_a_sync_run_is_not_awaited_and_an_async_client_is_not_batched_sync() -> None:
    world = World()
    with pytest.raises(ConfigError, match="abatch"):
        spendguard.batch([chat("a")], client=world.async_openai())
    with pytest.raises(ConfigError, match="openai, anthropic or google-genai client"):
        spendguard.batch([chat("a")], client=object())
