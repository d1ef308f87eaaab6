"""spendguard.plan(): tokens by kind and USD per request and in total, before anything is sent."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import spendguard
from spendguard._costing.tokens.bpe import count_text
from tests.plan_helpers import CLAUDE, DOCUMENT, GPT, anthropic_fanout, openai_fanout


def test_a_plan_sums_its_requests() -> None:
    plan = spendguard.plan(anthropic_fanout(10), cache_order=True)
    rows = plan.rows
    assert plan.totals.requests == len(rows) == 10
    assert plan.expected_usd == sum((r.expected_usd for r in rows), Decimal(0))
    assert plan.worst_usd == sum((r.worst_usd for r in rows), Decimal(0))
    assert plan.totals.input_tokens == sum(r.input_tokens for r in rows)
    assert plan.totals.cache_read_tokens == sum(r.cache_read_tokens for r in rows)
    assert isinstance(plan.expected_usd, Decimal)


def test_expected_never_exceeds_worst_for_any_request() -> None:
    for bodies in (anthropic_fanout(5), openai_fanout(5)):
        for ordered in (False, True):
            plan = spendguard.plan(bodies, cache_order=ordered)
            assert all(r.expected_usd <= r.worst_usd for r in plan.rows)
            assert all(r.input_tokens <= r.input_tokens_bound for r in plan.rows)


def test_the_worst_case_is_what_the_guard_reserves() -> None:
    body = openai_fanout(1)[0]
    plan = spendguard.plan([body])
    assert plan.worst_usd == spendguard.cost(GPT, spendguard.Usage(
        input_tokens=plan.rows[0].input_tokens_bound, output_tokens=200)).total


def test_question_first_requests_share_no_cacheable_prefix() -> None:
    plan = spendguard.plan(anthropic_fanout(50))
    assert plan.totals.cache_read_tokens == plan.totals.cache_write_tokens == 0
    assert plan.cache_savings_usd == 0 and plan.expected_hit_rate == 0.0


def test_ordered_requests_write_once_and_read_49_times() -> None:
    plan = spendguard.plan(anthropic_fanout(50), cache_order=True)
    writers = [r for r in plan.rows if r.cache_write_tokens]
    assert [r.index for r in writers] == [0]
    assert all(r.cache_read_tokens == sum(writers[0].cache_write_tokens.values())
               for r in plan.rows[1:])
    assert plan.expected_hit_rate > 0.95
    assert plan.cache_savings_usd > plan.expected_usd  # caching cuts the input bill by ~10x
    assert all(r.group == 0 and r.after == (0,) for r in plan.rows[1:])


def test_openai_prefixes_cache_in_128_token_steps_without_write_charges() -> None:
    plan = spendguard.plan(openai_fanout(20), cache_order=True)
    reads = {r.cache_read_tokens for r in plan.rows[1:]}
    assert len(reads) == 1 and reads.pop() % 128 == 0
    assert plan.totals.cache_write_tokens == 0  # gpt-4.1 bills no cache writes


def test_openai_models_that_bill_writes_expect_them() -> None:
    plan = spendguard.plan(openai_fanout(3, model="gpt-5.6-sol"), cache_order=True)
    assert set(plan.rows[0].cache_write_tokens) == {"30m"}
    assert plan.rows[1].cache_read_tokens > 0


def test_existing_breakpoints_are_honoured_without_cache_order() -> None:
    bodies = anthropic_fanout(5, question_first=True)
    for body in bodies:
        document = body["messages"][0]["content"].pop()
        body["system"] = [{"type": "text", "text": document["source"]["data"],
                           "cache_control": {"type": "ephemeral", "ttl": "1h"}}]
    plan = spendguard.plan(bodies)
    assert set(plan.rows[0].cache_write_tokens) == {"1h"}
    assert plan.rows[4].cache_read_tokens == plan.rows[0].cache_write_tokens["1h"]


def test_a_prefix_under_the_minimum_is_not_expected_to_cache() -> None:
    bodies = anthropic_fanout(3, model="claude-haiku-4-5")
    for body in bodies:
        body["system"] = [{"type": "text", "text": "Short rules.",
                           "cache_control": {"type": "ephemeral"}}]
        body["messages"][0]["content"] = "hi"
    plan = spendguard.plan(bodies)
    assert plan.totals.cache_read_tokens == plan.totals.cache_write_tokens == 0


def test_a_shared_prefix_is_tokenised_once() -> None:
    bodies = openai_fanout(200)
    before = count_text.cache_info()
    spendguard.plan(bodies, cache_order=True)
    after = count_text.cache_info()
    # 200 distinct questions, the document and the system prompt: each encoded at most once
    assert after.misses - before.misses <= 200 + 5


def test_output_comes_from_the_caps_and_says_so() -> None:
    plan = spendguard.plan(anthropic_fanout(3, max_tokens=300))
    assert {r.output_tokens for r in plan.rows} == {300}
    assert plan.output_bases() == {"cap": 3}
    assert "expected output from the output caps (3)" in plan.summary()


def test_output_without_a_cap_is_the_models_maximum() -> None:
    body = {"model": GPT, "messages": [{"role": "user", "content": "hi"}]}
    row = spendguard.plan([body]).rows[0]
    assert row.output_basis == "model maximum"
    assert row.output_tokens == row.output_tokens_worst == spendguard.price(GPT).max_output_tokens


def test_batch_savings_are_half_the_expected_cost() -> None:
    plan = spendguard.plan(openai_fanout(4, question_first=True))
    assert plan.totals.batch_usd == plan.expected_usd / 2
    assert plan.batch_savings_usd == plan.expected_usd / 2


def test_time_at_a_concurrency() -> None:
    plan = spendguard.plan(openai_fanout(16, max_tokens=100, question_first=True),
                           first_token_s=1.0,
                           output_tok_s=100.0)
    assert plan.rows[0].latency_s == pytest.approx(2.0)
    assert plan.duration_s(1) == pytest.approx(32.0)
    assert plan.duration_s(16) == pytest.approx(2.0)
    warmed = spendguard.plan(openai_fanout(16, max_tokens=100), cache_order=True,
                             first_token_s=1.0, output_tok_s=100.0)
    assert warmed.duration_s(16) == pytest.approx(4.0)  # the first request warms the cache


def test_openai_batch_input_files_are_planned(tmp_path: Path) -> None:
    path = tmp_path / "batch.jsonl"
    lines = [{"custom_id": f"q{i}", "method": "POST", "url": "/v1/chat/completions",
              "body": body} for i, body in enumerate(openai_fanout(3))]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n\n")
    plan = spendguard.plan(path)
    assert [r.custom_id for r in plan.rows] == ["q0", "q1", "q2"]
    assert {r.endpoint for r in plan.rows} == {"chat.completions"}


def test_anthropic_message_batch_files_are_planned(tmp_path: Path) -> None:
    path = tmp_path / "batch.jsonl"
    path.write_text("\n".join(json.dumps({"custom_id": f"r{i}", "params": body})
                              for i, body in enumerate(anthropic_fanout(2))))
    plan = spendguard.plan(str(path))
    assert [(r.custom_id, r.provider) for r in plan.rows] == [("r0", "anthropic"),
                                                              ("r1", "anthropic")]


@pytest.mark.parametrize(("content", "match"), [
    ("not json\n", "line 1: not JSON"),
    ('{"custom_id": "a", "method": "POST", "url": "/v1/images", "body": {}}\n', "url"),
    ('{"custom_id": "a"}\n', "needs a 'model'"),
    ("\n", "no requests"),
])
def test_bad_batch_files_name_the_line_and_the_fix(tmp_path: Path, content: str,
                                                   match: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(content)
    with pytest.raises(spendguard.ConfigError, match=match):
        spendguard.plan(path)


def test_an_unpriced_model_is_an_error_that_says_how_to_add_it() -> None:
    with pytest.raises(spendguard.UnknownModelError, match="register_prices"):
        spendguard.plan([{"model": "gpt-unknown-9", "messages": [{"role": "user",
                                                                  "content": "x"}]}])


def test_a_body_without_a_model_names_the_request() -> None:
    with pytest.raises(spendguard.ConfigError, match=r"requests\[1\]"):
        spendguard.plan([openai_fanout(1)[0], {"messages": []}])


@pytest.mark.parametrize("concurrency", [0, -1, True])
def test_concurrency_must_be_positive(concurrency: Any) -> None:
    with pytest.raises(spendguard.ConfigError, match="concurrency"):
        spendguard.plan(openai_fanout(1), concurrency=concurrency)


def test_volatile_values_in_the_prefix_are_flagged_once_per_place() -> None:
    bodies = anthropic_fanout(5)
    for i, body in enumerate(bodies):
        body["system"] = f"Rules.\n\nNow: 2026-05-21T10:{i:02d}:00Z"
    plan = spendguard.plan(bodies, cache_order=True)
    assert [(v.where, v.kind) for v in plan.volatile] == [("system", "timestamp")]
    assert "volatile timestamp" in plan.summary()


def test_as_dict_carries_the_cli_fields_as_exact_strings() -> None:
    data = spendguard.plan(openai_fanout(2)).as_dict(per_request=True)
    assert {"requests", "input_tokens", "expected_usd", "worst_usd"} <= set(data)
    assert Decimal(data["expected_usd"]) > 0
    assert [row["index"] for row in data["per_request"]] == [0, 1]
    json.dumps(data)


def test_mixed_providers_can_be_planned_together() -> None:
    plan = spendguard.plan(openai_fanout(1) + anthropic_fanout(1))
    assert [r.provider for r in plan.rows] == ["openai", "anthropic"]
    assert set(plan.as_dict()["models"]) == {GPT, CLAUDE}


def test_a_document_in_the_system_prompt_is_shared_without_ordering() -> None:
    bodies = [{"model": GPT, "max_completion_tokens": 50,
               "messages": [{"role": "system", "content": DOCUMENT},
                            {"role": "user", "content": f"q{i}"}]} for i in range(3)]
    plan = spendguard.plan(bodies)
    assert plan.rows[0].cache_read_tokens == 0 and plan.rows[2].cache_read_tokens > 4000


def test_a_timestamp_every_request_shares_is_not_volatile() -> None:
    bodies = anthropic_fanout(4)
    for body in bodies:
        body["system"] = "Rules as of 2026-05-21T10:00:00Z: answer in one sentence."
    plan = spendguard.plan(bodies, cache_order=True)
    assert plan.volatile == ()
    assert plan.rows[3].cache_read_tokens > 4000


@given(st.integers(min_value=1, max_value=12), st.integers(min_value=1, max_value=4000),
       st.booleans(), st.sampled_from(["anthropic", "openai"]))
@settings(max_examples=25, deadline=None)
def test_every_row_splits_its_input_exactly_and_stays_under_its_worst_case(
        count: int, cap: int, ordered: bool, provider: str) -> None:
    bodies = anthropic_fanout(count, max_tokens=cap) if provider == "anthropic" else \
        openai_fanout(count, max_tokens=cap)
    plan = spendguard.plan(bodies, cache_order=ordered)
    for row in plan.rows:
        writes = sum(row.cache_write_tokens.values())
        assert row.uncached_input_tokens + row.cache_read_tokens + writes == row.input_tokens
        assert row.uncached_input_tokens >= 0
        assert row.expected_usd <= row.worst_usd
        assert row.output_tokens == cap
    assert plan.totals.cache_read_tokens <= plan.totals.input_tokens
