"""The other budget libraries, each set up through its own public API around the openai SDK.

Every adapter builds a budget of ``limit_usd`` and an ``openai`` client (sync, and async where
the peer supports it) that talks to ``base_url``, the same loopback emulator spendguard's rows
use. The peers live in the benchmark's own venv (``benchmarks/README.md``); one that is not
installed, or cannot be set up in this Python, yields ``None`` and a reason for the n/a row.

What each peer is, as its own README and code describe it (read at the versions in the
benchmark's venv):

- shekel: ``with budget(max_usd=...)`` patches the provider SDK's ``create`` while the block is
  active; the active budget is a ``ContextVar``, so threads and event loops run inside a copy
  of the context that entered it. State is per process.
- tokenwarden: an httpx transport that checks a per-key window counter before sending and adds
  the priced usage after; it answers 429 itself once the counter has reached the limit.
- agent-budget-guard: ``BudgetedSession(budget_usd).wrap_openai(client)``; sync only.
- budget-guard-llm (imports as ``budget_guard``): ``guard(client, budget=BudgetGuard(...))``
  with a daily total; in-flight calls count at an estimate (3 characters a token + max_tokens).
- llm-spendguard: not measured. It installs a top-level package named ``spendguard`` (so it
  cannot be imported next to this one), and its gate decides one batch or job submission at a
  time rather than keeping a running budget a client call can be charged to.
"""

from __future__ import annotations

import asyncio
import contextvars
import gzip
import hashlib
import importlib
import os
import tempfile
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from decimal import Decimal
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import openai

__all__ = ["PEERS", "Peer", "PeerClient", "peer_version"]


@dataclass
class PeerClient:
    """One peer's guarded clients and how to read it."""

    client: Any
    aclient: Any | None
    refused: tuple[type[BaseException], ...]
    tracked_usd: Callable[[], Decimal]
    # Runs one sync call inside whatever context the peer needs (shekel: its budget's).
    run: Callable[[Callable[[], Any]], Any] = field(default=lambda call: call())
    run_async: Callable[[Coroutine[Any, Any, Any]], Any] = field(default=asyncio.run)
    why_no_async: str = ""


@dataclass(frozen=True)
class Peer:
    name: str
    package: str
    make: Callable[[str, Decimal], PeerClient]
    # For timing next to other variants: a set-up that leaves nothing patched between calls.
    make_isolated: Callable[[str, Decimal], PeerClient] | None = None


def peer_version(package: str) -> str | None:
    try:
        return version(package)
    except PackageNotFoundError:
        return None


def _openai(base_url: str, **options: Any) -> openai.OpenAI:
    return openai.OpenAI(api_key="k", base_url=base_url, max_retries=0, **options)


def _async_openai(base_url: str, **options: Any) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(api_key="k", base_url=base_url, max_retries=0, **options)


def make_shekel(base_url: str, limit_usd: Decimal) -> PeerClient:
    shekel: Any = importlib.import_module("shekel")
    exceptions: Any = importlib.import_module("shekel.exceptions")
    budget = shekel.budget(max_usd=float(limit_usd))
    # Entered in a private copy of the context: the process's own context stays unbudgeted.
    context = contextvars.copy_context()
    context.run(budget.__enter__)

    def run(call: Callable[[], Any]) -> Any:
        return context.copy().run(call)  # one Context cannot be entered by two threads

    def run_async(coroutine: Coroutine[Any, Any, Any]) -> Any:
        return context.copy().run(asyncio.run, coroutine)

    return PeerClient(_openai(base_url), _async_openai(base_url),
                      (exceptions.BudgetExceededError,),
                      lambda: Decimal(str(budget.spent)), run=run, run_async=run_async)


def make_shekel_per_call(base_url: str, limit_usd: Decimal) -> PeerClient:
    """shekel with its budget entered around each call only, so its process-wide patch of the
    SDK (and of LiteLLM) is off while other variants run; each call pays for entering it."""
    shekel: Any = importlib.import_module("shekel")
    exceptions: Any = importlib.import_module("shekel.exceptions")
    budget = shekel.budget(max_usd=float(limit_usd))

    def run(call: Callable[[], Any]) -> Any:
        with budget:  # a Budget re-entered keeps its spend across blocks
            return call()

    return PeerClient(_openai(base_url), None, (exceptions.BudgetExceededError,),
                      lambda: Decimal(str(budget.spent)), run=run)


def make_tokenwarden(base_url: str, limit_usd: Decimal) -> PeerClient:
    import httpx2

    # tokenwarden is written against httpx; the SDK here runs on httpx2, whose transport it
    # wraps (the two share the handle_request / handle_async_request interface).
    tokenwarden: Any = importlib.import_module("tokenwarden")
    store_module: Any = importlib.import_module("tokenwarden.budget._store")
    store = store_module.InMemoryBudgetStore()
    config = store_module.BudgetConfig(key="bench", limit=float(limit_usd),
                                       window_seconds=86_400,
                                       mode=store_module.BudgetMode.ENFORCE)
    # It knows a provider only by its host (api.openai.com), so the client names that host and
    # the innermost transport delivers to the loopback server instead, as a DNS entry would.
    loopback = httpx2.URL(base_url)

    def to_loopback(request: Any) -> None:
        request.url = request.url.copy_with(scheme=loopback.scheme, host=loopback.host,
                                            port=loopback.port)

    class Sync(httpx2.HTTPTransport):
        def handle_request(self, request: Any) -> Any:
            to_loopback(request)
            return super().handle_request(request)

    class Async(httpx2.AsyncHTTPTransport):
        async def handle_async_request(self, request: Any) -> Any:
            to_loopback(request)
            return await super().handle_async_request(request)

    # Its own 429 is an httpx (not httpx2) Response: re-made as httpx2 so the SDK can read it.
    def native(response: Any) -> Any:
        if isinstance(response, httpx2.Response):
            return response
        return httpx2.Response(response.status_code, headers=dict(response.headers),
                               content=response.content)

    class Warden(httpx2.BaseTransport):
        inner = tokenwarden.TokenWardenTransport(Sync(), budgets=[config], store=store)

        def handle_request(self, request: Any) -> Any:
            return native(self.inner.handle_request(request))

    class AsyncWarden(httpx2.AsyncBaseTransport):
        inner = tokenwarden.AsyncTokenWardenTransport(Async(), budgets=[config], store=store)

        async def handle_async_request(self, request: Any) -> Any:
            return native(await self.inner.handle_async_request(request))

    sync, asynchronous = Warden(), AsyncWarden()
    named = f"https://api.openai.com{loopback.path.rstrip('/')}"
    client = _openai(named, http_client=httpx2.Client(transport=sync))
    aclient = _async_openai(named, http_client=httpx2.AsyncClient(transport=asynchronous))
    # Its refusal is a 429 answered in-process, which the SDK raises as RateLimitError.
    return PeerClient(client, aclient, (openai.RateLimitError,),
                      lambda: Decimal(str(store.peek("bench:global", 86_400))))


def _seed_tiktoken_cache() -> None:
    """Give tiktoken spendguard's bundled o200k/cl100k files: offline it would download them."""
    if os.environ.get("TIKTOKEN_CACHE_DIR"):
        return
    from spendguard._costing.tokens.bpe import DATA_DIR

    folder = Path(tempfile.mkdtemp(prefix="spendguard-bench-tiktoken-"))
    for name in ("o200k_base", "cl100k_base"):
        url = f"https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"
        data = gzip.decompress((DATA_DIR / f"{name}.tiktoken.gz").read_bytes())
        (folder / hashlib.sha1(url.encode()).hexdigest()).write_bytes(data)
    os.environ["TIKTOKEN_CACHE_DIR"] = str(folder)


def make_agent_budget_guard(base_url: str, limit_usd: Decimal) -> PeerClient:
    _seed_tiktoken_cache()  # it counts the prompt with tiktoken before each call
    guard: Any = importlib.import_module("agent_budget_guard")
    session = guard.BudgetedSession(budget_usd=float(limit_usd))
    client = session.wrap_openai(_openai(base_url))
    return PeerClient(client, None, (guard.BudgetExceededError,),
                      lambda: Decimal(str(session.get_total_spent())),
                      why_no_async="n/a (wraps the sync OpenAI client only)")


def make_budget_guard_llm(base_url: str, limit_usd: Decimal) -> PeerClient:
    guard: Any = importlib.import_module("budget_guard")
    pricing = guard.default_pricing()
    # Its table has no gpt-4o; add it as its warning says, at OpenAI's list price (the same
    # rate spendguard's table bills: $2.50 / $1.25 cached / $10.00 per million tokens).
    for model in ("gpt-4o", "gpt-4o-mini"):
        rates = {"input": "2.50", "cache_read": "1.25", "output": "10.00"} \
            if model == "gpt-4o" else {"input": "0.15", "cache_read": "0.075", "output": "0.60"}
        pricing.set("openai", model, rates)
    keeper = guard.BudgetGuard(limits=guard.Limits(daily_total=limit_usd), loop_detection=None,
                               pricing=pricing)
    client = guard.guard(_openai(base_url), budget=keeper)
    aclient = guard.guard(_async_openai(base_url), budget=keeper)
    return PeerClient(client, aclient, (guard.BudgetExceeded,), lambda: Decimal(keeper.spent()))


PEERS: tuple[Peer, ...] = (
    Peer("shekel", "shekel", make_shekel, make_shekel_per_call),
    Peer("tokenwarden", "tokenwarden", make_tokenwarden),
    Peer("agent-budget-guard", "agent-budget-guard", make_agent_budget_guard),
    Peer("budget-guard-llm", "budget-guard-llm", make_budget_guard_llm),
)

LLM_SPENDGUARD_NA = ("n/a (its import package is also named spendguard; it gates job "
                     "submissions, not calls)")


def build_peer(peer: Peer, base_url: str, limit_usd: Decimal, *,
               isolated: bool = False) -> tuple[PeerClient | None, str]:
    """The peer's clients, or None and the n/a text saying why.

    ``isolated``: the set-up that changes nothing outside its own calls (for timing).
    """
    installed = peer_version(peer.package)
    if installed is None:
        return None, f"n/a ({peer.package} not installed: see benchmarks/README.md)"
    try:
        make = peer.make_isolated if isolated and peer.make_isolated else peer.make
        return make(base_url, limit_usd), ""
    except Exception as error:  # a peer that cannot be set up is a row, not a crash
        return None, f"n/a ({peer.package} {installed}: {type(error).__name__}: {error})"[:160]
