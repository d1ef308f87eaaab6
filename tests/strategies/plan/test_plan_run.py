"""Plan.run / Plan.arun against the emulator: approval, order, warm-up, outcomes, measures."""

from __future__ import annotations

import asyncio
import io
import threading
from decimal import Decimal
from typing import Any

import httpx2
import pytest

import spendguard
from spendguard.testing import ANTHROPIC_BASE_URL, Emulator
from tests.plan_helpers import (
    GPT,
    anthropic_client,
    anthropic_fanout,
    async_anthropic_client,
    async_openai_client,
    budget,
    emulator,
    openai_client,
    openai_fanout,
)


def test_fifty_requests_sharing_a_document_with_and_without_ordering() -> None:
    measured = {}
    for ordered in (False, True):
        plan = spendguard.plan(anthropic_fanout(50), cache_order=ordered)
        spend = budget("5", f"fanout-{ordered}")
        result = plan.run(anthropic_client(emulator(), spend), concurrency=8)
        assert not result.failures
        assert result.cache.hit_rate == pytest.approx(plan.expected_hit_rate, abs=1e-9)
        assert result.cost_usd <= plan.expected_usd <= plan.worst_usd
        assert spend.spent == result.cost_usd
        measured[ordered] = result
    assert measured[False].cache.hit_rate == 0.0
    assert measured[True].cache.hit_rate > 0.95
    assert measured[True].cost_usd < measured[False].cost_usd / 3
    assert measured[True].cache.saved_usd > 0


def test_results_come_back_in_request_order() -> None:
    bodies = openai_fanout(12)
    result = spendguard.plan(bodies).run(openai_client(emulator(), budget()), concurrency=5)
    assert [o.index for o in result.outcomes] == list(range(12))
    assert [r.id for r in result.responses] == [o.response.id for o in result.outcomes]
    assert all(o.ok and o.usage is not None and o.cost_usd for o in result.outcomes)


def test_the_first_request_of_a_shared_prefix_is_answered_before_the_rest_are_sent() -> None:
    events: list[tuple[str, int]] = []
    lock = threading.Lock()
    emu = emulator()

    class Recording(httpx2.BaseTransport):
        def handle_request(self, request: httpx2.Request) -> httpx2.Response:
            index = int(request.read().decode().split("Who delivers item ")[1].split("?")[0])
            with lock:
                events.append(("sent", index))
            response = emu.transport().handle_request(request)
            with lock:
                events.append(("answered", index))
            return response

    client = spendguard.Anthropic(api_key="k", base_url=ANTHROPIC_BASE_URL, budget=budget(),
                                  http_client=httpx2.Client(transport=Recording()))
    result = spendguard.plan(anthropic_fanout(20), cache_order=True).run(client, concurrency=8)
    assert not result.failures
    assert events[:2] == [("sent", 0), ("answered", 0)]
    usages = [o.usage for o in result.outcomes]
    assert all(u is not None and not u.cache_write_tokens for u in usages[1:])


def test_a_plan_over_budget_asks_approve_before_sending_anything() -> None:
    emu = emulator()
    plan = spendguard.plan(anthropic_fanout(10), cache_order=True)
    asked: list[spendguard.Plan] = []

    def approve(checked: spendguard.Plan) -> bool:
        asked.append(checked)
        assert not emu.requests  # nothing sent while deciding
        return True

    spend = budget("0.10")
    result = plan.run(anthropic_client(emu, spend), approve=approve)
    assert len(asked) == 1 and asked[0].budget_left_usd == Decimal("0.10")
    assert asked[0].worst_usd > Decimal("0.10") and "budget" in asked[0].summary()
    # approval lets the plan start; every call is still guarded on its own
    assert len(result.outcomes) == 10
    assert spend.spent <= Decimal("0.10")


@pytest.mark.parametrize("approve", [None, lambda plan: False])
def test_a_refused_plan_raises_budget_exceeded_and_sends_nothing(approve: Any) -> None:
    emu = emulator()
    plan = spendguard.plan(anthropic_fanout(10))
    with pytest.raises(spendguard.BudgetExceeded, match="nothing was sent") as refused:
        plan.run(anthropic_client(emu, budget("0.01")), approve=approve)
    assert emu.requests == []
    assert refused.value.estimate_usd == plan.worst_usd
    assert refused.value.limit_usd == Decimal("0.01")


def test_a_plan_that_fits_is_not_asked_about() -> None:
    plan = spendguard.plan(openai_fanout(3))
    called: list[object] = []
    result = plan.run(openai_client(emulator(), budget("5")), approve=called.append)
    assert called == [] and len(result.outcomes) == 3


def test_budgets_entered_around_the_run_count_too() -> None:
    outer = budget("0.001")
    with outer, pytest.raises(spendguard.BudgetExceeded) as refused:
        spendguard.plan(openai_fanout(3)).run(openai_client(emulator(), None))
    assert refused.value.scope == outer.scope


def test_failures_are_reported_per_request_and_never_lost() -> None:
    emu = emulator()
    emu.fail_next(2, status=400)
    result = spendguard.plan(openai_fanout(6)).run(openai_client(emu, budget()),
                                                   concurrency=1)
    assert [o.ok for o in result.outcomes] == [False, False, True, True, True, True]
    assert all(f.error is not None and f.cost_usd is None for f in result.failures)
    assert "failed    request 0" in result.report()


def test_calls_refused_by_the_budget_mid_run_are_failures_not_exceptions() -> None:
    spend = budget("0.05")
    result = spendguard.plan(anthropic_fanout(10)).run(anthropic_client(emulator(), spend),
                                                       approve=lambda plan: True,
                                                       concurrency=2)
    refused = [f for f in result.failures if isinstance(f.error, spendguard.BudgetExceeded)]
    assert refused and len(result.outcomes) == 10


def test_expected_output_learns_from_the_ledger_history_of_the_task() -> None:
    spend = budget("5", "history")
    first = spendguard.plan(openai_fanout(6), task="who-delivers", ledger=spend.ledger)
    assert first.output_bases() == {"cap": 6}
    result = first.run(openai_client(emulator(), spend))
    outputs = [o.usage.output_tokens for o in result.outcomes if o.usage is not None]
    again = spendguard.plan(openai_fanout(6), task="who-delivers", ledger=spend.ledger)
    assert again.output_bases() == {"history (6 calls)": 6}
    assert again.rows[0].output_tokens == -(-sum(outputs) // len(outputs))
    assert again.expected_usd < first.expected_usd
    other_task = spendguard.plan(openai_fanout(1), task="other", ledger=spend.ledger)
    assert other_task.output_bases() == {"cap": 1}


def test_the_ledger_keeps_the_estimate_next_to_the_measured_cache_use() -> None:
    spend = budget("5")
    plan = spendguard.plan(anthropic_fanout(5), cache_order=True)
    plan.run(anthropic_client(emulator(), spend))
    stats = spendguard.cache_stats(spend.ledger, tag=f"plan.id={plan.id}")
    assert stats.requests == 5
    assert stats.expected_usd == plan.expected_usd
    assert stats.expected_hit_rate == pytest.approx(plan.expected_hit_rate, abs=1e-4)
    assert stats.hit_rate == pytest.approx(plan.expected_hit_rate, abs=1e-9)
    assert "planned" in str(stats)


def test_the_progress_bar_is_drawn_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    spendguard.plan(openai_fanout(4)).run(openai_client(emulator(), budget()), progress=True)
    err = capsys.readouterr().err
    assert "4/4 [" in err and err.endswith("\n")


def test_no_progress_bar_when_stderr_is_not_a_terminal(capsys: pytest.CaptureFixture[str]
                                                       ) -> None:
    spendguard.plan(openai_fanout(2)).run(openai_client(emulator(), budget()))
    assert capsys.readouterr().err == ""


def _run_async(plan: spendguard.Plan, client: Any, **options: Any) -> spendguard.PlanResult:
    return asyncio.run(plan.arun(client, **options))


def test_async_runs_match_sync_runs() -> None:
    bodies = anthropic_fanout(12)
    sync = spendguard.plan(bodies, cache_order=True).run(anthropic_client(emulator(), budget()))
    async_ = _run_async(spendguard.plan(bodies, cache_order=True),
                        async_anthropic_client(emulator(), budget()))
    assert [o.index for o in async_.outcomes] == [o.index for o in sync.outcomes]
    assert async_.cost_usd == sync.cost_usd
    assert async_.cache == sync.cache


def test_async_approve_may_be_a_coroutine() -> None:
    async def approve(plan: spendguard.Plan) -> bool:
        return False

    emu = emulator()
    with pytest.raises(spendguard.BudgetExceeded):
        _run_async(spendguard.plan(openai_fanout(3)), async_openai_client(emu, budget("0.0001")),
                   approve=approve)
    assert emu.requests == []


def test_sync_and_async_clients_are_not_mixed_up() -> None:
    plan = spendguard.plan(openai_fanout(1))
    with pytest.raises(spendguard.ConfigError, match="arun"):
        plan.run(async_openai_client(emulator()))
    with pytest.raises(spendguard.ConfigError, match=r"plan\.run"):
        _run_async(plan, openai_client(emulator()))


def test_a_client_of_another_provider_is_refused() -> None:
    plan = spendguard.plan(openai_fanout(1) + anthropic_fanout(1))
    with pytest.raises(spendguard.ConfigError, match="plan each provider"):
        plan.run(openai_client(emulator()))


def test_streamed_requests_are_refused_before_sending() -> None:
    emu = emulator()
    body = {**openai_fanout(1)[0], "stream": True}
    with pytest.raises(spendguard.ConfigError, match="stream"):
        spendguard.plan([body]).run(openai_client(emu))
    assert emu.requests == []


def test_fields_the_sdk_does_not_name_travel_in_extra_body() -> None:
    emu = emulator()
    body = {**openai_fanout(1)[0], "custom_vendor_flag": True}
    result = spendguard.plan([body]).run(openai_client(emu, budget()))
    assert result.outcomes[0].ok
    assert emu.requests[-1].body["custom_vendor_flag"] is True


def test_an_unguarded_client_runs_a_plan_too() -> None:
    emu = Emulator()
    result = spendguard.plan(openai_fanout(2)).run(emu.openai_client(), progress=False)
    assert len(result.responses) == 2 and not result.failures


def test_plan_calls_are_tagged_with_the_plan_and_task() -> None:
    spend = budget()
    plan = spendguard.plan(openai_fanout(2), task="triage")
    plan.run(openai_client(emulator(), spend))
    records = [r for r in spend.ledger.records(tag=f"plan.id={plan.id}") if r.tokens]
    assert len(records) == 2 and {r.tags["task"] for r in records} == {"triage"}


def test_the_report_puts_measured_next_to_expected() -> None:
    result = spendguard.plan(openai_fanout(3)).run(openai_client(emulator(), budget()))
    text = result.report()
    assert "measured" in text and "expected" in text and "3 answered, 0 failed" in text


def test_progress_counts_money_and_failures() -> None:
    from spendguard._strategies.plan.progress import Progress

    stream = io.StringIO()
    bar = Progress(3, enabled=True, stream=stream)
    bar.advance(Decimal("0.5"), failed=False)
    bar.advance(None, failed=True)
    bar.close()
    assert "2/3" in stream.getvalue() and "$0.50" in stream.getvalue()
    assert "1 failed" in stream.getvalue()


def test_responses_and_embeddings_requests_run_too() -> None:
    bodies: list[dict[str, Any]] = [
        {"model": "gpt-5.5", "instructions": "Answer briefly.", "input": f"q{i}?",
         "max_output_tokens": 20} for i in range(2)]
    bodies.append({"model": "text-embedding-3-small", "input": ["a", "b"]})
    plan = spendguard.plan(bodies)
    assert [r.endpoint for r in plan.rows] == ["responses", "responses", "embeddings"]
    assert plan.rows[2].output_basis == "none" and plan.rows[2].output_tokens == 0
    result = plan.run(openai_client(emulator(), budget()))
    assert not result.failures
    assert result.outcomes[2].usage is not None and result.outcomes[2].usage.input_tokens == 2


def test_a_custom_price_table_prices_the_plan_and_its_replies() -> None:
    table = spendguard.PriceTable.bundled().with_overrides({"models": {GPT: {
        "usd_per_million": {"input": "4.00", "output": "16.00"},
        "source": "negotiated", "as_of": "2026-11-15"}}})
    bodies = openai_fanout(2, question_first=True)
    plan = spendguard.plan(bodies, table=table)
    assert plan.expected_usd == 10 * spendguard.plan(bodies).expected_usd
    result = plan.run(openai_client(emulator(), budget(), prices=table))
    usage = result.outcomes[0].usage
    assert usage is not None
    assert result.outcomes[0].cost_usd == spendguard.cost(GPT, usage, table=table).total
