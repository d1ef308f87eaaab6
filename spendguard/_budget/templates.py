"""Budget templates: a child budget per end user (or per tag value), made on first sight.

``app.per("user", limit_usd="2", period="daily")`` gives every end user of ``app`` a budget of
their own, scope ``"<app scope>/user:<id>"``, read from each request: OpenAI's
``safety_identifier`` (or the older ``user``), Anthropic's ``metadata.user_id``.
``app.per("tag:customer", ...)`` does the same for the values of a :func:`spendguard.tags` key.

Nothing is created ahead of time and nothing is kept in memory per user: a child is a claim on
its scope made in the same ledger transaction as the call's other claims, so the first call of a
new user is checked against that user's limit as atomically as any other limit. A call without
the field or tag is charged to the parent alone.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from spendguard._budget.ledger.base import CallInfo
from spendguard._budget.ledger.filters import TAG_KEY
from spendguard._core.errors import BudgetConfigError

if TYPE_CHECKING:
    from spendguard._budget.budget import Budget

__all__ = ["BudgetTemplate", "end_user_of", "with_templates"]

USER = "user"
_MAX_VALUE = 64  # longer values are named by a hash, so scope names stay short
_ESCAPED = {"/": "%2F", "%": "%25"}


class BudgetTemplate:
    """Makes one child budget of ``parent`` per distinct value of a request field or tag."""

    def __init__(self, parent: Budget, by: str, *, limit_usd: Decimal | str | int,
                 options: Mapping[str, Any]) -> None:
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

    def __repr__(self) -> str:
        return f"<BudgetTemplate {self.parent.scope}/{self.kind}:* limit {self._limit_usd}>"


def end_user_of(provider: str, body: Mapping[str, Any]) -> str | None:
    """The end user a request names, if any: the field each provider documents for it."""
    if provider == "anthropic":
        metadata = body.get("metadata")
        value = metadata.get("user_id") if isinstance(metadata, Mapping) else None
    else:
        value = body.get("safety_identifier") or body.get("user")
    return value if isinstance(value, str) and value else None


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
                out.append(template.budget_for(value))
    return tuple(out)
