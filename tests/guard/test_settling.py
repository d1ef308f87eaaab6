"""The settling rules as pure functions: what an implausible, cut-short or untokenized call is
charged."""

from __future__ import annotations

from decimal import Decimal

import pytest

from spendguard import Usage, price
from spendguard._guard.settling import (
    MAX_READABLE_TOKENS,
    STREAM_TAIL_TOKENS,
    check_readable,
    overrun_note,
    stream_output_tokens,
    text_token_bound,
)


def test_usage_above_the_context_window_plus_maximum_output_is_an_overrun_even_if_cheap() -> None:
    mini = price("gpt-4o-mini")  # 128,000-token window, 16,384 maximum output
    cheap = Decimal("0.001")
    assert overrun_note(Usage(cache_read_tokens=150_000), cheap, Decimal(1), mini, 1) is not None
    assert overrun_note(Usage(cache_read_tokens=150_000), cheap, Decimal(1), mini, 2) is None
    assert overrun_note(Usage(input_tokens=10), Decimal(2), Decimal(1), mini, 1) is not None
    assert overrun_note(Usage(input_tokens=10), Decimal(1), Decimal(1), mini, 1) is None


def test_counts_beyond_the_readable_ceiling_are_not_believed() -> None:
    check_readable(Usage(output_tokens=MAX_READABLE_TOKENS))
    with pytest.raises(ValueError, match="output_tokens"):
        check_readable(Usage(output_tokens=MAX_READABLE_TOKENS + 1))
    with pytest.raises(ValueError, match=r"cache_write_tokens\[5m\]"):
        check_readable(Usage(cache_write_tokens={"5m": 10**30}))


@pytest.mark.parametrize(("received", "allowed", "charged"), [
    (0, 10_000, STREAM_TAIL_TOKENS),
    (500, 10_000, 500 + STREAM_TAIL_TOKENS),
    (500, 800, 800),        # never more than the request allowed...
    (900, 800, 900),        # ...and never less than was received
])
def test_a_cut_stream_is_charged_received_plus_the_tail_within_the_cap(
        received: int, allowed: int, charged: int) -> None:
    assert stream_output_tokens(received, allowed) == charged


def test_the_untokenized_bound_is_at_least_one_token_per_byte() -> None:
    assert text_token_bound("héllo") == 6
