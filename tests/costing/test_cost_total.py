"""``costing.total_usd`` (the guard's pricing path) against ``cost`` over the bundled table."""

from __future__ import annotations

from decimal import Decimal

from hypothesis import given, settings
from hypothesis import strategies as st

from spendguard import PriceTable, SpendguardError, Usage, cost
from spendguard._costing.cost import total_usd

TABLE = PriceTable.bundled()
MODELS = TABLE.models()
TOKENS = st.integers(min_value=0, max_value=3_000_000)
LABELS = st.sampled_from([None, "", "default", "auto", "standard", "flex", "priority", "batch",
                          "scale", "fast"])


@st.composite
def usages(draw: st.DrawFn) -> tuple[str, Usage, str | None, bool]:
    model = draw(st.sampled_from(MODELS))
    entry = TABLE.get(model)
    ttls = draw(st.lists(st.sampled_from([*entry.cache_write_usd_per_million, "5m", "1h"]),
                         max_size=2, unique=True))
    tools = draw(st.dictionaries(st.sampled_from(["web_search", "web_fetch"]),
                                 st.integers(0, 50), max_size=1))
    usage = Usage(input_tokens=draw(TOKENS), cache_read_tokens=draw(TOKENS),
                  cache_write_tokens={ttl: draw(TOKENS) for ttl in ttls},
                  output_tokens=draw(TOKENS), tool_requests=tools,
                  service_tier=draw(LABELS), speed=draw(st.sampled_from([None, "fast"])),
                  inference_geo=draw(st.sampled_from([None, "global", "us"])))
    return model, usage, draw(LABELS), draw(st.booleans())


def _outcome(price: object) -> tuple[str, Decimal | str]:
    """A total (its exact text too: same digits, same exponent) or the error it raised."""
    try:
        total = price()  # type: ignore[operator]
    except SpendguardError as exc:
        return type(exc).__name__, str(exc)
    assert isinstance(total, Decimal)
    return str(total), total


@settings(max_examples=500, deadline=None)
@given(usages())
def test_the_guards_total_is_cost_total_to_the_digit_or_the_same_error(
        case: tuple[str, Usage, str | None, bool]) -> None:
    model, usage, tier, batch = case
    entry = TABLE.get(model)
    expected = _outcome(lambda: cost(model, usage, service_tier=tier, batch=batch,
                                     table=TABLE).total)
    got = _outcome(lambda: total_usd(entry, usage, service_tier=tier, batch=batch))
    assert got == expected


def test_a_usage_with_server_tool_requests_is_priced_with_its_tool_rate() -> None:
    entry = TABLE.get("gpt-4o-mini")
    usage = Usage(input_tokens=1000, output_tokens=10, tool_requests={"web_search": 3})
    assert total_usd(entry, usage) == cost("gpt-4o-mini", usage, table=TABLE).total
    assert total_usd(entry, usage) > total_usd(entry, Usage(input_tokens=1000, output_tokens=10))
