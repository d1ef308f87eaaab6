"""What a deferred request comes back as: the SDK object, its route, its cost and its savings."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any

from spendguard._core.errors import BatchRequestFailed, SpendguardError
from spendguard._core.money import ZERO, format_usd
from spendguard._costing.cost import cost
from spendguard._costing.prices import PriceTable
from spendguard._costing.usage import Usage

__all__ = ["BatchResult", "response_json", "standard_usd"]


@dataclass(frozen=True, slots=True)
class BatchResult:
    """One request's result, in the order the requests were given.

    ``route`` is ``"batch"`` (answered by the provider's batch API) or ``"fallback"`` (an
    ordinary call at full price, made because the batch would miss the deadline).
    ``response`` is the object the ordinary call returns (``ChatCompletion``, ``Message``...);
    None unless ``status`` is ``"succeeded"``. Money is USD.
    """

    index: int
    custom_id: str
    status: str
    """``succeeded``, ``errored``, ``expired``, ``cancelled`` or ``refused`` (by the budget)."""
    route: str
    model: str
    job_id: str
    response: Any = field(default=None, repr=False)
    error: Mapping[str, Any] | None = None
    usage: Usage | None = None
    cost_usd: Decimal = ZERO
    """What the provider billed for this request (both attempts, if a rescued request was
    also finished by its batch)."""
    standard_usd: Decimal = ZERO
    """The same tokens at ordinary (non-batch) prices: what the request would have cost."""

    @property
    def ok(self) -> bool:
        """Whether a response arrived."""
        return self.status == "succeeded"

    @property
    def savings_usd(self) -> Decimal:
        """Ordinary price minus what was paid (zero for a fallback, which paid full price)."""
        return self.standard_usd - self.cost_usd

    def unwrap(self) -> Any:
        """The response, or :class:`~spendguard.BatchRequestFailed` saying why there is none."""
        if self.ok:
            return self.response
        detail = ""
        if self.error:
            message = self.error.get("message") or self.error.get("error", {})
            detail = f": {message}" if message else ""
            if self.error.get("note"):  # why spendguard could not do more (e.g. rescue it)
                detail += f" ({self.error['note']})"
        raise BatchRequestFailed(
            f"deferred request {self.custom_id} ({self.model}, via {self.route}) "
            f"{self.status}{detail}", custom_id=self.custom_id, status=self.status,
            route=self.route, error=self.error)

    def line(self) -> str:
        """One readable line: ``r0-ab12  batch  succeeded  $0.000120 (saved $0.000120)``."""
        saved = f" (saved {format_usd(self.savings_usd)})" if self.savings_usd else ""
        return (f"{self.custom_id:<24} {self.route:<8} {self.status:<10} "
                f"{format_usd(self.cost_usd)}{saved}")


def standard_usd(model: str, usage: Usage | None, table: PriceTable) -> Decimal:
    """What ``usage`` costs as an ordinary call (the batch discount taken off)."""
    if usage is None:
        return ZERO
    try:
        plain = replace(usage, service_tier=None) if usage.service_tier == "batch" else usage
        return cost(model, plain, table=table).total
    except SpendguardError:
        return ZERO


def response_json(response: Any) -> dict[str, Any]:
    """An SDK response as JSON data: Stainless models (OpenAI, Anthropic) dump themselves;
    google-genai's pydantic models by their REST (camelCase) names, as the API sent them."""
    dump = getattr(response, "to_dict", None)
    if callable(dump):
        plain: dict[str, Any] = dump(mode="json")
        return plain
    dumped: dict[str, Any] = response.model_dump(mode="json", by_alias=True, exclude_none=True)
    return dumped
