"""The FOCUS columns spendguard writes: FOCUS 1.2 Cost and Usage, plus 1.3's provider columns.

Each column says what it holds (its FOCUS data type), whether it may be null, and where it
comes from in the spec: the 21 columns 1.2 makes mandatory, the conditional ones that apply to
token billing, three recommended ones, ``ServiceProviderName`` / ``HostProviderName`` from 1.3
(which deprecates ``ProviderName`` / ``PublisherName``; both are kept so 1.2 and 1.3 readers
agree), and spendguard's own ``x_`` columns. The validator checks an export against this list.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = [
    "CHARGE_CATEGORIES",
    "CHARGE_FREQUENCIES",
    "FOCUS_COLUMNS",
    "FOCUS_COLUMN_NAMES",
    "PRICING_CATEGORIES",
    "SERVICE_CATEGORIES",
    "FocusColumn",
]

Kind = Literal["decimal", "datetime", "string", "json"]
Level = Literal["mandatory", "conditional", "recommended", "1.3", "custom"]


@dataclass(frozen=True, slots=True)
class FocusColumn:
    """One column: its FOCUS name, type, whether null is allowed, and what spendguard puts in."""

    name: str
    kind: Kind
    nullable: bool
    level: Level
    holds: str


def _c(name: str, kind: Kind, nullable: bool, level: Level, holds: str) -> FocusColumn:
    return FocusColumn(name, kind, nullable, level, holds)


FOCUS_COLUMNS: tuple[FocusColumn, ...] = (
    _c("BilledCost", "decimal", False, "mandatory", "what the call cost (USD), as the ledger "
       "charged it; a call's rows add up to its ledger amount exactly"),
    _c("BillingAccountId", "string", False, "mandatory", "the provider account "
       "(--account openai=org-...; default: the provider's name)"),
    _c("BillingAccountName", "string", True, "mandatory", "null (spendguard does not know it)"),
    _c("BillingCurrency", "string", False, "mandatory", "USD"),
    _c("BillingPeriodEnd", "datetime", False, "mandatory", "first instant of the next month"),
    _c("BillingPeriodStart", "datetime", False, "mandatory", "first instant of the month"),
    _c("ChargeCategory", "string", False, "mandatory", "Usage; Adjustment for corrections"),
    _c("ChargeClass", "string", True, "mandatory", "null: a correction is booked in the "
       "period it was recorded"),
    _c("ChargeDescription", "string", True, "mandatory", "model and token kind, or the "
       "adjustment's note"),
    _c("ChargePeriodEnd", "datetime", False, "mandatory", "end of the hour (per call) or of "
       "the day (aggregated), exclusive"),
    _c("ChargePeriodStart", "datetime", False, "mandatory", "start of the hour of the call, "
       "or of the day"),
    _c("ContractedCost", "decimal", False, "mandatory", "= ListCost (no negotiated rates)"),
    _c("EffectiveCost", "decimal", False, "mandatory", "= BilledCost (nothing prepaid to "
       "amortise)"),
    _c("InvoiceIssuerName", "string", False, "mandatory", "OpenAI / Anthropic"),
    _c("ListCost", "decimal", False, "mandatory", "ListUnitPrice x PricingQuantity; the "
       "amount itself for adjustments"),
    _c("PricingQuantity", "decimal", True, "mandatory", "tokens / 1,000,000 (1 for an "
       "unpriced call); null for adjustments"),
    _c("PricingUnit", "string", True, "mandatory", "1000000 Tokens (Requests for an unpriced "
       "call)"),
    _c("ProviderName", "string", False, "mandatory", "OpenAI / Anthropic (deprecated in 1.3)"),
    _c("PublisherName", "string", False, "mandatory", "OpenAI / Anthropic (deprecated in 1.3)"),
    _c("ServiceCategory", "string", False, "mandatory", "AI and Machine Learning"),
    _c("ServiceName", "string", False, "mandatory", "OpenAI API / Claude API"),
    _c("ConsumedQuantity", "decimal", True, "conditional", "tokens of this kind"),
    _c("ConsumedUnit", "string", True, "conditional", "Tokens"),
    _c("ContractedUnitPrice", "decimal", True, "conditional", "= ListUnitPrice"),
    _c("ListUnitPrice", "decimal", True, "conditional", "USD per million tokens of this kind "
       "(today's price table, batch rate for batch calls, long-context tier applied)"),
    _c("PricingCategory", "string", True, "conditional", "Standard; null for adjustments"),
    _c("ResourceId", "string", True, "conditional", "the innermost budget scope of the call"),
    _c("ResourceName", "string", True, "conditional", "= ResourceId"),
    _c("ResourceType", "string", True, "conditional", "Budget Scope"),
    _c("SkuId", "string", True, "conditional", "the model id"),
    _c("SkuMeter", "string", True, "conditional", "Input Tokens, Cached Input Tokens, Cache "
       "Write Tokens (5m), Output Tokens, ..."),
    _c("SkuPriceDetails", "json", True, "conditional", "token kind, batch, long-context tier"),
    _c("SkuPriceId", "string", True, "conditional", "model:kind[:batch][:above-N] (one price "
       "point)"),
    _c("Tags", "json", True, "conditional", "the caller's tags (not spendguard.*), plus "
       "spendguard/scope (innermost scope) and spendguard/scope/<name>: true for every scope "
       "charged"),
    _c("ChargeFrequency", "string", True, "recommended", "Usage-Based; One-Time for "
       "adjustments"),
    _c("InvoiceId", "string", True, "recommended", "null (not matched to an invoice)"),
    _c("ServiceSubcategory", "string", True, "recommended", "Generative AI"),
    _c("HostProviderName", "string", False, "1.3", "the provider (direct API use)"),
    _c("ServiceProviderName", "string", False, "1.3", "OpenAI / Anthropic"),
    _c("x_CallCount", "decimal", False, "custom", "calls in the row (1 per call, 0 for an "
       "adjustment)"),
    _c("x_CallId", "string", True, "custom", "the ledger id of the call (per call only)"),
    _c("x_CallTime", "datetime", True, "custom", "when the call started (per call only)"),
    _c("x_Endpoint", "string", True, "custom", "the API the call went to (chat.completions, "
       "responses, messages, ...)"),
    _c("x_Note", "string", True, "custom", "why a call was recovered or adjusted"),
    _c("x_PriceTableVersion", "string", True, "custom", "the price table that priced the call"),
    _c("x_RequestId", "string", True, "custom", "the provider's request id (per call only)"),
    _c("x_Status", "string", True, "custom", "ok, recovered, stream_broken, adjustment, ..."),
    _c("x_TokenKind", "string", True, "custom", "input, cache_read, cache_write_<ttl>, output"),
    _c("x_UsageEstimated", "string", True, "custom", "true when the tokens were not reported "
       "by the provider"),
)
"""The columns of a FOCUS export, in the order they are written."""

FOCUS_COLUMN_NAMES: tuple[str, ...] = tuple(column.name for column in FOCUS_COLUMNS)

CHARGE_CATEGORIES = frozenset({"Usage", "Purchase", "Tax", "Credit", "Adjustment"})
CHARGE_FREQUENCIES = frozenset({"One-Time", "Recurring", "Usage-Based"})
PRICING_CATEGORIES = frozenset({"Standard", "Dynamic", "Committed", "Other"})
SERVICE_CATEGORIES = frozenset({
    "AI and Machine Learning", "Analytics", "Business Applications", "Compute", "Databases",
    "Developer Tools", "Multicloud", "Identity", "Integration", "Internet of Things",
    "Management and Governance", "Media", "Migration", "Mobile", "Networking", "Security",
    "Storage", "Web", "Other",
})
