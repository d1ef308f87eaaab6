"""Request bodies and emulated clients shared by the plan and cache-ordering tests."""

from __future__ import annotations

from typing import Any

import httpx2

import spendguard
from spendguard.testing import ANTHROPIC_BASE_URL, OPENAI_BASE_URL, Emulator, ManualClock

# About 5,000 o200k tokens: the shared document of the fan-out examples.
DOCUMENT = " ".join(f"Clause {i}: the supplier delivers item {i} on time." for i in range(420))
SYSTEM = "You are a contracts analyst. Answer in one sentence."
CLAUDE = "claude-sonnet-4-6"
GPT = "gpt-4.1-mini"


def _ordered(question: dict[str, Any], document: dict[str, Any],
             question_first: bool) -> list[dict[str, Any]]:
    # Cache ordering moves no content by default: the document-first fan-out is the one
    # it caches; the question-first one needs reorder_content=True.
    return [question, document] if question_first else [document, question]


def anthropic_fanout(count: int = 50, *, max_tokens: int = 200, model: str = CLAUDE,
                     question_first: bool = False) -> list[dict[str, Any]]:
    """Questions about one document, document first (no cache markers)."""
    return [{"model": model, "max_tokens": max_tokens, "system": SYSTEM,
             "messages": [{"role": "user", "content": _ordered(
                 {"type": "text", "text": f"Who delivers item {i}?"},
                 {"type": "document", "source": {"type": "text", "media_type": "text/plain",
                                                 "data": DOCUMENT}}, question_first)}]}
            for i in range(count)]


def openai_fanout(count: int = 50, *, max_tokens: int = 200, model: str = GPT,
                  question_first: bool = False) -> list[dict[str, Any]]:
    """The same fan-out in Chat Completions shape."""
    return [{"model": model, "max_completion_tokens": max_tokens,
             "messages": [{"role": "system", "content": SYSTEM},
                          {"role": "user", "content": _ordered(
                              {"type": "text", "text": f"Who delivers item {i}?"},
                              {"type": "text", "text": DOCUMENT}, question_first)}]}
            for i in range(count)]


def emulator() -> Emulator:
    return Emulator(clock=ManualClock())


def anthropic_client(emu: Emulator, budget: spendguard.Budget | None = None,
                     **options: Any) -> Any:
    return spendguard.Anthropic(api_key="emulated", base_url=ANTHROPIC_BASE_URL,
                                http_client=httpx2.Client(transport=emu.transport()),
                                budget=budget, **options)


def async_anthropic_client(emu: Emulator, budget: spendguard.Budget | None = None) -> Any:
    return spendguard.AsyncAnthropic(api_key="emulated", base_url=ANTHROPIC_BASE_URL,
                                     http_client=httpx2.AsyncClient(transport=emu.transport()),
                                     budget=budget)


def openai_client(emu: Emulator, budget: spendguard.Budget | None = None,
                  **options: Any) -> Any:
    return spendguard.OpenAI(api_key="emulated", base_url=OPENAI_BASE_URL,
                             http_client=httpx2.Client(transport=emu.transport()),
                             budget=budget, **options)


def async_openai_client(emu: Emulator, budget: spendguard.Budget | None = None) -> Any:
    return spendguard.AsyncOpenAI(api_key="emulated", base_url=OPENAI_BASE_URL,
                                  http_client=httpx2.AsyncClient(transport=emu.transport()),
                                  budget=budget)


def budget(limit: str = "10", name: str = "") -> spendguard.Budget:
    return spendguard.Budget(limit, ledger=f"memory://{name}" if name else "memory://")
