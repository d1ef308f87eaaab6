"""Gemini with a budget: spendguard.Gemini is google.genai.Client with budget= added.

    .venv/bin/python examples/gemini_client.py

Calls, streams, chats and client.aio all charge one budget; a call the budget cannot cover is
refused before it is sent; an explicit context cache is charged its storage for its TTL,
extending the TTL charges the storage it adds, and deleting it early credits what was not used.
"""

from __future__ import annotations

import asyncio

import _client
from google.genai import types

import spendguard


def main() -> None:
    print(f"calls go to: {_client.where()}")
    budget = spendguard.Budget("0.05", scope="app:gemini-demo", ledger=_client.ledger_url())
    client = _client.gemini_client(budget=budget)  # was: genai.Client()
    # thinking_budget=0: the worst case is the 300-token cap (thinking is billed as output).
    config = types.GenerateContentConfig(
        max_output_tokens=300, thinking_config=types.ThinkingConfig(thinking_budget=0))

    reply = client.models.generate_content(model="gemini-2.5-flash",
                                           contents="What is a token?", config=config)
    meta = reply.usage_metadata
    assert meta is not None
    print(f"generate_content: {meta.prompt_token_count} in, {meta.candidates_token_count} out, "
          f"spent ${budget.spent:.6f}")

    pieces = list(client.models.generate_content_stream(
        model="gemini-2.5-flash", contents="Why cache prompts?", config=config))
    print(f"stream: {len(pieces)} chunks, spent ${budget.spent:.6f}")

    chat = client.chats.create(model="gemini-2.5-flash", config=config)
    chat.send_message("Hello!")
    print(f"chat turn: spent ${budget.spent:.6f}")

    async def aio() -> None:
        await client.aio.models.generate_content(model="gemini-2.5-flash",
                                                 contents="And async?", config=config)

    asyncio.run(aio())
    print(f"client.aio: spent ${budget.spent:.6f}")

    cache = client.caches.create(model="gemini-2.5-flash", config=types.CreateCachedContentConfig(
        contents="A shared reference document. " * 300, ttl="3600s"))
    print(f"explicit cache {cache.name}: its tokens and one hour of storage, "
          f"spent ${budget.spent:.6f}")
    client.caches.update(name=cache.name or "",
                         config=types.UpdateCachedContentConfig(ttl="7200s"))
    print(f"its TTL extended to two hours from now: the storage added, "
          f"spent ${budget.spent:.6f}")
    client.caches.delete(name=cache.name or "")
    print(f"deleted at once: the storage not used is credited, spent ${budget.spent:.6f}")

    try:  # no thinking budget: the worst case is the model's whole 65,536-token output
        client.models.generate_content(model="gemini-2.5-pro", contents="Think hard.")
    except spendguard.BudgetExceeded as refused:
        print(f"refused before sending: needs up to ${refused.estimate_usd:.4f}, "
              f"${refused.remaining_usd:.4f} left")
    print(f"total: ${budget.spent:.6f} of $0.05; nothing left reserved: {budget.reserved == 0}")


if __name__ == "__main__":
    main()
