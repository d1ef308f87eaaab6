"""cache_order= on the guarded clients, and hit rate and savings measured from the ledger."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

import spendguard
from tests.plan_helpers import (
    CLAUDE,
    GPT,
    anthropic_client,
    anthropic_fanout,
    budget,
    emulator,
    openai_client,
    openai_fanout,
)


def _ask_claude(client: Any, bodies: list[dict[str, Any]]) -> list[Any]:
    return [client.messages.create(**body).usage for body in bodies]


def test_an_anthropic_client_with_cache_order_reads_the_shared_document() -> None:
    emu = emulator()
    client = anthropic_client(emu, budget("5"), cache_order=True)
    usages = _ask_claude(client, anthropic_fanout(3))
    assert usages[0].cache_creation_input_tokens > 4000
    assert [u.cache_read_input_tokens for u in usages[1:]] == [
        usages[0].cache_creation_input_tokens] * 2
    sent = emu.requests[-1].body["messages"][0]["content"]
    assert sent[0]["type"] == "document" and sent[0]["cache_control"] == {"type": "ephemeral"}


def test_without_cache_order_nothing_is_cached() -> None:
    client = anthropic_client(emulator(), budget("5"))
    usages = _ask_claude(client, anthropic_fanout(3))
    assert {u.cache_read_input_tokens for u in usages} == {0}
    assert {u.cache_creation_input_tokens for u in usages} == {0}


def test_an_openai_client_with_cache_order_sets_a_key_and_reads_the_prefix() -> None:
    emu = emulator()
    client = openai_client(emu, budget("5"), cache_order=spendguard.CacheOrder())
    usages = [client.chat.completions.create(**body).usage for body in openai_fanout(3)]
    assert usages[0].prompt_tokens_details.cached_tokens == 0
    assert usages[2].prompt_tokens_details.cached_tokens >= 4096
    assert emu.requests[-1].body["prompt_cache_key"].startswith("sg-")


def test_wrap_takes_cache_order_too() -> None:
    emu = emulator()
    client = spendguard.wrap(emu.anthropic_client(), budget("5"), cache_order=True)
    usages = _ask_claude(client, anthropic_fanout(2))
    assert usages[1].cache_read_input_tokens > 0


def test_a_bad_cache_order_option_is_refused() -> None:
    with pytest.raises(spendguard.ConfigError, match="cache_order"):
        anthropic_client(emulator(), cache_order="yes")


def test_the_hook_returns_an_unreadable_body_unchanged() -> None:
    body: dict[str, Any] = {"model": CLAUDE, "messages": "not a list", "tools": 3}
    assert spendguard.CacheOrder()("anthropic", "messages", body) is body


def test_cache_stats_reads_hit_rate_and_savings_from_the_ledger() -> None:
    spend = budget("5")
    client = anthropic_client(emulator(), spend, cache_order=True)
    with spendguard.tags(job="contracts"):
        _ask_claude(client, anthropic_fanout(4))
    _ask_claude(client, anthropic_fanout(1, model="claude-opus-4-6"))
    stats = spendguard.cache_stats(spend.ledger, tag="job=contracts")
    assert stats.requests == 4
    assert stats.hit_rate == pytest.approx(3 * stats.cache_write_tokens / (
        4 * stats.cache_write_tokens + stats.input_tokens), rel=1e-9)
    assert stats.saved_usd > 0
    assert stats.cost_usd == sum((r.actual_usd for r in spend.ledger.records(
        tag="job=contracts")), Decimal(0))
    assert "hit rate" in str(stats)


def test_cache_stats_of_an_empty_ledger_is_zero() -> None:
    stats = spendguard.cache_stats("memory://")
    assert (stats.requests, stats.hit_rate, stats.saved_usd) == (0, 0.0, Decimal(0))


def test_openai_cache_order_leaves_a_short_prompt_alone() -> None:
    emu = emulator()
    client = openai_client(emu, budget("1"), cache_order=True)
    client.chat.completions.create(model=GPT, max_completion_tokens=5,
                                   messages=[{"role": "user", "content": "hi"}])
    assert "prompt_cache_key" not in emu.requests[-1].body
