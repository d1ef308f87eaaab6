"""Gemini explicit context caches: storage charged for the TTL a cache is given, its TTL
updates priced as the storage they add, against the offline emulator."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from decimal import Decimal, localcontext
from typing import Any

import httpx2
import pytest
from google.genai import types

import spendguard
from spendguard.testing import Emulator, ManualClock

MILLION = Decimal(1_000_000)
HOUR_S = 3600
# gemini-2.5-flash: $0.30 per million input tokens, storage $1.00 per million tokens per hour
# (pricing/gemini.toml).
FLASH_IN, FLASH_STORAGE = Decimal("0.30"), Decimal(1)
DOCUMENT = "A long shared document. " * 200


def _client(emulator: Emulator, budget: spendguard.Budget, **options: Any) -> spendguard.Gemini:
    return spendguard.Gemini(api_key="emulated", http_options=emulator.gemini_http_options(),
                             budget=budget, **options)


def _storage_usd(tokens: int, seconds: int) -> Decimal:
    """Storage for ``seconds`` as spendguard prices it (to 40 digits: a third of a cent is not
    a finite decimal); checked against the published per-hour rate."""
    usd = spendguard.cost("gemini-2.5-flash", spendguard.Usage(
        tool_requests={"cache_storage_token_seconds": tokens * seconds})).total
    with localcontext(prec=60):
        published = tokens * seconds * FLASH_STORAGE / (MILLION * HOUR_S)
    assert abs(usd - published) < Decimal("1e-35")
    return usd


def _create(client: spendguard.Gemini, ttl: str = "3600s") -> types.CachedContent:
    return client.caches.create(model="gemini-2.5-flash", config=types.CreateCachedContentConfig(
        contents=DOCUMENT, ttl=ttl))


def _tokens(cache: types.CachedContent) -> int:
    assert cache.usage_metadata is not None and cache.usage_metadata.total_token_count
    return cache.usage_metadata.total_token_count


def test_extending_a_caches_ttl_charges_the_storage_it_adds() -> None:
    clock = ManualClock()
    emulator = Emulator(clock=clock)
    budget = spendguard.Budget("1", ledger="memory://")
    client = _client(emulator, budget)
    cache = _create(client, ttl="3600s")
    clock.advance(600)
    client.caches.update(name=cache.name or "",
                         config=types.UpdateCachedContentConfig(ttl="7200s"))
    created, updated = budget.ledger.records()
    tokens = _tokens(cache)
    assert created.actual_usd == tokens * FLASH_IN / MILLION + _storage_usd(tokens, 3600)
    # Charged to 3,600 s; now expires at 600 + 7,200 s: 4,200 s more.
    assert updated.endpoint == "cached_contents.update" and updated.status == "ok"
    assert updated.model == "gemini-2.5-flash"
    assert updated.actual_usd == _storage_usd(tokens, 4200)
    assert updated.estimated_usd == _storage_usd(tokens, 7200)
    assert budget.reserved == 0


def test_a_shortened_ttl_credits_the_storage_charged_past_its_new_expiry() -> None:
    clock = ManualClock()
    emulator = Emulator(clock=clock)
    budget = spendguard.Budget("1", ledger="memory://")
    client = _client(emulator, budget)
    cache = _create(client, ttl="7200s")
    tokens = _tokens(cache)
    client.caches.update(name=cache.name or "",
                         config=types.UpdateCachedContentConfig(ttl="600s"))
    client.caches.update(name=cache.name or "",
                         config=types.UpdateCachedContentConfig(ttl="9000s"))
    created, shortened, credit, extended = budget.ledger.records()
    assert shortened.actual_usd == 0 and shortened.note is not None
    assert "not extended" in shortened.note
    # Charged to 7,200 s, now ending at 600 s: 6,600 s credited.
    assert credit.status == "adjustment" and credit.model == "gemini-2.5-flash"
    assert credit.actual_usd == -_storage_usd(tokens, 6600)
    # Then extended from 600 s to 9,000 s: 7,200 - 6,600 + 8,400 s stored, the cache's life.
    assert extended.actual_usd == _storage_usd(tokens, 8400)
    assert created.actual_usd == tokens * FLASH_IN / MILLION + _storage_usd(tokens, 7200)


def test_deleting_a_cache_early_credits_the_storage_not_used() -> None:
    clock = ManualClock()
    emulator = Emulator(clock=clock)
    start = datetime.fromtimestamp(clock(), UTC)
    budget = spendguard.Budget("1", ledger="memory://",
                               clock=lambda: datetime.fromtimestamp(clock(), UTC))
    client = _client(emulator, budget)
    cache = _create(client, ttl="3600s")
    clock.advance(900)
    client.caches.delete(name=cache.name or "")
    created, credit = budget.ledger.records()
    assert credit.status == "adjustment" and credit.note is not None
    assert "deleted" in credit.note and credit.time >= start
    # Stored 900 s of the 3,600 s charged: 2,700 s credited.
    assert credit.actual_usd == -_storage_usd(_tokens(cache), 2700)
    assert budget.spent < created.actual_usd


def test_a_ttl_update_of_a_cache_this_process_did_not_see_is_refused_unsent() -> None:
    emulator = Emulator()
    budget = spendguard.Budget("1", ledger="memory://")
    with pytest.raises(spendguard.SpendguardError, match="allow_unpriced=True"):
        _client(emulator, budget).caches.update(
            name="cachedContents/made-elsewhere",
            config=types.UpdateCachedContentConfig(ttl="7200s"))
    assert emulator.requests == []
    with pytest.raises(Exception, match="not found"):  # sent uncounted: the emulator's 404
        _client(emulator, budget, allow_unpriced=True).caches.update(
            name="cachedContents/made-elsewhere",
            config=types.UpdateCachedContentConfig(ttl="7200s"))
    assert len(emulator.requests) == 1 and list(budget.ledger.records()) == []


def test_a_ttl_update_whose_reply_cannot_be_read_is_charged_its_worst_case_once() -> None:
    budget = spendguard.Budget("1", ledger="memory://")
    cache = _create(_client(Emulator(), budget))

    def answer(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, content=json.dumps({"name": cache.name}).encode(),
                               headers={"content-type": "application/json"})

    broken = spendguard.Gemini(api_key="k", budget=budget, http_options=types.HttpOptions(
        base_url="http://gemini.invalid/",
        httpx_client=httpx2.Client(transport=httpx2.MockTransport(answer))))
    broken.caches.update(name=cache.name or "",
                         config=types.UpdateCachedContentConfig(ttl="7200s"))
    _, update = budget.ledger.records()
    assert update.status == "usage_unreadable"
    assert update.actual_usd == _storage_usd(_tokens(cache), 7200)
    assert budget.reserved == 0
