"""Shared by the transport tests: guarded (or plain) SDK calls and the ledger's records."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import anthropic
import openai
import pytest

import spendguard
from spendguard._budget.ledger.base import SpendRecord

OPENAI_CHAT = "https://api.openai.com/v1/chat/completions"
ANTHROPIC_MESSAGES = "https://api.anthropic.com/v1/messages"
MESSAGES: Any = [{"role": "user", "content": "Say hi"}]
EVENT_STREAM = {"content-type": "text/event-stream"}


@pytest.fixture(name="ledger_url")
def fixture_ledger_url() -> str:
    """A ledger of this test's own (in memory, shared by name; SQLite and Redis are covered by
    the backend test below and the ledger's own contract tests)."""
    return f"memory://transport-{uuid.uuid4().hex}"


def records(url: str) -> list[SpendRecord]:
    return list(spendguard.open_ledger(url).records())


def billed(url: str) -> list[SpendRecord]:
    return [r for r in records(url) if r.status != "released"]


def openai_call(is_async: bool, budget: spendguard.Budget | None, **client: Any) -> Any:
    """One chat completion through the guarded client (or the plain one when budget is None)."""
    request: dict[str, Any] = {"model": "gpt-4o-mini", "messages": MESSAGES, "max_tokens": 100}
    if is_async:
        async def go() -> Any:
            sdk = (openai.AsyncOpenAI(api_key="k", **client) if budget is None
                   else spendguard.AsyncOpenAI(api_key="k", budget=budget, **client))
            return await sdk.chat.completions.create(**request)
        return asyncio.run(go())
    sdk_client = (openai.OpenAI(api_key="k", **client) if budget is None
                  else spendguard.OpenAI(api_key="k", budget=budget, **client))
    return sdk_client.chat.completions.create(**request)


def anthropic_call(is_async: bool, budget: spendguard.Budget | None, **client: Any) -> Any:
    request: dict[str, Any] = {"model": "claude-haiku-4-5", "messages": MESSAGES,
                               "max_tokens": 100}
    if is_async:
        async def go() -> Any:
            sdk = (anthropic.AsyncAnthropic(api_key="k", **client) if budget is None
                   else spendguard.AsyncAnthropic(api_key="k", budget=budget, **client))
            return await sdk.messages.create(**request)
        return asyncio.run(go())
    sdk_client = (anthropic.Anthropic(api_key="k", **client) if budget is None
                  else spendguard.Anthropic(api_key="k", budget=budget, **client))
    return sdk_client.messages.create(**request)


def outcome(call: Any, *args: Any, **kwargs: Any) -> str:
    """What the caller saw: the reply's type, or the exception's."""
    try:
        return type(call(*args, **kwargs)).__name__
    except Exception as exc:
        return f"raised {type(exc).__name__}"
