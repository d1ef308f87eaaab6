"""Gemini through google-genai's own client, guarded: the drop-in, wrap(), sync and async,
streams, embeddings, token counts, against the offline emulator."""

from __future__ import annotations

import asyncio
import csv
import io
from datetime import date
from decimal import Decimal
from typing import Any

import pytest
from google.genai import types
from google.oauth2.credentials import Credentials

import spendguard
from spendguard.testing import Emulator, Reply

MILLION = Decimal(1_000_000)
# gemini-2.5-flash: $0.30 in, $0.03 cache read, $2.50 out per million (pricing/gemini.toml).
FLASH_IN, FLASH_CACHE, FLASH_OUT = Decimal("0.30"), Decimal("0.03"), Decimal("2.50")
NO_THINKING = types.GenerateContentConfig(
    max_output_tokens=200, thinking_config=types.ThinkingConfig(thinking_budget=0))


def _client(emulator: Emulator, budget: spendguard.Budget) -> spendguard.Gemini:
    return spendguard.Gemini(api_key="emulated", http_options=emulator.gemini_http_options(),
                             budget=budget)


def _records(budget: spendguard.Budget) -> list[Any]:
    return list(budget.ledger.records())


def _flash_usd(meta: Any) -> Decimal:
    """The bill of a gemini-2.5-flash reply, from its usage_metadata, by the published rule."""
    cached = meta.cached_content_token_count or 0
    prompt = meta.prompt_token_count - cached + (meta.tool_use_prompt_token_count or 0)
    output = meta.candidates_token_count + (meta.thoughts_token_count or 0)
    usd: Decimal = (prompt * FLASH_IN + cached * FLASH_CACHE + output * FLASH_OUT) / MILLION
    return usd


def test_a_refused_gemini_call_sends_zero_requests() -> None:
    emulator = Emulator()
    client = _client(emulator, spendguard.Budget("0.000001", ledger="memory://"))
    with pytest.raises(spendguard.BudgetExceeded):
        client.models.generate_content(model="gemini-2.5-flash", contents="hi")
    assert emulator.requests == []


def test_a_plain_reply_is_billed_from_its_usage_metadata() -> None:
    budget = spendguard.Budget("1", ledger="memory://")
    reply = _client(Emulator(), budget).models.generate_content(
        model="gemini-2.5-flash", contents="Say hello", config=NO_THINKING)
    [record] = _records(budget)
    assert record.provider == "gemini" and record.model == "gemini-2.5-flash"
    assert record.status == "ok" and record.actual_usd == _flash_usd(reply.usage_metadata)
    assert record.estimated_usd >= record.actual_usd and budget.reserved == 0


def test_thinking_tokens_are_billed_as_output() -> None:
    emulator = Emulator(respond=lambda prompt: Reply(text="Thought it over.",
                                                     reasoning_tokens=300))
    budget = spendguard.Budget("1", ledger="memory://")
    reply = _client(emulator, budget).models.generate_content(
        model="gemini-2.5-flash", contents="Think first")
    meta = reply.usage_metadata
    assert meta is not None and meta.thoughts_token_count == 300
    [record] = _records(budget)
    assert record.tokens["reasoning"] == 300
    assert record.tokens["output"] == (meta.candidates_token_count or 0) + 300
    assert record.actual_usd == _flash_usd(meta)


def test_cached_content_tokens_are_billed_at_the_cache_rate() -> None:
    emulator = Emulator()
    cache = emulator.gemini_client().caches.create(
        model="gemini-2.5-flash",
        config=types.CreateCachedContentConfig(contents="A long shared document. " * 200))
    budget = spendguard.Budget("1", ledger="memory://")
    reply = _client(emulator, budget).models.generate_content(
        model="gemini-2.5-flash", contents="Summarise it",
        config=types.GenerateContentConfig(cached_content=cache.name, max_output_tokens=100,
                                           thinking_config=types.ThinkingConfig(
                                               thinking_budget=0)))
    meta = reply.usage_metadata
    assert meta is not None and meta.cached_content_token_count
    [record] = _records(budget)
    assert record.tokens["cache_read"] == meta.cached_content_token_count
    assert record.actual_usd == _flash_usd(meta)


def test_a_grounded_reply_bills_its_search_and_the_tool_prompt_tokens() -> None:
    budget = spendguard.Budget("1", ledger="memory://")
    reply = _client(Emulator(), budget).models.generate_content(
        model="gemini-2.5-flash", contents="Who won yesterday?",
        config=types.GenerateContentConfig(
            tools=[types.Tool(google_search=types.GoogleSearch())], max_output_tokens=100,
            thinking_config=types.ThinkingConfig(thinking_budget=0)))
    meta = reply.usage_metadata
    assert meta is not None and meta.tool_use_prompt_token_count == 100
    [record] = _records(budget)
    # Gemini 2.5 bills $35 per 1,000 grounded prompts.
    assert record.actual_usd == _flash_usd(meta) + Decimal("0.035")


def test_tiers_search_queries_batch_and_dated_prices_follow_the_model() -> None:
    usage = {"usageMetadata": {"promptTokenCount": 300_000, "candidatesTokenCount": 1_000,
                               "thoughtsTokenCount": 500, "cachedContentTokenCount": 100_000}}
    # gemini-2.5-pro above 200k: input $2.50, cache read $0.25, output $15 per million.
    expected = (200_000 * Decimal("2.5") + 100_000 * Decimal("0.25")
                + 1_500 * Decimal(15)) / MILLION
    assert spendguard.cost("gemini-2.5-pro", usage).total == expected
    grounded = {"candidates": [{"groundingMetadata": {"webSearchQueries": ["a", "b", "c"]}}],
                "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 10}}
    # Gemini 3 bills each search query: $14 per 1,000.
    bill = spendguard.cost("gemini-3-flash-preview", grounded)
    line = bill.line("tool:google_search_query")
    assert line is not None and line.usd == Decimal("0.042")
    assert spendguard.cost("gemini-2.5-flash", usage, batch=True).total == (
        spendguard.cost("gemini-2.5-flash", usage).total / 2)
    # gemini-3.6-flash doubles on 2027-01-01.
    plain = {"usageMetadata": {"promptTokenCount": 1_000_000, "candidatesTokenCount": 0}}
    assert spendguard.cost("gemini-3.6-flash", plain, at=date(2026, 12, 31)).total == (
        Decimal("0.75"))
    assert spendguard.cost("gemini-3.6-flash", plain, at=date(2027, 1, 1)).total == (
        Decimal("1.50"))


def test_a_stream_is_billed_from_its_last_chunk() -> None:
    budget = spendguard.Budget("1", ledger="memory://")
    chunks = list(_client(Emulator(), budget).models.generate_content_stream(
        model="gemini-2.5-flash", contents="Tell me a story", config=NO_THINKING))
    meta = chunks[-1].usage_metadata
    [record] = _records(budget)
    assert len(chunks) > 1 and record.status == "ok"
    assert record.actual_usd == _flash_usd(meta)


def test_an_abandoned_stream_is_still_charged() -> None:
    emulator = Emulator(respond=lambda prompt: Reply(text="word " * 50))
    budget = spendguard.Budget("1", ledger="memory://")
    stream = _client(emulator, budget).models.generate_content_stream(
        model="gemini-2.5-flash", contents="Go on", config=NO_THINKING)
    next(stream)
    stream.close()  # type: ignore[attr-defined]
    [record] = _records(budget)
    assert record.status == "stream_abandoned" and record.actual_usd > 0
    assert budget.reserved == 0


def test_count_tokens_and_files_pass_free_and_embeddings_are_charged() -> None:
    emulator = Emulator()
    budget = spendguard.Budget("1", ledger="memory://")
    client = _client(emulator, budget)
    assert client.models.count_tokens(model="gemini-2.5-flash", contents="hi").total_tokens
    uploaded = client.files.upload(file=io.BytesIO(b"%PDF-1.7 not really" * 100),
                                   config=types.UploadFileConfig(mime_type="application/pdf"))
    assert uploaded.name and uploaded.size_bytes == 1900
    assert _records(budget) == [] and len(emulator.requests) == 3
    texts = [types.Content(parts=[types.Part(text=text)]) for text in ("a", "bc")]
    result = client.models.embed_content(model="gemini-embedding-001", contents=texts)
    assert result.embeddings is not None and len(result.embeddings) == 2
    [record] = _records(budget)
    assert record.endpoint == "embed_content" and record.actual_usd > 0
    assert record.usage_estimated and record.status == "ok"


def test_chats_and_wrap_guard_a_client_built_elsewhere() -> None:
    emulator = Emulator()
    budget = spendguard.Budget("1", ledger="memory://")
    client = spendguard.wrap(emulator.gemini_client(), budget)
    chat = client.chats.create(model="gemini-2.5-flash")
    chat.send_message("hello")
    chat.send_message("and again")
    assert [r.provider for r in _records(budget)] == ["gemini", "gemini"]
    other = emulator.gemini_client()  # not wrapped: not charged
    other.models.generate_content(model="gemini-2.5-flash", contents="free")
    assert len(_records(budget)) == 2


def test_vertex_ai_clients_are_guarded_by_project_and_in_express_mode() -> None:
    emulator = Emulator()
    budget = spendguard.Budget("1", ledger="memory://")
    express = spendguard.Gemini(vertexai=True, api_key="emulated", budget=budget,
                                http_options=emulator.gemini_http_options())
    express.models.generate_content(model="gemini-2.5-flash", contents="hi", config=NO_THINKING)
    project = spendguard.Gemini(vertexai=True, project="p", location="us-central1",
                                credentials=Credentials(  # type: ignore[no-untyped-call]
                                    token="vertex-test"), budget=budget,
                                http_options=emulator.gemini_http_options())
    project.models.generate_content(model="gemini-2.5-flash", contents="hi", config=NO_THINKING)
    assert "publishers/google/models/gemini-2.5-flash" in emulator.requests[0].path
    assert emulator.requests[1].path.startswith("/v1beta1/projects/p/locations/us-central1/")
    assert [r.model for r in _records(budget)] == ["gemini-2.5-flash"] * 2


def test_an_unpriced_gemini_model_is_refused_with_the_fix() -> None:
    emulator = Emulator()
    client = _client(emulator, spendguard.Budget("1", ledger="memory://"))
    with pytest.raises(spendguard.UnknownModelError, match=r'\[models\."gemini-9-ultra"\]'):
        client.models.generate_content(model="gemini-9-ultra", contents="hi")
    assert emulator.requests == []


def test_async_calls_and_streams_are_guarded() -> None:
    budget = spendguard.Budget("1", ledger="memory://")
    client = _client(Emulator(), budget)

    async def run() -> None:
        await client.aio.models.generate_content(model="gemini-2.5-flash", contents="a",
                                                 config=NO_THINKING)
        async for _ in await client.aio.models.generate_content_stream(
                model="gemini-2.5-flash", contents="b", config=NO_THINKING):
            pass

    asyncio.run(run())
    assert [r.status for r in _records(budget)] == ["ok", "ok"]
    assert budget.reserved == 0


def test_twenty_concurrent_calls_against_two_and_a_half_worst_cases_send_two() -> None:
    probe = spendguard.Budget("1", ledger="memory://")
    _client(Emulator(), probe).models.generate_content(
        model="gemini-2.5-flash", contents="same prompt", config=NO_THINKING)
    worst = _records(probe)[0].estimated_usd

    async def run() -> list[Any]:
        gate = asyncio.Event()

        async def wait(seconds: float) -> None:
            await gate.wait()

        emulator = Emulator(latency_s=1, async_sleep=wait)
        client = _client(emulator, spendguard.Budget(worst * Decimal("2.5"),
                                                     ledger="memory://"))
        tasks = [asyncio.ensure_future(client.aio.models.generate_content(
            model="gemini-2.5-flash", contents="same prompt", config=NO_THINKING))
            for _ in range(20)]
        for _ in range(1000):  # until every refusal is back; the two sent wait at the gate
            if sum(task.done() for task in tasks) >= 18:
                break
            await asyncio.sleep(0)
        sent = len(emulator.requests)
        gate.set()
        results = await asyncio.gather(*tasks, return_exceptions=True)
        return [sent, results]

    sent, results = asyncio.run(run())
    refused = [r for r in results if isinstance(r, spendguard.BudgetExceeded)]
    assert sent == 2 and len(refused) == 18


def test_the_openai_compatible_endpoint_is_priced_and_recorded_as_gemini() -> None:
    emulator = Emulator()
    budget = spendguard.Budget("1", ledger="memory://")
    client = spendguard.wrap(emulator.openai_client(
        base_url="http://emulator.spendguard.invalid/v1beta/openai/"), budget)
    completion = client.chat.completions.create(
        model="gemini-2.5-flash", messages=[{"role": "user", "content": "hi"}], max_tokens=50)
    assert emulator.requests[0].path == "/v1beta/openai/chat/completions"
    usage = completion.usage
    assert usage is not None
    [record] = _records(budget)
    assert record.provider == "gemini" and record.model == "gemini-2.5-flash"
    assert record.actual_usd == (usage.prompt_tokens * FLASH_IN
                                 + usage.completion_tokens * FLASH_OUT) / MILLION
    with pytest.raises(spendguard.UnknownModelError, match="OpenAI-compatible"):
        client.chat.completions.create(model="gpt-5.5", messages=[{"role": "user",
                                                                   "content": "hi"}])


def test_install_guards_a_genai_client_built_by_code_we_do_not_own() -> None:
    emulator = Emulator()
    budget = spendguard.Budget("1", ledger="memory://")
    spendguard.install(budget, cap_output=True)
    try:
        client = emulator.gemini_client()  # as a framework would build it
    finally:
        spendguard.uninstall()
    client.models.generate_content(model="gemini-2.5-flash", contents="hi", config=NO_THINKING)
    assert [r.provider for r in _records(budget)] == ["gemini"]
    tiny = spendguard.Budget("0.000001", ledger="memory://")
    spendguard.install(tiny)
    try:
        refused = emulator.gemini_client()
    finally:
        spendguard.uninstall()
    with pytest.raises(spendguard.BudgetExceeded):
        refused.models.generate_content(model="gemini-2.5-flash", contents="hi")
    assert len(emulator.requests) == 1


def test_an_explicit_cache_is_charged_its_tokens_and_storage_for_its_ttl() -> None:
    emulator = Emulator()
    budget = spendguard.Budget("1", ledger="memory://")
    cache = _client(emulator, budget).caches.create(
        model="gemini-2.5-flash",
        config=types.CreateCachedContentConfig(contents="A long shared document. " * 200,
                                               ttl="7200s"))
    assert cache.usage_metadata is not None
    tokens = cache.usage_metadata.total_token_count or 0
    [record] = _records(budget)
    assert record.endpoint == "cached_contents" and tokens > 0
    # Written at the input rate, stored at $1.00 per million tokens per hour for 2 hours.
    assert record.actual_usd == tokens * (FLASH_IN + 2 * Decimal(1)) / MILLION
    assert record.estimated_usd >= record.actual_usd


def test_a_gemini_call_is_exported_to_focus_as_google() -> None:
    budget = spendguard.Budget("1", ledger="memory://")
    _client(Emulator(), budget).models.generate_content(
        model="gemini-2.5-flash", contents="hi", config=NO_THINKING)
    out = io.StringIO()
    spendguard.export_spend(out, format="focus", ledger=budget.ledger)
    rows = list(csv.DictReader(io.StringIO(out.getvalue())))
    assert rows and {row["ServiceName"] for row in rows} == {"Gemini API"}
    assert sum(Decimal(row["BilledCost"]) for row in rows) == budget.spent


def test_the_input_bound_is_tightened_from_the_ledgers_history() -> None:
    budget = spendguard.Budget("5", ledger="memory://")
    client = _client(Emulator(), budget)
    for number in range(22):
        client.models.generate_content(model="gemini-2.5-flash",
                                       contents=f"Question {number} of some length. " * 20,
                                       config=NO_THINKING)
    first, *_, last = _records(budget)
    assert first.estimated_input_tokens is not None and last.estimated_input_tokens is not None
    assert last.estimated_input_tokens < first.estimated_input_tokens / 2
    assert "spendguard.static_input_bound" in last.tags
    assert all(record.status == "ok" for record in _records(budget))


def test_wrap_moves_a_gemini_client_to_another_budget() -> None:
    first = spendguard.Budget("1", ledger="memory://")
    second = spendguard.Budget("1", ledger="memory://")
    client = spendguard.wrap(_client(Emulator(), first), second)
    client.models.generate_content(model="gemini-2.5-flash", contents="hi", config=NO_THINKING)
    assert _records(first) == [] and len(_records(second)) == 1
