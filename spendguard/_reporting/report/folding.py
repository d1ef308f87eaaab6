"""Folding many child scopes into one row: a report stays readable with 100,000 end users.

Children are the scopes ``"<parent>/<kind>:<value>"`` (a per-user template's ``app/user:42``,
``parent.child("run:7")``). When one parent has more than ``top`` children of one kind, the
``top`` that spent most in the selection keep their rows and the rest become one row,
``"<parent>/<kind>:* (N more)"``, with their summed spend; a folded child's budget is not read
from the ledger at all, which is what keeps such a report fast. A template's overflow scope
(``:%overflow``) always keeps its row; its count scope (``:%new``) is bookkeeping and never
shown.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping
from decimal import Decimal

from spendguard._budget.templates import COUNT_SUFFIX, OVERFLOW_SUFFIX

__all__ = ["DEFAULT_TOP", "fold_names", "is_bookkeeping"]

DEFAULT_TOP = 20
"""Children of one parent and kind a report shows before folding the rest."""

_CHILD = re.compile(r"(?P<family>.+/[^/:]+):[^/]*")


def is_bookkeeping(scope: str) -> bool:
    """Whether ``scope`` is a template's count scope, never shown in a report."""
    return scope.endswith(COUNT_SUFFIX)


def fold_names(spent_by_scope: Mapping[str, Decimal], top: int | None) -> dict[str, str]:
    """Each folded scope -> the name of the row it folds into (``top`` None folds nothing)."""
    if top is None:
        return {}
    families: defaultdict[str, list[str]] = defaultdict(list)
    for scope in spent_by_scope:
        match = _CHILD.fullmatch(scope)
        if match is not None and not scope.endswith((OVERFLOW_SUFFIX, COUNT_SUFFIX)):
            families[match["family"]].append(scope)
    folded: dict[str, str] = {}
    for family, members in families.items():
        if len(members) <= top:
            continue
        members.sort(key=lambda scope: (-spent_by_scope[scope], scope))
        rest = members[top:]
        row = f"{family}:* ({len(rest):,} more)"
        folded.update((scope, row) for scope in rest)
    return folded

