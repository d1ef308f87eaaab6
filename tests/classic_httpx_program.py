"""Classic ``httpx`` clients under spendguard, in a process of its own: the test suite makes
``import httpx`` resolve to ``httpx2``, so only a fresh interpreter sees the classic package.

``python classic_httpx_program.py BASE_URL`` runs each case against the emulator at
``BASE_URL`` and prints one JSON object: what each case saw (records, tokens, errors).
"""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from typing import Any, cast

import httpx
import httpx2
import openai

import spendguard

MESSAGES: Any = [{"role": "user", "content": "Say something short."}]


def _classic() -> Any:
    """A classic ``httpx.Client`` (the SDK's annotations name httpx2's; it accepts both)."""
    return httpx.Client()


def _classic_async() -> Any:
    return httpx.AsyncClient()


def _budget(limit: str = "1") -> spendguard.Budget:
    return spendguard.Budget(limit, ledger=f"memory://classic-{uuid.uuid4().hex[:8]}",
                             warn_at=None)


def _outputs(budget: spendguard.Budget) -> list[int]:
    return sorted(r.tokens["output"] for r in budget.ledger.records(scope=budget.scope))


def drop_in_sync(base_url: str) -> dict[str, Any]:
    budget = _budget()
    with _classic() as http_client:
        client = spendguard.OpenAI(api_key="k", base_url=base_url + "/v1",
                                   http_client=http_client, budget=budget, max_retries=0)
        reply = client.chat.completions.create(model="gpt-5.5", messages=MESSAGES,
                                               max_tokens=30)
        chunks = list(client.chat.completions.create(
            model="gpt-5.5", messages=MESSAGES, max_tokens=30, stream=True,
            stream_options={"include_usage": True}))
    assert reply.usage is not None and chunks[-1].usage is not None
    return {"records": _outputs(budget),
            "usage": sorted([reply.usage.completion_tokens, chunks[-1].usage.completion_tokens])}


async def wrapped_async(base_url: str) -> dict[str, Any]:
    budget = _budget()
    async with _classic_async() as http_client:
        client = spendguard.wrap(openai.AsyncOpenAI(
            api_key="k", base_url=base_url + "/v1", http_client=http_client, max_retries=0),
            budget)
        reply = await client.chat.completions.create(model="gpt-5.5", max_tokens=30,
                                                     messages=MESSAGES)
    assert reply.usage is not None
    return {"records": _outputs(budget), "usage": [reply.usage.completion_tokens]}


def refused(base_url: str) -> dict[str, Any]:
    with _classic() as http_client:
        client = spendguard.wrap(openai.OpenAI(api_key="k", base_url=base_url + "/v1",
                                               http_client=http_client, max_retries=3),
                                 _budget("0.00001"))
        try:
            client.chat.completions.create(model="gpt-5.5", messages=MESSAGES, max_tokens=30)
        except spendguard.BudgetExceeded as exc:
            return {"error": "BudgetExceeded", "sdk_error": isinstance(exc, openai.OpenAIError)}
    return {"error": None}


def installed(base_url: str) -> dict[str, Any]:
    """Under install(): an SDK client over a classic client (LiteLLM's way) and a request
    sent by classic httpx itself to a declared provider URL (LiteLLM's Anthropic route)."""
    budget = _budget()
    spendguard.install(budget, base_urls={base_url: "anthropic"})
    try:
        sdk = openai.OpenAI(api_key="k", base_url=base_url + "/v1",
                            http_client=_classic(), max_retries=0)
        sdk.chat.completions.create(model="gpt-5.5", messages=MESSAGES, max_tokens=30)
        with httpx.Client() as raw:
            answer = raw.post(base_url + "/v1/messages", headers={"x-api-key": "k",
                              "anthropic-version": "2023-06-01"},
                              json={"model": "claude-sonnet-4-6", "max_tokens": 30,
                                    "messages": MESSAGES})
            other = raw.get(base_url + "/health-of-something-else")
    finally:
        spendguard.uninstall()
    return {"records": len(_outputs(budget)), "anthropic_output":
            answer.json()["usage"]["output_tokens"], "other_status": other.status_code,
            "providers": sorted(r.provider for r in budget.ledger.records(scope=budget.scope))}


def main() -> None:
    assert httpx.Client is not cast(Any, httpx2.Client), "classic httpx, not the alias"
    base_url = sys.argv[1]
    print(json.dumps({"drop_in_sync": drop_in_sync(base_url),
                      "wrapped_async": asyncio.run(wrapped_async(base_url)),
                      "refused": refused(base_url), "installed": installed(base_url)}))


if __name__ == "__main__":
    main()
