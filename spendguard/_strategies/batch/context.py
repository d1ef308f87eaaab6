"""What batching needs to know about the caller's client, and where its jobs are kept."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from spendguard._budget.budget import Budget
from spendguard._budget.ledger import open_ledger
from spendguard._budget.ledger.base import Ledger
from spendguard._budget.ledger.jobs import JobStore, job_store
from spendguard._budget.scopes import collect_budgets
from spendguard._core.errors import ConfigError
from spendguard._costing.calls import Provider
from spendguard._costing.prices import PriceTable, default_table
from spendguard._guard.sdk_clients import loaded_class
from spendguard._guard.transport import client_guard
from spendguard._providers import adapters
from spendguard._strategies.batch.wire import BatchAPI, api_for

__all__ = ["ClientContext", "client_context", "ledger_for", "live_ledgers", "store_for"]


@dataclass(frozen=True, slots=True)
class ClientContext:
    """The caller's SDK client, its provider, and what its guard (if any) says about it.

    Read once through the choke point's public accessor, ``transport.client_guard(client)``.
    """

    client: Any
    provider: Provider
    is_async: bool
    api: BatchAPI
    guarded: bool
    """Whether the client is guarded: its ordinary calls are budgeted (a fallback needs it)."""
    budget: Budget | None
    table: PriceTable
    store_prompts: bool


def _kind(client: Any) -> tuple[Provider, bool] | None:
    """The provider and async-ness of a client of a provider's own API (a batch is sent
    there), by its adapter's SDK client classes; None for any other object."""
    for adapter in adapters():
        for entry in adapter.sdk_clients:
            cls = loaded_class(entry) if entry.own_api else None  # its SDK is imported already
            if cls is not None and isinstance(client, cls):
                return Provider(adapter.name), entry.is_async
    return None


def client_context(client: Any) -> ClientContext:
    """Read an ``openai`` / ``anthropic`` / ``google.genai`` client (guarded or not, sync or
    async)."""
    kind = _kind(client)
    if kind is None:
        raise ConfigError(f"client: expected an openai, anthropic or google-genai client "
                          f"(spendguard.OpenAI, spendguard.Anthropic, spendguard.Gemini, or the "
                          f"SDKs' own), got {type(client).__name__}")
    provider, is_async = kind
    guard = client_guard(client)
    if guard is None:
        return ClientContext(client, provider, is_async, api_for(provider), guarded=False,
                             budget=None, table=default_table(), store_prompts=False)
    return ClientContext(client, provider, is_async, api_for(provider), guarded=True,
                         budget=guard.budget, table=guard.table,
                         store_prompts=guard.options.store_prompts)


def ledger_for(ledger: str | os.PathLike[str] | Ledger | None, budget: Budget | None) -> Ledger:
    """Where jobs are kept: the ledger named, else the client's budget's, else the default."""
    if isinstance(ledger, Ledger):
        return ledger
    if ledger is not None:
        return open_ledger(ledger)
    budgets = collect_budgets(budget)
    if budget is not None:
        return budget.ledger
    return budgets[-1].ledger if budgets else open_ledger()


def store_for(ledger: str | os.PathLike[str] | Ledger | None,
              budget: Budget | None) -> JobStore:
    """The job store of :func:`ledger_for`."""
    return job_store(ledger_for(ledger, budget))


def live_ledgers(store_ledger: Ledger, budget: Budget | None) -> dict[str, Ledger]:
    """The ledgers open in this process, by URL: a private ``memory://`` ledger cannot be
    reopened by its URL, so a reservation held in one is closed through the object itself."""
    known = {b.ledger.url: b.ledger for b in reversed(collect_budgets(budget))}
    known[store_ledger.url] = store_ledger
    return known
