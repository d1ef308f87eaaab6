"""spendguard: keep LLM spending on budget.

The public API is one flat namespace. Names are loaded on first use so that ``import spendguard``
stays fast and never imports the ``openai`` or ``anthropic`` SDKs (they load only when a guarded
client is built).

``_LAZY`` below is the one list of the public API: each public name and the module that
defines it. ``__all__`` is built from it, ``__getattr__`` resolves from it, and the
``TYPE_CHECKING`` imports (what mypy and IDEs read, since they cannot follow ``__getattr__``)
are generated from it by ``tools/public_api.py``; a test fails when they are stale. To add a
public name: add one ``_LAZY`` entry, then run ``python tools/public_api.py``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# public name -> module that defines it ("module:name" where it is named otherwise
# there); resolved lazily by __getattr__ below.
_LAZY: dict[str, str] = {
    # named in the docs and examples
    "CallEvent": "spendguard._budget.events",
    "CallOverrun": "spendguard._budget.thresholds",
    "Endpoint": "spendguard._costing.endpoints",
    "Polling": "spendguard._strategies.batch",
    "ThresholdCrossed": "spendguard._budget.thresholds",
    "acount_tokens_exact": "spendguard._costing.tokens",
    "batch_results": "spendguard._strategies.batch",
    "check_prices": "spendguard._costing.prices.check",
    "count_request_tokens": "spendguard._costing.tokens",
    "drain_ledger": "spendguard._budget.ledger.drain:drain",
    "exact_finding": "spendguard._strategies.loop.novelty:exact",
    "format_usd": "spendguard._core.money",
    "load_price_file": "spendguard._costing.prices",
    "normalise_finding": "spendguard._strategies.loop.novelty:normalise",
    "project_next_usd": "spendguard._strategies.loop.stops",
    "render_report_text": "spendguard._reporting.report:render_text",
    "stream_reader": "spendguard._providers",
    "subscribe": "spendguard._budget.events",
    "unsubscribe": "spendguard._budget.events",
    "write_report_html": "spendguard._reporting.report:write_html",
    # prices, usage and cost
    "Cost": "spendguard._costing.cost",
    "ModelPrice": "spendguard._costing.prices",
    "PriceTable": "spendguard._costing.prices",
    "Usage": "spendguard._costing.usage",
    "cost": "spendguard._costing.cost",
    "price": "spendguard._costing.prices",
    "register_prices": "spendguard._costing.prices",
    "GenaiPricesCatalog": "spendguard._costing.prices",
    "usage_from": "spendguard._costing.usage",
    # offline token counting
    "TokenCount": "spendguard._costing.tokens",
    "count_tokens": "spendguard._costing.tokens",
    "count_tokens_exact": "spendguard._costing.tokens",
    # guarded clients
    "OpenAI": "spendguard._providers.openai.dropin",
    "AsyncOpenAI": "spendguard._providers.openai.dropin",
    "Anthropic": "spendguard._providers.anthropic.dropin",
    "AsyncAnthropic": "spendguard._providers.anthropic.dropin",
    "AzureOpenAI": "spendguard._providers.openai.dropin",
    "AsyncAzureOpenAI": "spendguard._providers.openai.dropin",
    "AzureDeployment": "spendguard._providers.openai.dropin",
    "AnthropicBedrock": "spendguard._providers.anthropic.dropin",
    "AsyncAnthropicBedrock": "spendguard._providers.anthropic.dropin",
    "AnthropicVertex": "spendguard._providers.anthropic.dropin",
    "AsyncAnthropicVertex": "spendguard._providers.anthropic.dropin",
    "Gemini": "spendguard._providers.gemini.dropin",
    "SelfHosted": "spendguard._costing.prices.selfhosted",
    "wrap": "spendguard._guard.clients",
    "install": "spendguard._adoption.install",
    "uninstall": "spendguard._adoption.install",
    # budgets, scopes and the ledger
    "Budget": "spendguard._budget.budget",
    "BudgetWarning": "spendguard._core.errors",
    "SpendRecord": "spendguard._budget.ledger",
    "open_ledger": "spendguard._budget.ledger",
    "tags": "spendguard._budget.scopes",
    # runaway detection and degrading before refusing
    "Degrade": "spendguard._budget.degrade",
    "RunawayRefused": "spendguard._core.errors",
    "RunawayRules": "spendguard._budget.runaway",
    "RunawayTrip": "spendguard._budget.runaway",
    "lift_runaway": "spendguard._budget.runaway",
    # alerts delivered to webhooks
    "Alert": "spendguard._budget.alerts",
    "Webhook": "spendguard._budget.alerts",
    "check_alerts": "spendguard._budget.alerts",
    "flush_alerts": "spendguard._budget.alerts",
    # cascade and loop guard
    "cascade": "spendguard._strategies.cascade",
    "acascade": "spendguard._strategies.cascade",
    "CascadeResult": "spendguard._strategies.cascade",
    "CascadeAttempt": "spendguard._strategies.cascade",
    "AttemptOutcome": "spendguard._strategies.cascade",
    "CascadeFailed": "spendguard._core.errors",
    "Learning": "spendguard._strategies.cascade.learning",
    "MemoryStats": "spendguard._strategies.cascade.learning",
    "Savings": "spendguard._strategies.cascade.learning",
    "TierStats": "spendguard._strategies.cascade.learning",
    "LedgerStats": "spendguard._strategies.cascade.learning",
    "Candidate": "spendguard._strategies.cascade.checks",
    "Check": "spendguard._strategies.cascade.checks",
    "Verdict": "spendguard._strategies.cascade.checks",
    "always_pass": "spendguard._strategies.cascade.checks",
    "check_all": "spendguard._strategies.cascade.checks",
    "check_any": "spendguard._strategies.cascade.checks",
    "check_judge": "spendguard._strategies.cascade.checks",
    "check_matches": "spendguard._strategies.cascade.checks",
    "check_parses": "spendguard._strategies.cascade.checks",
    "check_with": "spendguard._strategies.cascade.checks",
    "loop": "spendguard._strategies.loop",
    "LoopGuard": "spendguard._strategies.loop",
    "LoopState": "spendguard._strategies.loop.stops",
    "StopReason": "spendguard._strategies.loop.stops",
    "stop_after_seconds": "spendguard._strategies.loop.stops",
    "stop_after_steps": "spendguard._strategies.loop.stops",
    "stop_after_usd": "spendguard._strategies.loop.stops",
    "stop_all": "spendguard._strategies.loop.stops",
    "stop_any": "spendguard._strategies.loop.stops",
    "stop_never": "spendguard._strategies.loop.stops",
    "stop_when": "spendguard._strategies.loop.stops",
    "stop_when_stalled": "spendguard._strategies.loop.stops",
    "stop_when_unaffordable": "spendguard._strategies.loop.stops",
    # GPU sizing and self-hosting break-even
    "size_model": "spendguard._sizing",
    "breakeven": "spendguard._sizing",
    "SizingResult": "spendguard._sizing",
    "GpuOption": "spendguard._sizing",
    "BreakEven": "spendguard._sizing",
    # plan before fan-out, cache ordering
    "plan": "spendguard._strategies.plan",
    "Plan": "spendguard._strategies.plan",
    "PlanResult": "spendguard._strategies.plan",
    "order_for_cache": "spendguard._caching.order",
    "CacheOrder": "spendguard._caching.order",
    "OrderedRequest": "spendguard._caching.order",
    "cache_stats": "spendguard._caching.order",
    "CacheStats": "spendguard._caching.order",
    # spend logs for finance
    "export_spend": "spendguard._reporting.export",
    "validate_focus": "spendguard._reporting.export",
    "FocusProblem": "spendguard._reporting.export",
    "report_spend": "spendguard._reporting.report",
    "reconcile_spend": "spendguard._reporting.reconcile",
    # deferrable work through the batch APIs
    "BatchJob": "spendguard._strategies.batch",
    "BatchLimits": "spendguard._strategies.batch",
    "BatchRequest": "spendguard._strategies.batch",
    "BatchResult": "spendguard._strategies.batch",
    "BatchRun": "spendguard._strategies.batch",
    "Deferred": "spendguard._strategies.batch",
    "abatch": "spendguard._strategies.batch",
    "acancel_batch": "spendguard._strategies.batch",
    "aresume_batches": "spendguard._strategies.batch",
    "batch": "spendguard._strategies.batch",
    "batch_jobs": "spendguard._strategies.batch",
    "cancel_batch": "spendguard._strategies.batch",
    "reopen_batches": "spendguard._strategies.batch",
    "resume_batches": "spendguard._strategies.batch",
    "BatchRequestFailed": "spendguard._core.errors",
    # errors
    "BudgetConfigError": "spendguard._core.errors",
    "BudgetExceeded": "spendguard._core.errors",
    "ConfigError": "spendguard._core.errors",
    "LedgerError": "spendguard._core.errors",
    "LedgerReset": "spendguard._core.errors",
    "LedgerUnavailable": "spendguard._core.errors",
    "PriceFileError": "spendguard._core.errors",
    "ProviderResponseError": "spendguard._core.errors",
    "SpendguardError": "spendguard._core.errors",
    "TokenizerError": "spendguard._core.errors",
    "UnknownModelError": "spendguard._core.errors",
    "UnsupportedEndpointError": "spendguard._core.errors",
}

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    # BEGIN generated by tools/public_api.py from _LAZY: do not edit by hand
    from spendguard._adoption.install import install as install
    from spendguard._adoption.install import uninstall as uninstall
    from spendguard._budget.alerts import Alert as Alert
    from spendguard._budget.alerts import Webhook as Webhook
    from spendguard._budget.alerts import check_alerts as check_alerts
    from spendguard._budget.alerts import flush_alerts as flush_alerts
    from spendguard._budget.budget import Budget as Budget
    from spendguard._budget.degrade import Degrade as Degrade
    from spendguard._budget.events import CallEvent as CallEvent
    from spendguard._budget.events import subscribe as subscribe
    from spendguard._budget.events import unsubscribe as unsubscribe
    from spendguard._budget.ledger import SpendRecord as SpendRecord
    from spendguard._budget.ledger import open_ledger as open_ledger
    from spendguard._budget.ledger.drain import drain as drain_ledger  # noqa: F401 - public under another name
    from spendguard._budget.runaway import RunawayRules as RunawayRules
    from spendguard._budget.runaway import RunawayTrip as RunawayTrip
    from spendguard._budget.runaway import lift_runaway as lift_runaway
    from spendguard._budget.scopes import tags as tags
    from spendguard._budget.thresholds import CallOverrun as CallOverrun
    from spendguard._budget.thresholds import ThresholdCrossed as ThresholdCrossed
    from spendguard._caching.order import CacheOrder as CacheOrder
    from spendguard._caching.order import CacheStats as CacheStats
    from spendguard._caching.order import OrderedRequest as OrderedRequest
    from spendguard._caching.order import cache_stats as cache_stats
    from spendguard._caching.order import order_for_cache as order_for_cache
    from spendguard._core.errors import BatchRequestFailed as BatchRequestFailed
    from spendguard._core.errors import BudgetConfigError as BudgetConfigError
    from spendguard._core.errors import BudgetExceeded as BudgetExceeded
    from spendguard._core.errors import BudgetWarning as BudgetWarning
    from spendguard._core.errors import CascadeFailed as CascadeFailed
    from spendguard._core.errors import ConfigError as ConfigError
    from spendguard._core.errors import LedgerError as LedgerError
    from spendguard._core.errors import LedgerReset as LedgerReset
    from spendguard._core.errors import LedgerUnavailable as LedgerUnavailable
    from spendguard._core.errors import PriceFileError as PriceFileError
    from spendguard._core.errors import ProviderResponseError as ProviderResponseError
    from spendguard._core.errors import RunawayRefused as RunawayRefused
    from spendguard._core.errors import SpendguardError as SpendguardError
    from spendguard._core.errors import TokenizerError as TokenizerError
    from spendguard._core.errors import UnknownModelError as UnknownModelError
    from spendguard._core.errors import UnsupportedEndpointError as UnsupportedEndpointError
    from spendguard._core.money import format_usd as format_usd
    from spendguard._costing.cost import Cost as Cost
    from spendguard._costing.cost import cost as cost
    from spendguard._costing.endpoints import Endpoint as Endpoint
    from spendguard._costing.prices import GenaiPricesCatalog as GenaiPricesCatalog
    from spendguard._costing.prices import ModelPrice as ModelPrice
    from spendguard._costing.prices import PriceTable as PriceTable
    from spendguard._costing.prices import load_price_file as load_price_file
    from spendguard._costing.prices import price as price
    from spendguard._costing.prices import register_prices as register_prices
    from spendguard._costing.prices.check import check_prices as check_prices
    from spendguard._costing.prices.selfhosted import SelfHosted as SelfHosted
    from spendguard._costing.tokens import TokenCount as TokenCount
    from spendguard._costing.tokens import acount_tokens_exact as acount_tokens_exact
    from spendguard._costing.tokens import count_request_tokens as count_request_tokens
    from spendguard._costing.tokens import count_tokens as count_tokens
    from spendguard._costing.tokens import count_tokens_exact as count_tokens_exact
    from spendguard._costing.usage import Usage as Usage
    from spendguard._costing.usage import usage_from as usage_from
    from spendguard._guard.clients import wrap as wrap
    from spendguard._providers import stream_reader as stream_reader
    from spendguard._providers.anthropic.dropin import Anthropic as Anthropic
    from spendguard._providers.anthropic.dropin import AnthropicBedrock as AnthropicBedrock
    from spendguard._providers.anthropic.dropin import AnthropicVertex as AnthropicVertex
    from spendguard._providers.anthropic.dropin import AsyncAnthropic as AsyncAnthropic
    from spendguard._providers.anthropic.dropin import (
        AsyncAnthropicBedrock as AsyncAnthropicBedrock,
    )
    from spendguard._providers.anthropic.dropin import AsyncAnthropicVertex as AsyncAnthropicVertex
    from spendguard._providers.gemini.dropin import Gemini as Gemini
    from spendguard._providers.openai.dropin import AsyncAzureOpenAI as AsyncAzureOpenAI
    from spendguard._providers.openai.dropin import AsyncOpenAI as AsyncOpenAI
    from spendguard._providers.openai.dropin import AzureDeployment as AzureDeployment
    from spendguard._providers.openai.dropin import AzureOpenAI as AzureOpenAI
    from spendguard._providers.openai.dropin import OpenAI as OpenAI
    from spendguard._reporting.export import FocusProblem as FocusProblem
    from spendguard._reporting.export import export_spend as export_spend
    from spendguard._reporting.export import validate_focus as validate_focus
    from spendguard._reporting.reconcile import reconcile_spend as reconcile_spend
    from spendguard._reporting.report import render_text as render_report_text  # noqa: F401 - public under another name
    from spendguard._reporting.report import report_spend as report_spend
    from spendguard._reporting.report import write_html as write_report_html  # noqa: F401 - public under another name
    from spendguard._sizing import BreakEven as BreakEven
    from spendguard._sizing import GpuOption as GpuOption
    from spendguard._sizing import SizingResult as SizingResult
    from spendguard._sizing import breakeven as breakeven
    from spendguard._sizing import size_model as size_model
    from spendguard._strategies.batch import BatchJob as BatchJob
    from spendguard._strategies.batch import BatchLimits as BatchLimits
    from spendguard._strategies.batch import BatchRequest as BatchRequest
    from spendguard._strategies.batch import BatchResult as BatchResult
    from spendguard._strategies.batch import BatchRun as BatchRun
    from spendguard._strategies.batch import Deferred as Deferred
    from spendguard._strategies.batch import Polling as Polling
    from spendguard._strategies.batch import abatch as abatch
    from spendguard._strategies.batch import acancel_batch as acancel_batch
    from spendguard._strategies.batch import aresume_batches as aresume_batches
    from spendguard._strategies.batch import batch as batch
    from spendguard._strategies.batch import batch_jobs as batch_jobs
    from spendguard._strategies.batch import batch_results as batch_results
    from spendguard._strategies.batch import cancel_batch as cancel_batch
    from spendguard._strategies.batch import reopen_batches as reopen_batches
    from spendguard._strategies.batch import resume_batches as resume_batches
    from spendguard._strategies.cascade import AttemptOutcome as AttemptOutcome
    from spendguard._strategies.cascade import CascadeAttempt as CascadeAttempt
    from spendguard._strategies.cascade import CascadeResult as CascadeResult
    from spendguard._strategies.cascade import acascade as acascade
    from spendguard._strategies.cascade import cascade as cascade
    from spendguard._strategies.cascade.checks import Candidate as Candidate
    from spendguard._strategies.cascade.checks import Check as Check
    from spendguard._strategies.cascade.checks import Verdict as Verdict
    from spendguard._strategies.cascade.checks import always_pass as always_pass
    from spendguard._strategies.cascade.checks import check_all as check_all
    from spendguard._strategies.cascade.checks import check_any as check_any
    from spendguard._strategies.cascade.checks import check_judge as check_judge
    from spendguard._strategies.cascade.checks import check_matches as check_matches
    from spendguard._strategies.cascade.checks import check_parses as check_parses
    from spendguard._strategies.cascade.checks import check_with as check_with
    from spendguard._strategies.cascade.learning import Learning as Learning
    from spendguard._strategies.cascade.learning import LedgerStats as LedgerStats
    from spendguard._strategies.cascade.learning import MemoryStats as MemoryStats
    from spendguard._strategies.cascade.learning import Savings as Savings
    from spendguard._strategies.cascade.learning import TierStats as TierStats
    from spendguard._strategies.loop import LoopGuard as LoopGuard
    from spendguard._strategies.loop import loop as loop
    from spendguard._strategies.loop.novelty import exact as exact_finding  # noqa: F401 - public under another name
    from spendguard._strategies.loop.novelty import normalise as normalise_finding  # noqa: F401 - public under another name
    from spendguard._strategies.loop.stops import LoopState as LoopState
    from spendguard._strategies.loop.stops import StopReason as StopReason
    from spendguard._strategies.loop.stops import project_next_usd as project_next_usd
    from spendguard._strategies.loop.stops import stop_after_seconds as stop_after_seconds
    from spendguard._strategies.loop.stops import stop_after_steps as stop_after_steps
    from spendguard._strategies.loop.stops import stop_after_usd as stop_after_usd
    from spendguard._strategies.loop.stops import stop_all as stop_all
    from spendguard._strategies.loop.stops import stop_any as stop_any
    from spendguard._strategies.loop.stops import stop_never as stop_never
    from spendguard._strategies.loop.stops import stop_when as stop_when
    from spendguard._strategies.loop.stops import stop_when_stalled as stop_when_stalled
    from spendguard._strategies.loop.stops import stop_when_unaffordable as stop_when_unaffordable
    from spendguard._strategies.plan import Plan as Plan
    from spendguard._strategies.plan import PlanResult as PlanResult
    from spendguard._strategies.plan import plan as plan
    # END generated

# Built from _LAZY, the one list (see the module docstring).
__all__ = sorted(["__version__", *_LAZY])  # noqa: PLE0605


def __getattr__(name: str) -> Any:
    where = _LAZY.get(name)
    if where is None:
        raise AttributeError(f"module 'spendguard' has no attribute {name!r}")
    module_name, _, attribute = where.partition(":")
    value = getattr(importlib.import_module(module_name), attribute or name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
