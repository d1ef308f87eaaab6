"""The Usage record: disjoint buckets, totals, sums, and strict construction."""

from __future__ import annotations

import json
from typing import Any

import pytest

from spendguard import ConfigError, Usage
from spendguard._costing.usage import reply_usage


def test_totals_add_disjoint_buckets() -> None:
    usage = Usage(input_tokens=10, cache_read_tokens=20, cache_write_tokens={"5m": 3, "1h": 4},
                  output_tokens=7, reasoning_tokens=5)
    assert usage.total_cache_write_tokens == 7
    assert usage.total_input_tokens == 10 + 20 + 7
    assert usage.total_tokens == 37 + 7


def test_zero_entries_are_dropped_and_mappings_are_read_only() -> None:
    usage = Usage(cache_write_tokens={"30m": 0, "12h": 2}, tool_requests={"web_search": 0})
    assert dict(usage.cache_write_tokens) == {"12h": 2}
    assert dict(usage.tool_requests) == {}
    with pytest.raises(TypeError):
        usage.cache_write_tokens["12h"] = 5  # type: ignore[index]


def test_records_are_equal_by_value_and_hashable() -> None:
    a = Usage(input_tokens=1, cache_write_tokens={"5m": 2})
    b = Usage(input_tokens=1, cache_write_tokens={"5m": 2, "1h": 0})
    assert a == b
    assert hash(a) == hash(b)


def test_addition_sums_every_bucket_and_keeps_agreeing_labels() -> None:
    a = Usage(input_tokens=1, cache_read_tokens=2, cache_write_tokens={"5m": 3}, output_tokens=4,
              reasoning_tokens=1, tool_requests={"web_search": 1}, service_tier="standard",
              speed="fast")
    b = Usage(input_tokens=10, cache_write_tokens={"5m": 1, "1h": 5}, output_tokens=40,
              tool_requests={"web_search": 2, "web_fetch": 1}, service_tier="standard",
              speed="standard", estimated=True)
    total = a + b
    assert total == Usage(input_tokens=11, cache_read_tokens=2,
                          cache_write_tokens={"5m": 4, "1h": 5}, output_tokens=44,
                          reasoning_tokens=1, tool_requests={"web_search": 3, "web_fetch": 1},
                          service_tier="standard", speed=None, estimated=True)


def test_sum_of_records_starts_from_zero() -> None:
    records = [Usage(input_tokens=n, output_tokens=1) for n in range(4)]
    assert sum(records) == Usage(input_tokens=6, output_tokens=4)


@pytest.mark.parametrize("bad", [
    {"input_tokens": -1}, {"output_tokens": 1.5}, {"cache_read_tokens": True},
    {"cache_write_tokens": {"5m": -3}}, {"tool_requests": [1]},
])
def test_bad_counts_are_refused(bad: dict[str, object]) -> None:
    with pytest.raises(ConfigError, match="Usage"):
        Usage(**bad)  # type: ignore[arg-type]


def test_as_dict_round_trips_through_json() -> None:
    usage = Usage(input_tokens=5, cache_write_tokens={"30m": 2}, output_tokens=1,
                  tool_requests={"web_search": 1}, service_tier="flex", estimated=True)
    data = json.loads(json.dumps(usage.as_dict()))
    assert Usage.from_dict(data) == usage
    with pytest.raises(ConfigError, match="unknown field"):
        Usage.from_dict({"prompt_tokens": 3})


def test_token_counts_name_each_billed_kind() -> None:
    usage = Usage(input_tokens=5, cache_read_tokens=4, cache_write_tokens={"1h": 2},
                  output_tokens=3, reasoning_tokens=1)
    assert usage.token_counts() == {"input": 5, "cache_read": 4, "cache_write_1h": 2,
                                    "output": 3, "reasoning": 1}
    assert Usage().token_counts() == {"input": 0, "output": 0}


def test_repr_shows_only_what_is_set() -> None:
    assert repr(Usage(input_tokens=3, cache_write_tokens={"5m": 2})) == (
        "Usage(input_tokens=3, cache_write_tokens={'5m': 2}, output_tokens=0)")


@pytest.mark.parametrize("counts", [
    (520, 0, {}, 32, 0, "default"),
    (10, 5, {}, 3, 2, None),
    (10, 0, {"30m": 4}, 3, 0, None),
    (10, 0, {"30m": 0}, 3, 0, "flex"),
])
def test_a_reply_usage_is_the_same_record_as_the_constructor_builds(
        counts: tuple[int, int, dict[str, int], int, int, str | None]) -> None:
    built = Usage(input_tokens=counts[0], cache_read_tokens=counts[1],
                  cache_write_tokens=counts[2], output_tokens=counts[3],
                  reasoning_tokens=counts[4], service_tier=counts[5])
    read = reply_usage(*counts)
    assert read == built
    assert hash(read) == hash(built)
    assert repr(read) == repr(built)
    assert read.as_dict() == built.as_dict()
    assert read.token_counts() == built.token_counts()
    with pytest.raises(AttributeError):
        read.input_tokens = 1  # type: ignore[misc]


@pytest.mark.parametrize("bad", [(-1, 0, {}, 1, 0, None), (1, 0, {}, True, 0, None),
                                 (1, 0, {}, 1.5, 0, None)])
def test_a_reply_usage_of_counts_that_are_not_whole_numbers_is_refused(
        bad: tuple[Any, ...]) -> None:
    with pytest.raises(ConfigError):
        reply_usage(*bad)
