"""Budget templates: a child budget per end user (or per tag value), made on first sight.

``app.per("user", limit_usd="2", period="daily")`` gives every end user of ``app`` a budget of
their own, scope ``"<app scope>/user:<id>"``, read from each request: OpenAI's
``safety_identifier`` (or the older ``user``), Anthropic's ``metadata.user_id``.
``app.per("tag:customer", ...)`` does the same for the values of a :func:`spendguard.tags` key.

Nothing is created ahead of time and nothing is kept in memory per user: a child is a claim on
its scope made in the same ledger transaction as the call's other claims, so the first call of a
new user is checked against that user's limit as atomically as any other limit. A call without
the field or tag is charged to the parent alone.

``max_children`` bounds the distinct children per period (the children's period). A child's
first call in a period (it has no calls counted there yet) also claims the template's count
scope, ``"<parent>/<kind>:%new"``, whose call cap is ``max_children``, in the same transaction:
the cap is checked as atomically as any limit, across processes. Two processes that see the same
new child at once count it twice, so the cap errs on the safe side; a released first call gives
its count back. Past the cap a new value is charged to the one shared overflow scope,
``"<parent>/<kind>:%overflow"`` (with the template's limit, period and call cap), or refused
(``overflow="refuse"``). Neither name can be a child's: a child's name has ``%`` only in
``%2F`` and ``%25``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from spendguard._budget.ledger.base import CallInfo
from spendguard._budget.ledger.filters import TAG_KEY
from spendguard._core.errors import BudgetConfigError, BudgetExceeded
from spendguard._core.money import MAX_LIMIT_USD
from spendguard._providers.adapter import adapter_for

if TYPE_CHECKING:
    from spendguard._budget.budget import Budget

__all__ = ["COUNT_SUFFIX", "OVERFLOWS", "OVERFLOW_SUFFIX", "BudgetTemplate", "end_user_of",
           "over_cap", "with_templates"]

USER = "user"
COUNT_SUFFIX = ":%new"
"""How a template's count scope ends (``"app/user:%new"``): bookkeeping, left out of reports."""
OVERFLOW_SUFFIX = ":%overflow"
"""How a template's overflow scope ends (``"app/user:%overflow"``)."""
OVERFLOWS = ("share", "refuse")
"""What happens to a new value past ``max_children``."""
_MAX_VALUE = 64  # longer values are named by a hash, so scope names stay short
_ESCAPED = {"/": "%2F", "%": "%25"}


class BudgetTemplate:
    """Makes one child budget of ``parent`` per distinct value of a request field or tag."""

    def __init__(self, parent: Budget, by: str, *, limit_usd: Decimal | str | int,
                 options: Mapping[str, Any], max_children: int | None = None,
                 overflow: str = "share") -> None:
        if by == USER:
            self.tag: str | None = None
            self.kind = USER
        elif by.startswith("tag:") and TAG_KEY.fullmatch(by[4:]):
            self.tag = self.kind = by[4:]
        else:
            raise BudgetConfigError(
                f"by: {by!r} is not a template key; use \"user\" (the request's end-user field: "
                f"OpenAI safety_identifier or user, Anthropic metadata.user_id) or \"tag:KEY\" "
                f"(the value of spendguard.tags(KEY=...))", field="by")
        self.parent = parent
        self.by = by
        self._limit_usd = limit_usd
        self._options = dict(options)
        self.budget_for("check")  # a bad limit, period or cap is an error now, not per call
        if max_children is not None and (isinstance(max_children, bool) or not isinstance(
                max_children, int) or max_children < 1):
            raise BudgetConfigError(
                f"max_children: {max_children!r} is not a cap on distinct children; use a "
                f"whole number of at least 1, or None for no cap", field="max_children")
        if overflow not in OVERFLOWS:
            raise BudgetConfigError(
                f"overflow: {overflow!r} is not a choice; use \"share\" (new values past "
                f"max_children share one overflow scope) or \"refuse\" (their calls are "
                f"refused)", field="overflow")
        self.max_children = max_children
        self.overflow = overflow
        self._count: Budget | None = None
        self._overflow: Budget | None = None

    def value_of(self, call: CallInfo, tags: Mapping[str, str]) -> str | None:
        """The value this template keys a call by, or None when the call has none."""
        value = call.end_user if self.tag is None else tags.get(self.tag)
        return value or None

    def name_for(self, value: str) -> str:
        """The child's name: ``"user:<value>"`` (``/`` and ``%`` escaped; long values hashed)."""
        if len(value) > _MAX_VALUE or not value.isprintable():
            digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:24]
            return f"{self.kind}:sha256-{digest}"
        return f"{self.kind}:{''.join(_ESCAPED.get(char, char) for char in value)}"

    def budget_for(self, value: str) -> Budget:
        """The child budget of one value (a user id, a tag value): its own limit and period."""
        return self.parent.child(self.name_for(value), limit_usd=self._limit_usd,
                                 **self._options)

    def budgets_for(self, value: str) -> tuple[Budget, ...]:
        """The budgets a call of ``value`` is charged to: its child, and the count scope when
        the child is new in this period and the template has ``max_children``."""
        child = self.budget_for(value)
        if self.max_children is None or child.totals().calls:
            return (child,)
        return (child, self.count_budget())

    def count_budget(self) -> Budget:
        """The scope that counts new children per period, capped at ``max_children``."""
        if self._count is None:
            from spendguard._budget.budget import Budget  # noqa: PLC0415 - budgets import templates

            child = self.budget_for("check")
            # No money limit of its own, no warnings, no runaway rules: it only counts.
            self._count = Budget(MAX_LIMIT_USD, scope=f"{self.parent.scope}/{self.kind}"
                                 f"{COUNT_SUFFIX}", ledger=self.parent.ledger,
                                 period=child.period, clock=self.parent.clock, warn_at=None,
                                 reservation_ttl_s=self.parent.reservation_ttl_s, runaway=None,
                                 max_calls=self.max_children, enforce=self.parent.enforce)
        return self._count

    def overflow_budget(self) -> Budget:
        """The one scope new values share past ``max_children`` (``overflow="share"``)."""
        if self._overflow is None:
            self._overflow = self.parent.child(f"{self.kind}{OVERFLOW_SUFFIX}",
                                               limit_usd=self._limit_usd, **self._options)
        return self._overflow

    def __repr__(self) -> str:
        return f"<BudgetTemplate {self.parent.scope}/{self.kind}:* limit {self._limit_usd}>"


def end_user_of(provider: str, body: Mapping[str, Any]) -> str | None:
    """The end user a request names, if any: the field its provider's adapter documents for
    it (none for a provider whose API has no such field)."""
    return adapter_for(provider).end_user(body)


def with_templates(budgets: tuple[Budget, ...], call: CallInfo,
                   tags: Mapping[str, str]) -> tuple[Budget, ...]:
    """``budgets`` and, after each, the children its templates make for this call."""
    for budget in budgets:  # a plain loop: no generator resumed, no list built per call
        if budget.templates:
            break
    else:
        return budgets
    out: list[Budget] = []
    for budget in budgets:
        out.append(budget)
        for template in budget.templates:
            value = template.value_of(call, tags)
            if value is not None:
                out.extend(template.budgets_for(value))
    return tuple(out)


def over_cap(budgets: tuple[Budget, ...], refusal: BudgetExceeded) -> tuple[Budget, ...] | None:
    """After ``refusal``: the budgets to try instead when a template's count scope refused a
    new child (its overflow scope in place of the child), or None when it was another limit.

    With ``overflow="refuse"`` it raises a refusal that names ``max_children`` instead.
    """
    for index, budget in enumerate(budgets):
        if budget.scope != refusal.scope or not budget.scope.endswith(COUNT_SUFFIX):
            continue
        template = next(t for parent in budgets for t in parent.templates
                        if t._count is budget)
        child = budgets[index - 1]
        if template.overflow == "refuse":
            raise BudgetExceeded(
                f"{template.parent.scope}: {template.max_children} distinct {template.kind} "
                f"value(s) already have budgets this period (max_children="
                f"{template.max_children}), so the new one ({child.scope}) is refused; raise "
                f"max_children, or pass overflow=\"share\" to let new values share one scope",
                scope=child.scope, limit_usd=refusal.limit_usd, spent_usd=refusal.spent_usd,
                reserved_usd=refusal.reserved_usd, estimate_usd=refusal.estimate_usd,
                refused_by="max_children", max_calls=template.max_children,
                calls=refusal.calls) from refusal
        return (*budgets[:index - 1], template.overflow_budget(), *budgets[index + 1:])
    return None
