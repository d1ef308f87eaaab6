"""Degrade before refusing: past a share of the budget, route calls to cheaper models.

``Budget(..., degrade=Degrade({"gpt-4o": ["gpt-4o-mini"]}, at=0.8))``: once the budget has
committed ``at`` of its limit — or sooner, when the requested model's worst case no longer
fits what is left — a call for a listed model goes to the first of its alternatives whose
worst case fits, reserved at that model's price. The ledger record names the model that was
used; the tag ``spendguard.requested_model`` names the one the caller asked for. When even
the last alternative cannot fit, the call is refused as usual (``BudgetExceeded``). Models
the user did not list are never substituted, and substitutes stay on the same provider and
endpoint: only the request's ``model`` changes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation

from spendguard._core.errors import BudgetConfigError

__all__ = ["REQUESTED_MODEL_TAG", "Degrade"]

REQUESTED_MODEL_TAG = "spendguard.requested_model"


@dataclass(frozen=True, slots=True)
class Degrade:
    """Cheaper models to fall back to, per requested model, once ``at`` of the limit is used.

    ``models`` maps a requested model to its alternatives, most preferred first (usually
    most capable first, cheapest last). ``at`` is a share of the budget's limit in (0, 1].
    """

    models: Mapping[str, Sequence[str]]
    at: Decimal | float | str = Decimal("0.8")
    _alternatives: Mapping[str, tuple[str, ...]] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.models, Mapping) or not self.models:
            raise BudgetConfigError("degrade.models: give a mapping of requested model to "
                                    "cheaper alternatives, e.g. {'gpt-4o': ['gpt-4o-mini']}",
                                    field="models")
        alternatives: dict[str, tuple[str, ...]] = {}
        for model, cheaper in self.models.items():
            if (not isinstance(model, str) or isinstance(cheaper, str)
                    or not isinstance(cheaper, Sequence) or not cheaper
                    or not all(isinstance(m, str) and m for m in cheaper)):
                raise BudgetConfigError(f"degrade.models[{model!r}]: expected a non-empty list "
                                        f"of model names, got {cheaper!r}", field="models")
            if model in cheaper:
                raise BudgetConfigError(f"degrade.models[{model!r}]: a model cannot be its own "
                                        f"alternative", field="models")
            alternatives[model] = tuple(cheaper)
        object.__setattr__(self, "_alternatives", alternatives)
        try:
            at = Decimal(repr(self.at) if isinstance(self.at, float) else self.at)
        except (TypeError, InvalidOperation):
            at = Decimal("NaN")
        if isinstance(self.at, bool) or not at.is_finite() or not 0 < at <= 1:
            raise BudgetConfigError(f"degrade.at: {self.at!r} must be a share of the limit in "
                                    f"(0, 1], e.g. 0.8", field="at")
        object.__setattr__(self, "at", at)

    def alternatives(self, model: str) -> tuple[str, ...]:
        """The cheaper models listed for ``model``, most preferred first (empty: none)."""
        return self._alternatives.get(model, ())

    def due(self, *, committed_usd: Decimal, limit_usd: Decimal) -> bool:
        """Whether the budget is past ``at`` of its limit."""
        assert isinstance(self.at, Decimal)
        return limit_usd <= 0 or committed_usd >= limit_usd * self.at
