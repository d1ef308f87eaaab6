"""Plan before fan-out: what N requests will cost and take, before any is sent.

:func:`plan` counts every request offline (a prefix shared by many requests is counted once),
expects cache reads and writes from the prefixes they share, takes expected output from the
caps or from the ledger's history of the same model and task, and prices it all: expected and
worst case, with cache and batch savings and the time at a given concurrency.
:meth:`Plan.run` / :meth:`Plan.arun` then send the requests through a (guarded) client.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from spendguard._budget.ledger import Ledger, open_ledger
from spendguard._caching.kind import model_price_or_none
from spendguard._caching.layout import remembered_identities
from spendguard._caching.order import CacheOrder, as_cache_order
from spendguard._caching.volatile import VolatileValue
from spendguard._core.errors import ConfigError, LedgerNotFound
from spendguard._costing.prices import ModelPrice, PriceTable, default_table
from spendguard._costing.tokens import count_request_tokens
from spendguard._strategies.plan.estimates import Assumptions, RequestPlan, estimate_request
from spendguard._strategies.plan.history import observed
from spendguard._strategies.plan.inputs import PlannedRequest, load_requests
from spendguard._strategies.plan.model import Plan, PlanTotals
from spendguard._strategies.plan.ordering import order_plan
from spendguard._strategies.plan.prefixes import expect_cache
from spendguard._strategies.plan.results import PlanResult, RequestOutcome

__all__ = ["Plan", "PlanResult", "PlanTotals", "PlannedRequest", "RequestOutcome",
           "RequestPlan", "plan"]

DEFAULT_CONCURRENCY = 8


def _count(request: PlannedRequest, body: Mapping[str, Any]) -> int:
    return count_request_tokens(request.provider, request.endpoint, body).expected


def plan(requests: str | os.PathLike[str] | Iterable[Mapping[str, Any]], *,
         provider: str | None = None, cache_order: bool | CacheOrder = False,
         task: str | None = None, ledger: Ledger | str | os.PathLike[str] | None = None,
         concurrency: int = DEFAULT_CONCURRENCY, table: PriceTable | None = None,
         first_token_s: float = 0.5, output_tok_s: float = 50.0) -> Plan:
    """Plan a list of request bodies (OpenAI, Anthropic or Gemini shapes) or a batch input
    file.

    - ``provider`` pins the provider of bare bodies (else read from each model);
    - ``cache_order``: True or a :class:`~spendguard.CacheOrder` to order the requests for
      the prompt cache first (the plan then runs the ordered bodies);
    - ``task``: a name for this kind of request; expected output (and latency) then come from
      the ledger's calls tagged ``task=<name>`` for the same model, once there are some, and
      :meth:`Plan.run` tags its calls so;
    - ``ledger``: where that history is read (default: spendguard's ledger);
    - ``concurrency``: requests in flight for the time estimate and :meth:`Plan.run`;
    - ``first_token_s`` / ``output_tok_s``: the latency assumed where the ledger has none.

    Reads the ledger only when ``task`` is given; sends nothing.
    """
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ConfigError(f"concurrency: expected a whole number >= 1, got {concurrency!r}")
    if first_token_s < 0 or output_tok_s <= 0:
        raise ConfigError("first_token_s must be >= 0 and output_tok_s > 0 (seconds, tokens/s)")
    table = table or default_table()
    loaded = load_requests(requests, provider=provider, table=table)
    models = {str(r.body.get("model")) for r in loaded}
    prices = {model: model_price_or_none(model, table) for model in models}
    options = as_cache_order(cache_order)
    with remembered_identities():  # the same blocks recur in every request
        return _plan(loaded, options, task=task, ledger=ledger, concurrency=concurrency,
                     table=table, prices=prices, models=models,
                     assumptions=Assumptions(first_token_s, output_tok_s))


def _plan(loaded: list[PlannedRequest], options: CacheOrder | None, *, task: str | None,
          ledger: Ledger | str | os.PathLike[str] | None, concurrency: int, table: PriceTable,
          prices: dict[str, ModelPrice | None], models: set[str],
          assumptions: Assumptions) -> Plan:
    volatile: tuple[VolatileValue, ...] = ()
    notes: tuple[str, ...] = ()
    if options is not None:
        ordered = order_plan(loaded, options, prices=prices, count=_count,
                             concurrency=concurrency, assumptions=assumptions)
        loaded, volatile, notes = list(ordered.requests), ordered.volatile, ordered.notes
    counts = [count_request_tokens(r.provider, r.endpoint, r.body) for r in loaded]
    history = {}
    if task is not None:
        try:  # read only: estimating never creates a ledger; none means no history yet
            store = ledger if isinstance(ledger, Ledger) else open_ledger(ledger, read_only=True)
            history = observed(store, task, models)
        except LedgerNotFound:
            history = {}
    caches = expect_cache(loaded, [c.expected for c in counts], prices=prices, count=_count)
    rows = tuple(estimate_request(r, c, cache, observed=history.get(str(r.body.get("model"))),
                                  table=table, assumptions=assumptions)
                 for r, c, cache in zip(loaded, counts, caches, strict=True))
    return Plan(id=uuid.uuid4().hex[:12], requests=tuple(loaded), rows=rows,
                totals=PlanTotals.of(rows), concurrency=concurrency, task=task,
                cache_ordered=options is not None, volatile=volatile, notes=notes,
                table_version=table.version, table=table)
