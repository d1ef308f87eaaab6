"""The send order of a plan and its time estimate: properties of the schedule arithmetic."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from spendguard import ConfigError
from spendguard._strategies.plan.schedule import Schedule, simulate_duration_s

latencies = st.lists(st.floats(min_value=0.01, max_value=100.0), min_size=1, max_size=40)


@given(latencies, st.integers(min_value=1, max_value=50))
def test_without_waits_the_duration_is_within_the_list_scheduling_bounds(
        times: list[float], concurrency: int) -> None:
    duration = simulate_duration_s(times, [()] * len(times), concurrency)
    lower = max(*times, sum(times) / concurrency)
    assert lower - 1e-9 <= duration <= sum(times) / concurrency + max(times) + 1e-9


@given(latencies)
def test_one_at_a_time_takes_the_sum_and_all_at_once_the_longest(times: list[float]) -> None:
    none: list[tuple[int, ...]] = [()] * len(times)
    assert simulate_duration_s(times, none, 1) == pytest.approx(sum(times))
    assert simulate_duration_s(times, none, len(times)) == pytest.approx(max(times))


@given(latencies.filter(lambda t: len(t) > 1))
def test_a_warm_up_delays_the_rest_by_the_first_request(times: list[float]) -> None:
    after = [(), *[(0,)] * (len(times) - 1)]
    assert simulate_duration_s(times, after, len(times)) == pytest.approx(
        times[0] + max(times[1:]))


@given(st.lists(st.lists(st.integers(min_value=0, max_value=30), max_size=3), min_size=1,
                max_size=30), st.integers(min_value=1, max_value=5))
def test_every_request_is_taken_once_and_never_before_what_it_waits_for(
        raw: list[list[int]], concurrency: int) -> None:
    after = [tuple(leader for leader in waits if leader < index)
             for index, waits in enumerate(raw)]
    schedule = Schedule(after)
    finished: list[int] = []
    running: list[int] = []
    while not schedule.exhausted or running:
        while len(running) < concurrency and (index := schedule.take()) is not None:
            assert set(after[index]) <= set(finished)
            running.append(index)
        done = running.pop(0)
        finished.append(done)
        schedule.finish(done)
    assert sorted(finished) == list(range(len(after)))


def test_a_request_cannot_wait_for_a_later_one() -> None:
    with pytest.raises(ConfigError, match="earlier"):
        Schedule([(1,), ()])


def test_a_cancelled_schedule_gives_nothing_more() -> None:
    schedule = Schedule([(), ()])
    assert schedule.take() == 0
    schedule.cancel()
    assert schedule.take() is None and schedule.exhausted
