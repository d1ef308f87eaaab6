"""spendguard: keep LLM spending on budget.

The public API is flat and small. Names are loaded on first use so that ``import spendguard``
stays fast and never imports the ``openai`` or ``anthropic`` SDKs (they load only when a guarded
client is built).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from spendguard.errors import (
    BudgetConfigError,
    BudgetExceeded,
    ConfigError,
    LedgerError,
    LedgerUnavailable,
    PriceFileError,
    ProviderResponseError,
    SpendguardError,
    TokenizerError,
    UnknownModelError,
    UnsupportedEndpointError,
)

__version__ = "0.1.0"

# public name -> module that defines it; resolved lazily by __getattr__ below.
_LAZY: dict[str, str] = {
    # prices, usage and cost
    "Cost": "spendguard.costing",
    "ModelPrice": "spendguard.prices",
    "PriceTable": "spendguard.prices",
    "Usage": "spendguard.usage",
    "cost": "spendguard.costing",
    "price": "spendguard.prices",
    "register_prices": "spendguard.prices",
    "usage_from": "spendguard.usage",
    # offline token counting
    "TokenCount": "spendguard.tokens",
    "count_tokens": "spendguard.tokens",
    "count_tokens_exact": "spendguard.tokens",
    # guarded clients
    "OpenAI": "spendguard.openai_clients",
    "AsyncOpenAI": "spendguard.openai_clients",
    "Anthropic": "spendguard.anthropic_clients",
    "AsyncAnthropic": "spendguard.anthropic_clients",
    "AzureOpenAI": "spendguard.openai_clients",
    "AsyncAzureOpenAI": "spendguard.openai_clients",
    "AzureDeployment": "spendguard.openai_clients",
    "AnthropicBedrock": "spendguard.anthropic_clients",
    "AsyncAnthropicBedrock": "spendguard.anthropic_clients",
    "AnthropicVertex": "spendguard.anthropic_clients",
    "AsyncAnthropicVertex": "spendguard.anthropic_clients",
    "SelfHosted": "spendguard.selfhosted",
    "wrap": "spendguard.clients",
    "install": "spendguard.autoguard",
    "uninstall": "spendguard.autoguard",
    # budgets, scopes and the ledger
    "Budget": "spendguard.budget",
    "BudgetWarning": "spendguard.errors",
    "SpendRecord": "spendguard.ledger",
    "open_ledger": "spendguard.ledger",
    "tags": "spendguard.scopes",
    # runaway detection and degrading before refusing
    "Degrade": "spendguard.degrade",
    "RunawayRefused": "spendguard.errors",
    "RunawayRules": "spendguard.runaway",
    "RunawayTrip": "spendguard.runaway",
    "lift_runaway": "spendguard.runaway",
    # cascade and loop guard
    "cascade": "spendguard.cascading",
    "acascade": "spendguard.cascading",
    "CascadeResult": "spendguard.cascading",
    "CascadeAttempt": "spendguard.cascading",
    "AttemptOutcome": "spendguard.cascading",
    "CascadeFailed": "spendguard.errors",
    "Learning": "spendguard.cascade_learning",
    "MemoryStats": "spendguard.cascade_learning",
    "LedgerStats": "spendguard.cascade_learning",
    "Candidate": "spendguard.checks",
    "Check": "spendguard.checks",
    "Verdict": "spendguard.checks",
    "always_pass": "spendguard.checks",
    "check_all": "spendguard.checks",
    "check_any": "spendguard.checks",
    "check_judge": "spendguard.checks",
    "check_matches": "spendguard.checks",
    "check_parses": "spendguard.checks",
    "check_with": "spendguard.checks",
    "loop": "spendguard.loop_guard",
    "LoopGuard": "spendguard.loop_guard",
    "StopReason": "spendguard.stops",
    "stop_after_seconds": "spendguard.stops",
    "stop_after_steps": "spendguard.stops",
    "stop_after_usd": "spendguard.stops",
    "stop_all": "spendguard.stops",
    "stop_any": "spendguard.stops",
    "stop_never": "spendguard.stops",
    "stop_when": "spendguard.stops",
    "stop_when_stalled": "spendguard.stops",
    "stop_when_unaffordable": "spendguard.stops",
    # GPU sizing and self-hosting break-even
    "size_model": "spendguard.sizing",
    "breakeven": "spendguard.sizing",
    "SizingResult": "spendguard.sizing",
    "GpuOption": "spendguard.sizing",
    "BreakEven": "spendguard.sizing",
    # plan before fan-out, cache ordering
    "plan": "spendguard.planning",
    "Plan": "spendguard.planning",
    "PlanResult": "spendguard.planning",
    "order_for_cache": "spendguard.caching",
    "CacheOrder": "spendguard.caching",
    "OrderedRequest": "spendguard.caching",
    "cache_stats": "spendguard.caching",
    "CacheStats": "spendguard.caching",
    # spend logs for finance
    "export_spend": "spendguard.export",
    "validate_focus": "spendguard.export",
    "report_spend": "spendguard.report",
    "reconcile_spend": "spendguard.reconcile",
    # deferrable work through the batch APIs
    "BatchJob": "spendguard.batching",
    "BatchLimits": "spendguard.batching",
    "BatchRequest": "spendguard.batching",
    "BatchResult": "spendguard.batching",
    "BatchRun": "spendguard.batching",
    "Deferred": "spendguard.batching",
    "abatch": "spendguard.batching",
    "acancel_batch": "spendguard.batching",
    "aresume_batches": "spendguard.batching",
    "batch": "spendguard.batching",
    "batch_jobs": "spendguard.batching",
    "cancel_batch": "spendguard.batching",
    "reopen_batches": "spendguard.batching",
    "resume_batches": "spendguard.batching",
    "BatchRequestFailed": "spendguard.errors",
}

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from spendguard.anthropic_clients import Anthropic as Anthropic
    from spendguard.anthropic_clients import AnthropicBedrock as AnthropicBedrock
    from spendguard.anthropic_clients import AnthropicVertex as AnthropicVertex
    from spendguard.anthropic_clients import AsyncAnthropic as AsyncAnthropic
    from spendguard.anthropic_clients import AsyncAnthropicBedrock as AsyncAnthropicBedrock
    from spendguard.anthropic_clients import AsyncAnthropicVertex as AsyncAnthropicVertex
    from spendguard.autoguard import install as install
    from spendguard.autoguard import uninstall as uninstall
    from spendguard.batching import BatchJob as BatchJob
    from spendguard.batching import BatchLimits as BatchLimits
    from spendguard.batching import BatchRequest as BatchRequest
    from spendguard.batching import BatchResult as BatchResult
    from spendguard.batching import BatchRun as BatchRun
    from spendguard.batching import Deferred as Deferred
    from spendguard.batching import abatch as abatch
    from spendguard.batching import acancel_batch as acancel_batch
    from spendguard.batching import aresume_batches as aresume_batches
    from spendguard.batching import batch as batch
    from spendguard.batching import batch_jobs as batch_jobs
    from spendguard.batching import cancel_batch as cancel_batch
    from spendguard.batching import reopen_batches as reopen_batches
    from spendguard.batching import resume_batches as resume_batches
    from spendguard.budget import Budget as Budget
    from spendguard.caching import CacheOrder as CacheOrder
    from spendguard.caching import CacheStats as CacheStats
    from spendguard.caching import OrderedRequest as OrderedRequest
    from spendguard.caching import cache_stats as cache_stats
    from spendguard.caching import order_for_cache as order_for_cache
    from spendguard.cascade_learning import Learning as Learning
    from spendguard.cascade_learning import LedgerStats as LedgerStats
    from spendguard.cascade_learning import MemoryStats as MemoryStats
    from spendguard.cascading import AttemptOutcome as AttemptOutcome
    from spendguard.cascading import CascadeAttempt as CascadeAttempt
    from spendguard.cascading import CascadeResult as CascadeResult
    from spendguard.cascading import acascade as acascade
    from spendguard.cascading import cascade as cascade
    from spendguard.checks import Candidate as Candidate
    from spendguard.checks import Check as Check
    from spendguard.checks import Verdict as Verdict
    from spendguard.checks import always_pass as always_pass
    from spendguard.checks import check_all as check_all
    from spendguard.checks import check_any as check_any
    from spendguard.checks import check_judge as check_judge
    from spendguard.checks import check_matches as check_matches
    from spendguard.checks import check_parses as check_parses
    from spendguard.checks import check_with as check_with
    from spendguard.clients import wrap as wrap
    from spendguard.costing import Cost as Cost
    from spendguard.costing import cost as cost
    from spendguard.degrade import Degrade as Degrade
    from spendguard.errors import BatchRequestFailed as BatchRequestFailed
    from spendguard.errors import BudgetWarning as BudgetWarning
    from spendguard.errors import CascadeFailed as CascadeFailed
    from spendguard.errors import RunawayRefused as RunawayRefused
    from spendguard.export import export_spend as export_spend
    from spendguard.export import validate_focus as validate_focus
    from spendguard.ledger import SpendRecord as SpendRecord
    from spendguard.ledger import open_ledger as open_ledger
    from spendguard.loop_guard import LoopGuard as LoopGuard
    from spendguard.loop_guard import loop as loop
    from spendguard.openai_clients import AsyncAzureOpenAI as AsyncAzureOpenAI
    from spendguard.openai_clients import AsyncOpenAI as AsyncOpenAI
    from spendguard.openai_clients import AzureDeployment as AzureDeployment
    from spendguard.openai_clients import AzureOpenAI as AzureOpenAI
    from spendguard.openai_clients import OpenAI as OpenAI
    from spendguard.planning import Plan as Plan
    from spendguard.planning import PlanResult as PlanResult
    from spendguard.planning import plan as plan
    from spendguard.prices import ModelPrice as ModelPrice
    from spendguard.prices import PriceTable as PriceTable
    from spendguard.prices import price as price
    from spendguard.prices import register_prices as register_prices
    from spendguard.reconcile import reconcile_spend as reconcile_spend
    from spendguard.report import report_spend as report_spend
    from spendguard.runaway import RunawayRules as RunawayRules
    from spendguard.runaway import RunawayTrip as RunawayTrip
    from spendguard.runaway import lift_runaway as lift_runaway
    from spendguard.scopes import tags as tags
    from spendguard.selfhosted import SelfHosted as SelfHosted
    from spendguard.sizing import BreakEven as BreakEven
    from spendguard.sizing import GpuOption as GpuOption
    from spendguard.sizing import SizingResult as SizingResult
    from spendguard.sizing import breakeven as breakeven
    from spendguard.sizing import size_model as size_model
    from spendguard.stops import StopReason as StopReason
    from spendguard.stops import stop_after_seconds as stop_after_seconds
    from spendguard.stops import stop_after_steps as stop_after_steps
    from spendguard.stops import stop_after_usd as stop_after_usd
    from spendguard.stops import stop_all as stop_all
    from spendguard.stops import stop_any as stop_any
    from spendguard.stops import stop_never as stop_never
    from spendguard.stops import stop_when as stop_when
    from spendguard.stops import stop_when_stalled as stop_when_stalled
    from spendguard.stops import stop_when_unaffordable as stop_when_unaffordable
    from spendguard.tokens import TokenCount as TokenCount
    from spendguard.tokens import count_tokens as count_tokens
    from spendguard.tokens import count_tokens_exact as count_tokens_exact
    from spendguard.usage import Usage as Usage
    from spendguard.usage import usage_from as usage_from

__all__ = [
    "Anthropic",
    "AnthropicBedrock",
    "AnthropicVertex",
    "AsyncAnthropic",
    "AsyncAnthropicBedrock",
    "AsyncAnthropicVertex",
    "AsyncAzureOpenAI",
    "AsyncOpenAI",
    "AttemptOutcome",
    "AzureDeployment",
    "AzureOpenAI",
    "BatchJob",
    "BatchLimits",
    "BatchRequest",
    "BatchRequestFailed",
    "BatchResult",
    "BatchRun",
    "BreakEven",
    "Budget",
    "BudgetConfigError",
    "BudgetExceeded",
    "BudgetWarning",
    "CacheOrder",
    "CacheStats",
    "Candidate",
    "CascadeAttempt",
    "CascadeFailed",
    "CascadeResult",
    "Check",
    "ConfigError",
    "Cost",
    "Deferred",
    "Degrade",
    "GpuOption",
    "Learning",
    "LedgerError",
    "LedgerStats",
    "LedgerUnavailable",
    "LoopGuard",
    "MemoryStats",
    "ModelPrice",
    "OpenAI",
    "OrderedRequest",
    "Plan",
    "PlanResult",
    "PriceFileError",
    "PriceTable",
    "ProviderResponseError",
    "RunawayRefused",
    "RunawayRules",
    "RunawayTrip",
    "SelfHosted",
    "SizingResult",
    "SpendRecord",
    "SpendguardError",
    "StopReason",
    "TokenCount",
    "TokenizerError",
    "UnknownModelError",
    "UnsupportedEndpointError",
    "Usage",
    "Verdict",
    "__version__",
    "abatch",
    "acancel_batch",
    "acascade",
    "always_pass",
    "aresume_batches",
    "batch",
    "batch_jobs",
    "breakeven",
    "cache_stats",
    "cancel_batch",
    "cascade",
    "check_all",
    "check_any",
    "check_judge",
    "check_matches",
    "check_parses",
    "check_with",
    "cost",
    "count_tokens",
    "count_tokens_exact",
    "export_spend",
    "install",
    "lift_runaway",
    "loop",
    "open_ledger",
    "order_for_cache",
    "plan",
    "price",
    "reconcile_spend",
    "register_prices",
    "reopen_batches",
    "report_spend",
    "resume_batches",
    "size_model",
    "stop_after_seconds",
    "stop_after_steps",
    "stop_after_usd",
    "stop_all",
    "stop_any",
    "stop_never",
    "stop_when",
    "stop_when_stalled",
    "stop_when_unaffordable",
    "tags",
    "uninstall",
    "usage_from",
    "validate_focus",
    "wrap",
]


def __getattr__(name: str) -> Any:
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module 'spendguard' has no attribute {name!r}")
    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
