"""Splitting to the providers' limits: request counts, bytes, embedding inputs, models."""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import spendguard
from spendguard import BatchLimits, BatchRequest, ConfigError
from spendguard._costing.calls import Provider
from spendguard._strategies.batch import limits as limits_module
from spendguard._strategies.batch.limits import split
from spendguard._strategies.batch.wire import api_for
from spendguard.testing import BatchLimits as EmulatorLimits
from tests.batching_helpers import World, chat, message


def test_more_requests_than_a_batch_holds_become_several_batches_in_order() -> None:
    world = World(emulator_options={"batch_limits": EmulatorLimits(openai_max_requests=3)})
    run = spendguard.batch([chat(f"q{i}") for i in range(7)], client=world.openai(),
                           limits=BatchLimits(openai_max_requests=3), polling=world.polling)
    assert [core.job.request_count for core in run.cores] == [3, 3, 1]
    results = run.results()  # the emulator refuses any batch over its limit
    assert [r.response.choices[0].message.content for r in results] == [
        f"echo: q{i}" for i in range(7)]
    assert len({r.job_id for r in results}) == 3


def test_a_file_over_the_byte_limit_is_split_too() -> None:
    limit = 1100  # two of these lines fit, three do not
    world = World(emulator_options={"batch_limits": EmulatorLimits(openai_max_file_bytes=limit)})
    run = spendguard.batch([chat("x" * 300 + str(i)) for i in range(5)], client=world.openai(),
                           limits=BatchLimits(openai_max_file_bytes=limit),
                           polling=world.polling)
    assert [core.job.request_count for core in run.cores] == [2, 2, 1]
    assert all(r.ok for r in run.results())


def test_anthropic_batches_mix_models_and_split_by_count_and_bytes() -> None:
    world = World()
    requests = [message("a"), message("b", model="claude-haiku-4-5"), message("c"),
                message("d", model="claude-haiku-4-5")]
    mixed = spendguard.batch(requests, client=world.anthropic(), polling=world.polling)
    assert len(mixed.cores) == 1
    split_run = spendguard.batch(requests, client=world.anthropic(), polling=world.polling,
                                 limits=BatchLimits(anthropic_max_requests=3))
    assert [core.job.request_count for core in split_run.cores] == [3, 1]
    assert [r.model for r in split_run.results()] == [r["model"] for r in requests]


def test_openai_batches_hold_one_model_and_one_endpoint_each() -> None:
    world = World()
    run = spendguard.batch(
        [chat("a"), chat("b", model="gpt-4o-mini"), chat("c"),
         BatchRequest({"model": "gpt-5.5", "input": "d", "max_output_tokens": 10},
                      endpoint="/v1/responses")],
        client=world.openai(), polling=world.polling)
    assert sorted((c.job.endpoint, c.job.request_count) for c in run.cores) == [
        ("/v1/chat/completions", 1), ("/v1/chat/completions", 2), ("/v1/responses", 1)]
    assert [r.index for r in run.results()] == [0, 1, 2, 3]


def test_embedding_inputs_are_capped_per_batch() -> None:
    world = World()
    requests = [BatchRequest({"model": "text-embedding-3-small", "input": ["a", "b", "c"]},
                             endpoint="embeddings") for _ in range(3)]
    run = spendguard.batch(requests, client=world.openai(), polling=world.polling,
                           limits=BatchLimits(openai_max_embedding_inputs=7))
    assert [core.job.request_count for core in run.cores] == [2, 1]


def test_a_request_too_big_for_any_batch_is_refused_by_name() -> None:
    world = World()
    with pytest.raises(ConfigError, match=r"'big' is .* bytes"):
        spendguard.batch([BatchRequest(chat("x" * 5000), custom_id="big")],
                         client=world.openai(), limits=BatchLimits(openai_max_file_bytes=1000),
                         polling=world.polling)
    assert world.budget.reserved == 0 and world.emulator.requests == []


def test_limits_must_be_positive_whole_numbers() -> None:
    with pytest.raises(ConfigError, match="openai_max_requests"):
        BatchLimits(openai_max_requests=0)


@dataclass(frozen=True)
class Item:
    custom_id: str
    group: tuple[str, ...]
    size_bytes: int
    inputs: int = 1


items = st.lists(st.builds(Item, custom_id=st.uuids().map(str),
                           group=st.sampled_from([("a",), ("b",), ("c",)]),
                           size_bytes=st.integers(1, 50), inputs=st.integers(1, 5)),
                 max_size=60)


@settings(max_examples=200, deadline=None)
@given(items=items, max_requests=st.integers(1, 10), max_bytes=st.integers(60, 300),
       max_inputs=st.integers(5, 20), overhead=st.integers(0, 10))
def test_splitting_keeps_every_request_once_in_order_within_every_limit(
        items: list[Item], max_requests: int, max_bytes: int, max_inputs: int,
        overhead: int) -> None:
    limits = BatchLimits(openai_max_requests=max_requests, openai_max_file_bytes=max_bytes,
                         openai_max_embedding_inputs=max_inputs)
    batches = split(items, Provider("openai"), limits, overhead_bytes=overhead)
    flat = [item for batch in batches for item in batch]
    assert sorted(map(id, flat)) == sorted(map(id, items))
    for group in {item.group for item in items}:
        assert [i for i in flat if i.group == group] == [i for i in items if i.group == group]
    for batch in batches:
        assert batch and len({item.group for item in batch}) == 1
        assert len(batch) <= max_requests
        assert overhead + sum(item.size_bytes for item in batch) <= max_bytes
        assert sum(item.inputs for item in batch) <= max_inputs


@pytest.mark.parametrize(("provider", "expected"), [
    (Provider("openai"), (50_000, 7, 3)),
    (Provider("anthropic"), (100_000, 256_000_000, None)),
    (Provider("gemini"), (10_000, 20_000_000, None)),
])
def test_each_provider_is_limited_by_the_fields_named_for_it(
        provider: Provider, expected: tuple[int, int, int | None]) -> None:
    limits = BatchLimits(openai_max_file_bytes=7, openai_max_embedding_inputs=3)
    assert limits.of(provider) == expected


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini"])
def test_the_default_limits_are_what_each_batch_wire_publishes(provider: str) -> None:
    assert BatchLimits().of(Provider(provider)) == api_for(Provider(provider)).published_limits


def test_a_provider_with_no_fields_has_the_limits_its_batch_wire_publishes(
        monkeypatch: pytest.MonkeyPatch) -> None:
    @dataclass(frozen=True)
    class Wire:
        published_limits: tuple[int, int, int | None] = (7, 1_000, None)

    @dataclass(frozen=True)
    class Unlisted:
        value: str = "newprovider"

    monkeypatch.setattr(limits_module, "api_for", lambda provider: Wire())
    assert BatchLimits().of(cast("Provider", Unlisted())) == (7, 1_000, None)
