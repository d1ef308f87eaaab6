"""Order requests for the prompt cache: one body by hand, then every call of a client.

Runs offline against spendguard's provider emulator (``spendguard.testing``), which simulates
both providers' prompt caches; every figure below is read from the usage it returns.

    .venv/bin/python examples/cache_ordering.py
"""

from __future__ import annotations

import json
from typing import Any

import httpx2

import spendguard
from spendguard.testing import ANTHROPIC_BASE_URL, OPENAI_BASE_URL, Emulator, ManualClock

HANDBOOK = " ".join(f"Rule {i}: refunds for plan {i % 9} are due within {i % 14 + 1} days."
                    for i in range(400))
TOOLS = [{"name": "refund", "description": "Issue a refund.",
          "input_schema": {"type": "object", "properties": {"order": {"type": "string"},
                                                            "amount": {"type": "number"}}}},
         {"name": "escalate", "description": "Hand the ticket to a person.",
          "input_schema": {"type": "object", "properties": {"reason": {"type": "string"}}}}]


def ticket(n: int) -> dict[str, Any]:
    """A support request as an app might build it: the time and a trace id at the top of a
    system prompt that holds the handbook, tools in whatever order a dict gave them."""
    return {"model": "claude-sonnet-4-6", "max_tokens": 100, "tools": TOOLS[::-1],
            "system": f"Now: 2027-01-15T08:{n:02d}:00Z, trace req_{n:04d}a1b2c3d4e5. "
                      f"You answer refund questions. {HANDBOOK}",
            "messages": [{"role": "user", "content":
                          f"Ticket {n}: when is my refund for plan {n % 9} due?"}]}


def show_one_body() -> None:
    print("== order_for_cache on one body ==")
    ordered = spendguard.order_for_cache(ticket(1), volatile_to_last_message=True)
    print(ordered.report())
    body = ordered.body
    print("tools:", [tool["name"] for tool in body["tools"]])
    print("system:", [block["text"][:30] for block in body["system"]])
    default = spendguard.order_for_cache(ticket(1)).body
    print("default system:", json.dumps([block["text"][:30] for block in default["system"]]))
    print("last message:", [block["text"][:30] for block in body["messages"][-1]["content"]])
    print("flagged only:", spendguard.order_for_cache(ticket(1), move_volatile=False).notes[0])


def measure(cache_order: bool | spendguard.CacheOrder) -> spendguard.CacheStats:
    budget = spendguard.Budget("5", ledger=f"memory://cache-ordering-{cache_order!r}")
    emulator = Emulator(clock=ManualClock())
    client = spendguard.Anthropic(api_key="emulated", base_url=ANTHROPIC_BASE_URL,
                                  http_client=httpx2.Client(transport=emulator.transport()),
                                  budget=budget, cache_order=cache_order)
    for n in range(10):
        client.messages.create(**ticket(n))
    return spendguard.cache_stats(budget.ledger)


def show_openai_key() -> None:
    emulator = Emulator(clock=ManualClock())
    # The question comes before the handbook here: putting the handbook first changes the
    # order of what the user wrote, so it is opt-in (and reported by order_for_cache).
    client = spendguard.OpenAI(api_key="emulated", base_url=OPENAI_BASE_URL,
                               http_client=httpx2.Client(transport=emulator.transport()),
                               budget=spendguard.Budget("1", ledger="memory://"),
                               cache_order=spendguard.CacheOrder(reorder_content=True))
    for n in range(3):
        client.chat.completions.create(model="gpt-4.1-mini", max_completion_tokens=50, messages=[
            {"role": "system", "content": "You answer refund questions."},
            {"role": "user", "content": [{"type": "text", "text": f"Ticket {n}: refund?"},
                                         {"type": "text", "text": HANDBOOK}]}])
    sent = emulator.requests[-1].body
    print(f"openai: prompt_cache_key {sent['prompt_cache_key']}, handbook sent first: "
          f"{sent['messages'][1]['content'][0]['text'] == HANDBOOK}")


def main() -> None:
    show_one_body()
    print("\n== ten tickets through a guarded client ==")
    # cache_order=True splits the time and trace sentence out of the system prompt and puts
    # it after the handbook, still as system text: the handbook is read from the cache.
    # volatile_to_last_message=True (opt-in) moves it into the user's message instead.
    options: list[tuple[str, bool | spendguard.CacheOrder]] = [
        ("False", False), ("True", True),
        ("CacheOrder(volatile_to_last_message=True)",
         spendguard.CacheOrder(volatile_to_last_message=True))]
    for label, cache_order in options:
        print(f"cache_order={label}:\n  {measure(cache_order)}")
    show_openai_key()


if __name__ == "__main__":
    main()
