"""Properties of platform and self-hosted prices (hypothesis)."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

from hypothesis import given, settings
from hypothesis import strategies as st

from spendguard import PriceTable, SelfHosted, Usage, cost

TABLE = PriceTable.bundled()
# Every platform entry next to the Claude API entry it was derived from.
DERIVED = [(m, TABLE.get(m).count_as) for m in TABLE.models()
           if m.startswith(("bedrock", "vertex")) and TABLE.get(m).count_as]
TOKENS = st.integers(min_value=0, max_value=300_000)


@settings(max_examples=200)
@given(st.sampled_from(DERIVED), TOKENS, TOKENS, TOKENS, TOKENS)
def test_a_platform_entry_costs_its_uplift_times_the_claude_api(
        pair: tuple[str, str], uncached: int, read: int, write: int, output: int) -> None:
    platform, base = pair
    usage = Usage(input_tokens=uncached, cache_read_tokens=read,
                  cache_write_tokens={"5m": write}, output_tokens=output)
    uplift = Decimal("1.1") if platform.startswith(("bedrock-regional", "vertex-regional")) \
        else Decimal(1)
    assert cost(platform, usage, table=TABLE).total == \
        cost(base, usage, table=TABLE).total * uplift


@settings(max_examples=200)
@given(st.integers(1, 64), st.decimals("0.01", "20", places=2),
       st.integers(1, 100_000), st.integers(1, 1_000_000), st.integers(0, 10_000_000))
def test_tokens_served_at_full_load_for_an_hour_cost_about_the_hourly_rent(
        gpus: int, rate: Decimal, output_tok_s: int, input_tok_s: int, tokens: int) -> None:
    served = SelfHosted.measured("local", base_url="http://gpu.invalid/v1", model="m",
                                 gpu="h100", gpu_count=gpus, usd_per_gpu_hour=rate,
                                 output_tok_s=output_tok_s, input_tok_s=input_tok_s,
                                 context_window=8192, max_output_tokens=4096,
                                 as_of=date(2026, 12, 1))
    hour_of_output = Decimal(output_tok_s * 3600)
    allocated = served.output_usd_per_million * hour_of_output / 1_000_000
    # Rates are rounded up at the ninth decimal: never below an hour's rent, barely above.
    assert served.usd_per_hour <= allocated <= served.usd_per_hour + hour_of_output / 10**15
    assert served.input_usd_per_million * tokens >= \
        served.usd_per_hour * tokens / (Decimal(input_tok_s) * 3600) * 1_000_000
