"""Cost arithmetic against hand-computed values (each case shows its sum in a comment)."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest
from anthropic.types import Message

from spendguard import Cost, PriceTable, UnknownModelError, Usage, cost

D = Decimal

CASES = [
    # gpt-5.5, prompt 1200 incl. 1024 cached, 300 out: 176 x $5 + 1024 x $0.50 + 300 x $30
    # = 880 + 512 + 9000 = 10392 micro-USD
    ("gpt-5.5", Usage(input_tokens=176, cache_read_tokens=1024, output_tokens=300), {},
     D("0.010392")),
    # claude-sonnet-5: 50 x $2 + 2048 x $2.50 (5m write) + 4096 x $0.20 + 120 x $10
    # = 100 + 5120 + 819.2 + 1200 = 7239.2 micro-USD, + 1 web search x $10/1000 = $0.01
    ("claude-sonnet-5", Usage(input_tokens=50, cache_write_tokens={"5m": 2048},
                              cache_read_tokens=4096, output_tokens=120,
                              tool_requests={"web_search": 1}), {}, D("0.0172392")),
    # claude-opus-5: 1h writes at $10: 1000 x $5 + 10000 x $10 + 100 x $25
    # = 5000 + 100000 + 2500 = 107500 micro-USD
    ("claude-opus-5", Usage(input_tokens=1000, cache_write_tokens={"1h": 10000},
                            output_tokens=100), {}, D("0.1075")),
    # gpt-6.2-sol, 300,000 input (250,000 uncached + 50,000 cached) > 272K: the WHOLE request
    # at 2x input/cache, 1.5x output: 250000 x $4 + 50000 x $0.20 + 10000 x $15
    # = 1.00 + 0.01 + 0.15
    ("gpt-6.2-sol", Usage(input_tokens=250_000, cache_read_tokens=50_000, output_tokens=10_000),
     {}, D("1.16")),
    # exactly 272,000 input tokens is not above the threshold: 272000 x $2 + 10000 x $10
    ("gpt-6.2-sol", Usage(input_tokens=272_000, output_tokens=10_000), {}, D("0.644")),
    # the threshold counts cache writes too: 200K + 72,001 written (30m) crosses it:
    # 200000 x $4 + 72001 x $5 + 0 out = 0.8 + 0.360005
    ("gpt-6.2-sol", Usage(input_tokens=200_000, cache_write_tokens={"30m": 72_001}),
     {}, D("1.160005")),
    # claude-haiku-5-5, prompt 40K + 70K cached = 110K > 100K: everything at 5x:
    # 40000 x $0.50 + 70000 x $0.05 + 1000 x $2.50 = 0.02 + 0.0035 + 0.0025
    ("claude-haiku-5-5", Usage(input_tokens=40_000, cache_read_tokens=70_000,
                               output_tokens=1000), {}, D("0.026")),
    # claude-opus-4-5 Batch: half of every rate: 1M x $2.50 + 100K x $12.50 = 2.5 + 1.25
    ("claude-opus-4-5", Usage(input_tokens=1_000_000, output_tokens=100_000), {"batch": True},
     D("3.75")),
    # a reported batch tier is the same as batch=True
    ("claude-opus-4-5", Usage(input_tokens=1_000_000, output_tokens=100_000,
                              service_tier="batch"), {}, D("3.75")),
    # gpt-4o Batch: cached input keeps its Standard rate (no Batch cached rate published):
    # 1000 x $1.25 + 1000 x $1.25 + 1000 x $5 = 1250 + 1250 + 5000 micro-USD
    ("gpt-4o", Usage(input_tokens=1000, cache_read_tokens=1000, output_tokens=1000),
     {"batch": True}, D("0.0075")),
    # gpt-4o-mini priority uses OpenAI's printed rates $0.25 / $0.125 / $1.00:
    # 1000 x 0.25 + 1000 x 0.125 + 1000 x 1 = 250 + 125 + 1000 micro-USD
    ("gpt-4o-mini", Usage(input_tokens=1000, cache_read_tokens=1000, output_tokens=1000),
     {"service_tier": "priority"}, D("0.001375")),
    # gpt-5.5 priority is 2.5x: 1000 x $12.50 + 1000 x $75 = 12500 + 75000 micro-USD
    ("gpt-5.5", Usage(input_tokens=1000, output_tokens=1000), {"service_tier": "priority"},
     D("0.0875")),
    # flex is half: 1M x $0.625 + 1M x $5 (gpt-5)
    ("gpt-5", Usage(input_tokens=1_000_000, output_tokens=1_000_000),
     {"service_tier": "flex"}, D("5.625")),
    # claude-opus-5-5 fast (2x) in the US (1.1x): 1000 x $4 x 2.2 + 1000 x $20 x 2.2
    # = 8800 + 44000 micro-USD
    ("claude-opus-5-5", Usage(input_tokens=1000, output_tokens=1000, speed="fast",
                              inference_geo="us"), {}, D("0.0528")),
    # claude-opus-4-6 fast mode is 6x: 1000 x $30 + 1000 x $150
    ("claude-opus-4-6", Usage(input_tokens=1000, output_tokens=1000, speed="fast"), {},
     D("0.18")),
    # gpt-5 writes no cache at a premium: 30m writes bill as input: 2000 x $1.25
    ("gpt-5", Usage(cache_write_tokens={"30m": 2000}), {}, D("0.0025")),
    # gpt-6.1-terra 12h writes: 100K x $2.50
    ("gpt-6.1-terra", Usage(cache_write_tokens={"12h": 100_000}), {}, D("0.25")),
    # embeddings: 1M x $0.02
    ("text-embedding-3-small", Usage(input_tokens=1_000_000), {}, D("0.02")),
    # gpt-6.2-sol web searches: 3 x $10 / 1000
    ("gpt-6.2-sol", Usage(tool_requests={"web_search": 3}), {}, D("0.03")),
    # by dated alias, priced as the base model: 100K x $3 (claude-sonnet-4-5)
    ("claude-sonnet-4-5-20250929", Usage(input_tokens=100_000), {}, D("0.3")),
    # ... whose retired 1M beta still prices above 200K at 2x: 300K x $6
    ("claude-sonnet-4-5-20250929", Usage(input_tokens=300_000), {}, D("1.8")),
]


@pytest.mark.parametrize(("model", "usage", "options", "expected"), CASES)
def test_cost_matches_the_hand_computation(model: str, usage: Usage, options: dict[str, object],
                                           expected: Decimal) -> None:
    result = cost(model, usage, **options)  # type: ignore[arg-type]
    assert result.total == expected
    assert result.total == sum(line.usd for line in result.lines)


def test_lines_name_kind_tokens_rate_and_amount() -> None:
    result = cost("claude-sonnet-5", CASES[1][1])
    assert [(line.kind, line.tokens, line.usd_per_million, line.usd) for line in result.lines] == [
        ("input", 50, D("2"), D("0.0001")),
        ("cache_read", 4096, D("0.20"), D("0.0008192")),
        ("cache_write_5m", 2048, D("2.50"), D("0.00512")),
        ("output", 120, D("10"), D("0.0012")),
        ("tool:web_search", 1, D("10000"), D("0.01")),
    ]
    assert result.model == "claude-sonnet-5" and result.tier is None and result.modifiers == ()


def test_cost_says_which_tier_modifiers_and_table_priced_it() -> None:
    result = cost("gpt-6.2-sol", Usage(input_tokens=300_000, service_tier="priority"), batch=True)
    assert result.tier is not None and result.tier.above_input_tokens == 272_000
    assert result.modifiers == ("batch", "priority")
    assert result.table_version == PriceTable.bundled().version
    assert str(result).startswith("$1.20 (gpt-6.2-sol, >272000 input tokens, batch")


def test_the_reported_service_tier_wins_over_the_argument() -> None:
    usage = Usage(input_tokens=1_000_000, service_tier="default")
    assert cost("gpt-5", usage, service_tier="priority").total == D("1.25")
    assert cost("gpt-5", Usage(input_tokens=1_000_000), service_tier="priority").total == D("2.5")
    assert cost("gpt-5", Usage(input_tokens=1_000_000), service_tier="auto").total == D("1.25")


def test_raw_responses_and_sdk_objects_are_read_with_the_models_provider() -> None:
    message: dict[str, Any] = {
        "id": "m", "type": "message", "role": "assistant", "model": "claude-opus-4-5",
        "content": [], "stop_reason": "end_turn", "stop_sequence": None,
        "usage": {"input_tokens": 1_000_000, "output_tokens": 0,
                  "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}}
    assert cost("claude-opus-4-5", message).total == D("5")
    assert cost("claude-opus-4-5", Message.model_validate(message)).total == D("5")
    assert cost("gpt-5", {"prompt_tokens": 1_000_000, "completion_tokens": 0}).total == D("1.25")


def test_estimated_usage_is_flagged_on_the_cost() -> None:
    assert cost("gpt-5", Usage(input_tokens=1, estimated=True)).estimated


def test_unpriced_things_are_errors_never_zero() -> None:
    with pytest.raises(UnknownModelError):
        cost("gpt-7", Usage(input_tokens=1))
    with pytest.raises(UnknownModelError, match="inference_geo_eu") as caught:
        cost("claude-opus-5", Usage(input_tokens=1, inference_geo="eu"))
    assert caught.value.kind == "price modifier"
    with pytest.raises(UnknownModelError, match="code_execution") as caught:
        cost("claude-opus-5", Usage(tool_requests={"code_execution": 1}))
    assert caught.value.kind == "tool"
    with pytest.raises(UnknownModelError, match="output") as caught:
        cost("text-embedding-3-small", Usage(output_tokens=1))
    assert caught.value.kind == "token kind"


def test_a_model_pricing_some_cache_ttls_refuses_the_others() -> None:
    table = PriceTable.bundled().with_overrides({"models": {"w": {
        "provider": "openai", "usd_per_million": {"input": 1, "cache_write_30m": 2, "output": 3},
        "context_window": 1000, "max_output_tokens": 100, "source": "s", "as_of": "2026-11-01"}}})
    assert cost("w", Usage(cache_write_tokens={"30m": 1_000_000}), table=table).total == D("2")
    with pytest.raises(UnknownModelError, match="cache_write_12h"):
        cost("w", Usage(cache_write_tokens={"12h": 1}), table=table)


def test_cost_uses_the_table_it_is_given() -> None:
    table = PriceTable.bundled().with_overrides({"models": {"gpt-5": {
        "usd_per_million": {"input": 1}, "source": "contract", "as_of": "2026-11-20"}}})
    result = cost("gpt-5", Usage(input_tokens=1_000_000), table=table)
    assert result.total == D("1")
    assert result.table_version == table.version != PriceTable.bundled().version


def test_as_dict_is_json_ready() -> None:
    result: Cost = cost("claude-sonnet-5", CASES[1][1])
    data = json.loads(json.dumps(result.as_dict()))
    assert data["total_usd"] == "0.0172392"
    assert data["lines"][0] == {"kind": "input", "tokens": 50, "usd_per_million": "2",
                                "usd": "0.0001"}
    assert data["usage"]["cache_write_tokens"] == {"5m": 2048}
