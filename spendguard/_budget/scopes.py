"""What is active around a call: the budgets entered with ``with budget:`` and the user's tags.

Both live in context variables, so they follow the code that set them: each thread has its
own, each asyncio task starts with a copy of its creator's, and nothing leaks between
concurrent requests of a server. (A plain ``threading.Thread`` or an executor starts empty:
run it under ``contextvars.copy_context().run`` to carry the scopes over;
``asyncio.to_thread`` does this already.)
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from types import MappingProxyType
from typing import TYPE_CHECKING

from spendguard._budget.ledger.filters import TAG_KEY
from spendguard._core.errors import ConfigError

if TYPE_CHECKING:
    from spendguard._budget.budget import Budget

__all__ = ["collect_budgets", "current_tags", "enter", "leave", "tags"]

_MAX_TAG_VALUE = 200

_active: ContextVar[tuple[Budget, ...]] = ContextVar("spendguard_budgets", default=())
_tags: ContextVar[Mapping[str, str]] = ContextVar("spendguard_tags",
                                                  default=MappingProxyType({}))


def enter(budget: Budget) -> None:
    """Make ``budget`` an enclosing scope of every call made in this context until ``leave``."""
    _active.set((*_active.get(), budget))


def leave(budget: Budget) -> None:
    """Undo the innermost ``enter(budget)`` of this context."""
    stack = _active.get()
    for index in range(len(stack) - 1, -1, -1):
        if stack[index] is budget:
            _active.set(stack[:index] + stack[index + 1:])
            return


def collect_budgets(client_budget: Budget | None) -> tuple[Budget, ...]:
    """Every budget a call is charged to: the enclosing ones, the client's, and their parents.

    Each appears once, ancestors before descendants.
    """
    active = _active.get()
    if not active and client_budget is not None and client_budget.parent is None:
        return (client_budget,)  # the usual call: the client's own budget, nothing entered
    found: dict[int, Budget] = {}
    for budget in (*active, client_budget):
        if budget is not None:
            for ancestor in budget.lineage():
                found.setdefault(id(ancestor), ancestor)
    return tuple(found.values())


def current_tags() -> Mapping[str, str]:
    """The tags set by the enclosing :func:`tags` blocks (read-only)."""
    return _tags.get()


@contextmanager
def tags(**values: str) -> Iterator[Mapping[str, str]]:
    """Label every call made inside the block, e.g. ``with spendguard.tags(team="search"):``.

    Tags nest (inner values win for the same key) and are stored on each call's record, for
    reports by team, feature or customer. Keys are words; values are strings.
    """
    for key, value in values.items():
        if not TAG_KEY.fullmatch(key):
            raise ConfigError(f"tags: {key!r} is not a tag name; use letters, digits, '_', '.' "
                              f"or '-', starting with a letter")
        if not isinstance(value, str) or len(value) > _MAX_TAG_VALUE:
            raise ConfigError(f"tags: {key}={value!r} must be a string of at most "
                              f"{_MAX_TAG_VALUE} characters; convert it with str()")
    merged = MappingProxyType({**_tags.get(), **values})
    token = _tags.set(merged)
    try:
        yield merged
    finally:
        _tags.reset(token)
