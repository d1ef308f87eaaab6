"""Emulated prompt caching: writes then reads on a shared prefix, TTLs on the injected clock."""

from __future__ import annotations

from typing import Any

import anthropic
import pytest

from spendguard import count_request_tokens
from spendguard.testing import Emulator, ManualClock

LONG = " ".join(f"Clause {i}: the supplier delivers item {i} on time." for i in range(260))
SONNET = "claude-sonnet-5"


def _system(ttl: str | None = "5m") -> Any:
    block: dict[str, Any] = {"type": "text", "text": LONG}
    if ttl:
        block["cache_control"] = {"type": "ephemeral", "ttl": ttl}
    return [block]


def _ask(client: anthropic.Anthropic, question: str, *, model: str = SONNET,
         system: Any = None, **extra: Any) -> anthropic.types.Usage:
    message: anthropic.types.Message = client.messages.create(
        model=model, max_tokens=20, system=system if system is not None else _system(),
        messages=[{"role": "user", "content": question}], **extra)
    return message.usage


def _total(usage: anthropic.types.Usage) -> int:
    return (usage.input_tokens + (usage.cache_read_input_tokens or 0)
            + (usage.cache_creation_input_tokens or 0))


def test_anthropic_first_request_writes_the_prefix_and_the_second_reads_it() -> None:
    client = Emulator(clock=ManualClock()).anthropic_client()
    first = _ask(client, "Who delivers item 7?")
    second = _ask(client, "Who delivers item 9?")

    assert first.cache_creation_input_tokens and first.cache_creation_input_tokens > 1024
    assert first.cache_creation is not None
    assert first.cache_creation.ephemeral_5m_input_tokens == first.cache_creation_input_tokens
    assert first.cache_read_input_tokens == 0
    assert second.cache_read_input_tokens == first.cache_creation_input_tokens
    assert second.cache_creation_input_tokens == 0
    # input_tokens excludes cache reads and writes: the three add up to the whole prompt
    body = {"model": SONNET, "system": _system(),
            "messages": [{"role": "user", "content": "Who delivers item 9?"}]}
    assert _total(second) == count_request_tokens("anthropic", "/v1/messages", body).expected
    assert second.input_tokens < 20


def test_anthropic_cache_expires_after_its_ttl_and_is_refreshed_by_reads() -> None:
    clock = ManualClock()
    client = Emulator(clock=clock).anthropic_client()
    written = _ask(client, "q1").cache_creation_input_tokens
    clock.advance(200)
    assert _ask(client, "q2").cache_read_input_tokens == written  # read: TTL refreshed
    clock.advance(200)
    assert _ask(client, "q3").cache_read_input_tokens == written  # 400 s after the write
    clock.advance(301)
    expired = _ask(client, "q4")
    assert expired.cache_read_input_tokens == 0
    assert expired.cache_creation_input_tokens == written


def test_anthropic_one_hour_entries_are_reported_under_their_ttl() -> None:
    clock = ManualClock()
    client = Emulator(clock=clock).anthropic_client()
    first = _ask(client, "q1", system=_system("1h"))
    assert first.cache_creation is not None
    assert first.cache_creation.ephemeral_1h_input_tokens == first.cache_creation_input_tokens
    assert first.cache_creation.ephemeral_5m_input_tokens == 0
    clock.advance(3000)
    assert _ask(client, "q2", system=_system("1h")).cache_read_input_tokens
    clock.advance(3601)
    assert _ask(client, "q3", system=_system("1h")).cache_read_input_tokens == 0


def test_anthropic_writes_split_between_a_1h_and_a_later_5m_breakpoint() -> None:
    client = Emulator(clock=ManualClock()).anthropic_client()
    tools = [{"name": "lookup", "description": LONG, "input_schema": {"type": "object"},
              "cache_control": {"type": "ephemeral", "ttl": "1h"}}]
    usage = client.messages.create(model=SONNET, max_tokens=5, tools=tools,  # type: ignore[arg-type]
                                   system=_system("5m"),
                                   messages=[{"role": "user", "content": "hi"}]).usage
    assert usage.cache_creation is not None
    assert usage.cache_creation.ephemeral_1h_input_tokens > 1024
    assert usage.cache_creation.ephemeral_5m_input_tokens > 1024
    assert usage.cache_creation_input_tokens == (usage.cache_creation.ephemeral_1h_input_tokens
                                                 + usage.cache_creation.ephemeral_5m_input_tokens)


def test_anthropic_prefixes_below_the_models_minimum_are_not_cached() -> None:
    client = Emulator(clock=ManualClock()).anthropic_client()
    short = [{"type": "text", "text": "Short rules.", "cache_control": {"type": "ephemeral"}}]
    usage = _ask(client, "q", system=short)
    assert (usage.cache_creation_input_tokens, usage.cache_read_input_tokens) == (0, 0)
    # LONG is over Sonnet 5's minimum (1,024 tokens), under Haiku 4.5's (4,096)
    assert _ask(client, "q", model="claude-haiku-4-5").cache_creation_input_tokens == 0
    assert _ask(client, "q", model=SONNET).cache_creation_input_tokens


def test_automatic_caching_follows_a_growing_conversation() -> None:
    client = Emulator(clock=ManualClock()).anthropic_client()
    turns: Any = [{"role": "user", "content": LONG}]
    first = client.messages.create(model=SONNET, max_tokens=20, messages=turns,
                                   cache_control={"type": "ephemeral"})
    turns += [{"role": "assistant", "content": "Noted."}, {"role": "user", "content": "More?"}]
    second = client.messages.create(model=SONNET, max_tokens=20, messages=turns,
                                    cache_control={"type": "ephemeral"})
    assert first.usage.cache_creation_input_tokens
    assert second.usage.cache_read_input_tokens == first.usage.cache_creation_input_tokens
    assert second.usage.cache_creation_input_tokens  # the new turns are written on top


def test_anthropic_breakpoint_rules_are_enforced_like_the_api() -> None:
    client = Emulator().anthropic_client()
    marked = {"type": "ephemeral"}
    too_many = [{"type": "text", "text": f"part {i}", "cache_control": marked} for i in range(5)]
    with pytest.raises(anthropic.BadRequestError, match="maximum of 4"):
        _ask(client, "q", system=too_many)
    wrong_order = [{"type": "text", "text": "a", "cache_control": {"type": "ephemeral"}},
                   {"type": "text", "text": "b",
                    "cache_control": {"type": "ephemeral", "ttl": "1h"}}]
    with pytest.raises(anthropic.BadRequestError, match="1h"):
        _ask(client, "q", system=wrong_order)


def _chat(client: Any, messages: list[dict[str, Any]], **extra: Any) -> Any:
    return client.chat.completions.create(model="gpt-5.5", messages=messages,
                                          **extra).usage


def _openai_conversation(question: str, *, stable_first: bool = True) -> list[dict[str, Any]]:
    stable = {"role": "system", "content": LONG}
    variable = {"role": "user", "content": question}
    return [stable, variable] if stable_first else [variable, stable]


def test_openai_caches_a_repeated_prefix_in_128_token_steps() -> None:
    client = Emulator(clock=ManualClock()).openai_client()
    first = _chat(client, _openai_conversation("Item 3?"))
    second = _chat(client, _openai_conversation("Item 4?"))
    assert first.prompt_tokens_details.cached_tokens == 0
    cached = second.prompt_tokens_details.cached_tokens
    assert cached >= 1024 and cached % 128 == 0
    assert second.prompt_tokens - cached < 128 + 20  # prompt_tokens INCLUDES cached tokens


def test_cache_ordering_shows_in_the_bill() -> None:
    client = Emulator(clock=ManualClock()).openai_client()
    for question in ("a?", "b?", "c?"):
        volatile_first = _chat(client, _openai_conversation(question, stable_first=False))
        assert volatile_first.prompt_tokens_details.cached_tokens == 0
    stable_first = [_chat(client, _openai_conversation(q)) for q in ("a?", "b?", "c?")]
    assert [u.prompt_tokens_details.cached_tokens > 0 for u in stable_first] == [False, True,
                                                                                 True]


def test_openai_short_prompts_are_never_cached() -> None:
    client = Emulator(clock=ManualClock()).openai_client()
    for _ in range(2):
        usage = _chat(client, [{"role": "user", "content": "short"}])
    assert usage.prompt_tokens_details.cached_tokens == 0


def test_openai_prompt_cache_key_partitions_the_cache() -> None:
    client = Emulator(clock=ManualClock()).openai_client()
    _chat(client, _openai_conversation("q1"), prompt_cache_key="tenant-a")
    other = _chat(client, _openai_conversation("q2"), prompt_cache_key="tenant-b")
    same = _chat(client, _openai_conversation("q3"), prompt_cache_key="tenant-a")
    assert other.prompt_tokens_details.cached_tokens == 0
    assert same.prompt_tokens_details.cached_tokens > 0


def test_openai_cache_ttl_runs_on_the_clock_and_retention_extends_it() -> None:
    clock = ManualClock()
    client = Emulator(clock=clock, openai_cache_ttl_s=300).openai_client()
    _chat(client, _openai_conversation("q1"))
    clock.advance(301)
    assert _chat(client, _openai_conversation("q2")).prompt_tokens_details.cached_tokens == 0
    _chat(client, _openai_conversation("q3"), prompt_cache_retention="24h")
    clock.advance(3600)
    kept = _chat(client, _openai_conversation("q4"), prompt_cache_retention="24h")
    assert kept.prompt_tokens_details.cached_tokens > 0


def test_responses_chained_by_previous_response_id_read_the_cache() -> None:
    client = Emulator(clock=ManualClock()).openai_client()
    first = client.responses.create(model="gpt-5.5", instructions=LONG, input="q1")
    second = client.responses.create(model="gpt-5.5", instructions=LONG, input="q2",
                                     previous_response_id=first.id)
    assert first.usage is not None and second.usage is not None
    assert first.usage.input_tokens_details.cached_tokens == 0
    assert second.usage.input_tokens_details.cached_tokens >= 1024


def test_reset_cache_forgets_every_entry() -> None:
    emulator = Emulator(clock=ManualClock())
    client = emulator.anthropic_client()
    _ask(client, "q1")
    emulator.reset_cache()
    assert _ask(client, "q2").cache_read_input_tokens == 0


def test_minimum_cacheable_lengths_follow_dated_ids_and_overrides() -> None:
    client = Emulator(clock=ManualClock()).anthropic_client()
    assert _ask(client, "q", model="claude-haiku-4-5-20251001").cache_creation_input_tokens == 0
    lowered = Emulator(clock=ManualClock(),
                       anthropic_min_cacheable_tokens={"claude-haiku-4-5": 100})
    assert _ask(lowered.anthropic_client(), "q",
                model="claude-haiku-4-5").cache_creation_input_tokens
