"""Stop policies and the next-step projection, as pure functions of the loop state."""

from __future__ import annotations

from decimal import Decimal

from hypothesis import given
from hypothesis import strategies as st

from spendguard import (
    LoopState,
    StopReason,
    project_next_usd,
    stop_after_seconds,
    stop_after_usd,
    stop_all,
    stop_any,
    stop_never,
    stop_when_unaffordable,
)

CENTS = st.decimals(min_value=0, max_value=100, places=2)


def state(**changes: object) -> LoopState:
    base: dict[str, object] = {"steps": 0, "spent_usd": Decimal(0), "step_costs_usd": (),
                               "next_step_usd": Decimal(0), "elapsed_s": 0.0,
                               "stalled_steps": 0, "budget_left_usd": None}
    base.update(changes)
    return LoopState(**base)  # type: ignore[arg-type]


def test_projection_before_any_step_is_the_first_step_guess() -> None:
    assert project_next_usd([]) == 0
    assert project_next_usd([], Decimal("0.02")) == Decimal("0.02")


def test_projection_table() -> None:
    d = Decimal
    assert project_next_usd([d("0.10")]) == d("0.10")
    assert project_next_usd([d("0.10"), d("0.20")]) == d("0.30")
    assert project_next_usd([d("0.50"), d("0.10")]) == d("0.50")  # cheap step after dear one
    assert project_next_usd([d("0.9"), d("0.1"), d("0.1"), d("0.1")]) == d("0.1")  # 3 back


@given(st.lists(CENTS, min_size=1, max_size=20))
def test_projection_never_below_the_dearest_of_the_last_three(costs: list[Decimal]) -> None:
    assert project_next_usd(costs) >= max(costs[-3:])


@given(CENTS, CENTS, st.integers(min_value=2, max_value=10))
def test_projection_continues_a_steady_growth_exactly(start: Decimal, growth: Decimal,
                                                      steps: int) -> None:
    costs = [start + growth * i for i in range(steps)]
    assert project_next_usd(costs) == start + growth * steps


def test_usd_cap_stops_when_spent_or_when_the_next_step_would_overrun() -> None:
    cap = stop_after_usd("1")
    assert cap(state(spent_usd=Decimal("0.5"), next_step_usd=Decimal("0.5"))) is None
    over = cap(state(spent_usd=Decimal("0.5"), next_step_usd=Decimal("0.51")))
    assert over is not None and over.reason is StopReason.USD
    assert cap(state(spent_usd=Decimal("1"))) is not None
    assert stop_after_usd(0)(state()) is not None  # a $0 cap allows nothing


def test_unaffordable_needs_a_budget_reading() -> None:
    policy = stop_when_unaffordable()
    assert policy(state()) is None
    assert policy(state(budget_left_usd=Decimal(0))) is not None
    assert policy(state(budget_left_usd=Decimal("0.2"), next_step_usd=Decimal("0.3"))) \
        is not None
    assert policy(state(budget_left_usd=Decimal("0.3"), next_step_usd=Decimal("0.3"))) is None


def test_any_keeps_the_first_reason_and_all_needs_every_one() -> None:
    late = stop_after_seconds(10)
    dear = stop_after_usd("1")
    now = state(elapsed_s=11.0, spent_usd=Decimal(2))
    first = stop_any(late, dear)(now)
    assert first is not None and first.reason is StopReason.TIME
    assert stop_all(late, dear)(state(elapsed_s=11.0)) is None
    both = stop_all(late, dear)(now)
    assert both is not None and " and " in both.detail
    assert stop_all()(now) is None
    assert stop_any()(now) is None
    assert (stop_never | late)(now) is not None
