"""One service-tier rule: which requested or reported tiers are billed at the base rate."""

from __future__ import annotations

from decimal import Decimal

import pytest

from spendguard import Usage, cost
from spendguard._costing.cost import billable_tier

USAGE = Usage(input_tokens=1_000_000, output_tokens=1_000_000)


@pytest.mark.parametrize("tier", [None, "", "auto", "default", "standard", "standard_only"])
def test_no_tier_and_every_standard_name_bill_the_base_rate(tier: str | None) -> None:
    assert billable_tier(tier) is None


@pytest.mark.parametrize("tier", ["flex", "priority", "fast", "scale", "batch", "ultrafast"])
def test_other_tiers_are_priced_as_their_modifier(tier: str) -> None:
    assert billable_tier(tier) == tier


def test_a_tier_that_is_not_a_string_is_named_as_text() -> None:
    assert billable_tier(2) == "2"


def test_a_reported_empty_tier_is_billed_at_the_base_rate() -> None:
    base = cost("gpt-5.5", USAGE).total
    assert cost("gpt-5.5", Usage(input_tokens=1_000_000, output_tokens=1_000_000,
                                 service_tier="")).total == base
    assert cost("gpt-5.5", USAGE, service_tier="standard_only").total == base


def test_flex_is_priced_at_its_published_half_rate() -> None:
    assert cost("gpt-5.5", USAGE, service_tier="flex").total == \
        cost("gpt-5.5", USAGE).total * Decimal("0.5")
