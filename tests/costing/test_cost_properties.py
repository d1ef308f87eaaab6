"""Properties of cost arithmetic over every model in the bundled table (hypothesis)."""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from spendguard import ModelPrice, PriceTable, Usage, cost
from spendguard._costing import cost as costing

TABLE = PriceTable.bundled()
CHAT_MODELS = [m for m in TABLE.models() if TABLE.get(m).mode == "chat"]
TIERED_MODELS = [m for m in CHAT_MODELS if TABLE.get(m).tiers]
TOKENS = st.integers(min_value=0, max_value=2_000_000)
SMALL = st.integers(min_value=0, max_value=50_000)


def _ttls(entry: ModelPrice) -> list[str]:
    return list(entry.cache_write_usd_per_million) or ["30m"]


@st.composite
def priced_usage(draw: st.DrawFn, models: list[str] = CHAT_MODELS) -> tuple[str, Usage]:
    model = draw(st.sampled_from(models))
    ttl = draw(st.sampled_from(_ttls(TABLE.get(model))))
    return model, Usage(input_tokens=draw(TOKENS), cache_read_tokens=draw(TOKENS),
                        cache_write_tokens={ttl: draw(TOKENS)}, output_tokens=draw(TOKENS))


def _total(model: str, usage: Usage, **options: object) -> Decimal:
    return cost(model, usage, table=TABLE, **options).total  # type: ignore[arg-type]


@settings(max_examples=300)
@given(priced_usage(), SMALL, st.sampled_from(["input", "cache_read", "cache_write", "output"]))
def test_cost_never_falls_when_any_token_count_rises(case: tuple[str, Usage], extra: int,
                                                     bucket: str) -> None:
    model, usage = case
    if bucket == "cache_write":
        ttl, count = next(iter(usage.cache_write_tokens.items()), ("30m", 0))
        if ttl not in _ttls(TABLE.get(model)):
            ttl = _ttls(TABLE.get(model))[0]
        more = replace(usage, cache_write_tokens={ttl: count + extra})
    else:
        more = replace(usage, **{f"{bucket}_tokens": getattr(usage, f"{bucket}_tokens") + extra})
    assert _total(model, more) >= _total(model, usage)


@settings(max_examples=300)
@given(priced_usage(), SMALL)
def test_a_cached_token_never_costs_more_than_an_uncached_one(case: tuple[str, Usage],
                                                              moved: int) -> None:
    model, usage = case
    moved = min(moved, usage.input_tokens)
    cached = replace(usage, input_tokens=usage.input_tokens - moved,
                     cache_read_tokens=usage.cache_read_tokens + moved)
    assert _total(model, cached) <= _total(model, usage)


@settings(max_examples=300)
@given(priced_usage())
def test_batch_halves_every_batch_discounted_line(case: tuple[str, Usage]) -> None:
    model, usage = case
    assume("batch" in TABLE.get(model).modifiers)  # hosts and platforms may have no Batch API
    standard = cost(model, usage, table=TABLE)
    batch = cost(model, usage, batch=True, table=TABLE)
    discounted = TABLE.get(model).modifier("batch")
    for plain, cheap in zip(standard.lines, batch.lines, strict=True):
        if discounted.applies_to(plain.kind):
            assert cheap.usd == plain.usd / 2
        else:
            assert cheap.usd == plain.usd
    assert batch.total <= standard.total


@settings(max_examples=300)
@given(st.sampled_from(TIERED_MODELS), SMALL, SMALL, st.integers(min_value=1, max_value=10_000))
def test_a_long_context_tier_reprices_the_whole_request(model: str, cached: int, output: int,
                                                        over: int) -> None:
    entry = TABLE.get(model)
    tier = entry.tiers[0]
    below = Usage(input_tokens=tier.above_input_tokens - cached, cache_read_tokens=cached,
                  output_tokens=output)
    above = replace(below, input_tokens=below.input_tokens + over)
    base, long = cost(model, below, table=TABLE), cost(model, above, table=TABLE)
    assert base.tier is None and long.tier == tier
    for line in long.lines:  # every line, not only the tokens above the threshold
        assert line.usd_per_million == entry.base_rate(line.kind) * tier.multiplier_for(line.kind)
    assert long.total >= base.total * min(tier.input_multiplier, tier.output_multiplier)


@settings(max_examples=200)
@given(priced_usage())
def test_the_total_is_the_sum_of_exact_lines(case: tuple[str, Usage]) -> None:
    model, usage = case
    result = cost(model, usage, table=TABLE)
    assert result.total == sum(line.usd for line in result.lines)
    for line in result.lines:
        assert line.usd == line.tokens * line.usd_per_million / 1_000_000



@settings(max_examples=200, deadline=None)
@given(st.sampled_from(["gpt-5", "gpt-5.4", "claude-sonnet-4-5"]), st.integers(0, 2_000_000),
       st.integers(0, 200_000), st.sampled_from([None, "flex", "priority"]))
def test_rates_worked_out_once_price_as_rates_worked_out_afresh(
        model: str, input_tokens: int, output: int, tier: str | None) -> None:
    usage = Usage(input_tokens=input_tokens, output_tokens=output,
                  service_tier=tier if model.startswith("gpt") else None)
    remembered = cost(model, usage)
    costing._RATES.clear()
    assert cost(model, usage) == remembered
