"""Helpers for the batching tests: an emulator on a manual clock, guarded clients, requests."""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import httpx2

import spendguard
from spendguard._budget.ledger.base import Ledger
from spendguard._strategies.batch import Polling
from spendguard.testing import (
    ANTHROPIC_BASE_URL,
    OPENAI_BASE_URL,
    Emulator,
    ManualClock,
    Prompt,
)

GPT = "gpt-5.5"
CLAUDE = "claude-sonnet-5"
FLASH = "gemini-2.5-flash"


def echo(prompt: Prompt) -> str:
    """Replies that name their prompt, so a test sees each result reach its own request."""
    return f"echo: {prompt.last_user_text}"


def chat(text: str, *, model: str = GPT, max_tokens: int = 40) -> dict[str, Any]:
    """The arguments of an ordinary chat.completions.create() call."""
    return {"model": model, "messages": [{"role": "user", "content": text}],
            "max_completion_tokens": max_tokens}


def message(text: str, *, model: str = CLAUDE, max_tokens: int = 40) -> dict[str, Any]:
    """The arguments of an ordinary messages.create() call."""
    return {"model": model, "max_tokens": max_tokens,
            "messages": [{"role": "user", "content": text}]}


def content(text: str, *, model: str = FLASH, max_tokens: int = 40) -> dict[str, Any]:
    """The arguments of an ordinary models.generate_content() call (thinking off, so the
    output is capped at ``max_tokens``)."""
    return {"model": model, "contents": text,
            "config": {"max_output_tokens": max_tokens,
                       "thinking_config": {"thinking_budget": 0}}}


@dataclass
class World:
    """One emulator, its clock, a budget and guarded clients wired to it."""

    clock: ManualClock = field(default_factory=ManualClock)
    limit_usd: str = "10"
    ledger: str | Ledger = "memory://"
    emulator_options: dict[str, Any] = field(default_factory=dict)
    progress: list[str] = field(default_factory=list)
    scope: str | None = None
    provider: Emulator | None = None
    """The emulator of a world that "crashed": the provider outlives the process."""

    def __post_init__(self) -> None:
        self.emulator = self.provider or Emulator(
            clock=self.clock, **{"batch_completion_s": 100.0, "respond": echo,
                                 **self.emulator_options})
        self.budget = spendguard.Budget(self.limit_usd, ledger=self.ledger, warn_at=None,
                                        scope=self.scope)
        self.polling = Polling.manual(self.clock, progress=self.progress.append)

    def openai(self, **options: Any) -> spendguard.OpenAI:
        options.setdefault("budget", self.budget)
        return spendguard.OpenAI(api_key="k", base_url=OPENAI_BASE_URL, max_retries=0,
                                 http_client=httpx2.Client(transport=self.emulator.transport()),
                                 **options)

    def anthropic(self, **options: Any) -> spendguard.Anthropic:
        options.setdefault("budget", self.budget)
        return spendguard.Anthropic(api_key="k", base_url=ANTHROPIC_BASE_URL, max_retries=0,
                                    http_client=httpx2.Client(
                                        transport=self.emulator.transport()), **options)

    def async_openai(self, **options: Any) -> spendguard.AsyncOpenAI:
        options.setdefault("budget", self.budget)
        return spendguard.AsyncOpenAI(
            api_key="k", base_url=OPENAI_BASE_URL, max_retries=0,
            http_client=httpx2.AsyncClient(transport=self.emulator.transport()), **options)

    def async_anthropic(self, **options: Any) -> spendguard.AsyncAnthropic:
        options.setdefault("budget", self.budget)
        return spendguard.AsyncAnthropic(
            api_key="k", base_url=ANTHROPIC_BASE_URL, max_retries=0,
            http_client=httpx2.AsyncClient(transport=self.emulator.transport()), **options)

    def gemini(self, **options: Any) -> spendguard.Gemini:
        options.setdefault("budget", self.budget)
        return spendguard.Gemini(api_key="k", http_options=self.emulator.gemini_http_options(),
                                 **options)

    def async_gemini(self, **options: Any) -> Any:
        """A guarded ``google.genai`` async client (a ``spendguard.Gemini``'s ``.aio``)."""
        return self.gemini(**options).aio

    def restarted(self, ledger: str | Ledger) -> World:
        """A new process: same provider and clock, a fresh budget object on ``ledger``."""
        return World(clock=self.clock, limit_usd=self.limit_usd, ledger=ledger,
                     scope=self.budget.scope, provider=self.emulator)

    def sent(self, method: str, suffix: str) -> int:
        """How many requests the emulator received to a path ending in ``suffix``."""
        return sum(1 for r in self.emulator.requests
                   if r.method == method and r.path.endswith(suffix))

    def submissions(self) -> int:
        return self.sent("POST", "/batches") + self.sent("POST", ":batchGenerateContent")


def batch_usd(model: str, usage: spendguard.Usage) -> Decimal:
    """What the usage costs at batch prices."""
    return spendguard.cost(model, usage, batch=True).total
