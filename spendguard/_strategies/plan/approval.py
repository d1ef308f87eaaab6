"""Before a plan sends anything: does it fit what the budgets have left, and if not, who says go.

The budgets are those every call of the run is charged to: the client's own (a guarded
client's ``budget=``) and those entered with ``with budget:`` around the run, with their
parents. The plan fits when its worst case fits the tightest of them; otherwise ``approve``
decides, and without it (or on a "no") the run is refused with ``BudgetExceeded``. Approved
or not, every call is still guarded on its own when it is sent.
"""

from __future__ import annotations

import sys
from decimal import Decimal
from typing import Any, Protocol

from spendguard._budget.budget import Budget
from spendguard._budget.ledger import Ledger, open_ledger
from spendguard._budget.scopes import collect_budgets
from spendguard._core.errors import BudgetExceeded
from spendguard._core.money import format_usd

__all__ = ["PlanFigures", "client_budget", "ledger_for", "needs_approval", "refusal"]


class _Counts(Protocol):
    @property
    def requests(self) -> int: ...


class PlanFigures(Protocol):
    """What approval reads of a plan (a :class:`~spendguard._strategies.plan.model.Plan`);
    typed structurally so that the plan's model, which runs the plan, is not imported back."""

    @property
    def id(self) -> str: ...
    @property
    def totals(self) -> _Counts: ...
    @property
    def expected_usd(self) -> Decimal: ...
    @property
    def worst_usd(self) -> Decimal: ...
    @property
    def budget_left_usd(self) -> Decimal | None: ...


def client_budget(client: object) -> Budget | None:
    """The budget a guarded client was built with (None for an unguarded one)."""
    transport: Any = sys.modules.get("spendguard._guard.transport")
    guard = transport.client_guard(client) if transport is not None else None
    return guard.budget if guard is not None else None


def _tightest(client: object) -> tuple[Budget | None, Decimal | None]:
    budgets = collect_budgets(client_budget(client))
    if not budgets:
        return None, None
    left = [(budget.remaining, index) for index, budget in enumerate(budgets)]
    remaining, index = min(left)
    return budgets[index], remaining


def needs_approval(plan: PlanFigures,
                   client: object) -> tuple[Decimal | None, Budget | None]:
    """What the plan's budgets have left (its ``budget_left_usd``), and the budget its worst
    case does not fit (or None)."""
    budget, remaining = _tightest(client)
    if budget is None or remaining is None or plan.worst_usd <= remaining:
        return remaining, None
    return remaining, budget


def refusal(plan: PlanFigures, budget: Budget, *, asked: bool) -> BudgetExceeded:
    """The error that refuses a plan over budget; nothing has been sent."""
    totals = budget.totals()
    left = plan.budget_left_usd if plan.budget_left_usd is not None else budget.remaining
    over = "expected cost and worst case" if plan.expected_usd > left else "worst case"
    why = "approve() declined it" if asked else "pass approve=callable to decide instead"
    return BudgetExceeded(
        f"plan {plan.id} ({plan.totals.requests} requests): its {over} "
        f"({format_usd(plan.expected_usd)} expected, "
        f"{format_usd(plan.worst_usd)} worst) exceed what budget {budget.scope!r} "
        f"has left ({format_usd(left)}); nothing was sent ({why})",
        scope=budget.scope, limit_usd=budget.limit_usd, spent_usd=totals.spent_usd,
        reserved_usd=totals.reserved_usd, estimate_usd=plan.worst_usd)


def ledger_for(client: object) -> Ledger:
    """Where the run's calls are recorded first: the client's budget's ledger, the innermost
    entered budget's, else the default ledger."""
    own = client_budget(client)
    if own is not None:
        return own.ledger
    budgets = collect_budgets(None)
    return budgets[-1].ledger if budgets else open_ledger()
