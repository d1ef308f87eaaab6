"""spendguard's client options, declared once.

``budget``, ``cap_output``, ``allow_unpriced``, ``store_prompts``, ``prices`` and
``cache_order`` are taken alike by the drop-in constructors and their ``copy()``,
:func:`spendguard.wrap`, :func:`spendguard.install` and :class:`spendguard.Gemini`.
:class:`ClientOptions` is their one declaration (name, type, default, what it does); the rest is
derived from it: the run-time signatures of the drop-in classes (:func:`option_parameters`), the
declarations type checkers read (``tools/dropin_signatures.py`` writes them), and the checks
that every other entry point spells them alike (``tests/guard/test_client_options.py``).
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import MISSING, dataclass, fields
from typing import Any

from spendguard._budget.budget import Budget
from spendguard._caching.order import CacheOrder, as_cache_order
from spendguard._core.errors import ConfigError
from spendguard._costing.prices import PriceTable
from spendguard._guard.metering import GuardOptions

__all__ = ["OPTION_NAMES", "UNSET", "ClientOptions", "check_budget", "option_parameters",
           "pop_options"]


class _Unset:
    """The default of an option not given (a copy keeps its parent's)."""

    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()


def check_budget(budget: object, *, example: str = 'budget=spendguard.Budget("10.00")',
                 expected: str = "a spendguard.Budget") -> None:
    """Refuse a ``budget`` that is neither a :class:`~spendguard.Budget` nor None."""
    if budget is not None and not isinstance(budget, Budget):
        raise ConfigError(f"budget: expected {expected}, got {type(budget).__name__}; "
                          f"write {example}")


@dataclass(frozen=True, slots=True)
class ClientOptions:
    """The options spendguard adds to a client, with their defaults."""

    budget: Budget | None = None
    """The :class:`~spendguard.Budget` every call is charged to (None: only the budgets
    entered with ``with budget:``)."""
    cap_output: bool = False
    """Shrink the output cap to fit what is left instead of refusing."""
    allow_unpriced: bool = False
    """Send requests to endpoints spendguard has no price for (image generation, audio
    transcription, a raw batch upload, ...) without counting them, instead of refusing them.
    A call to a priced endpoint whose model or token kind has no price is refused either way."""
    store_prompts: bool = False
    """Keep request text in the ledger (a hash otherwise)."""
    prices: PriceTable | None = None
    """A custom price table (None: the bundled one)."""
    cache_order: bool | CacheOrder = False
    """True or a :class:`~spendguard.CacheOrder`, to order each request for the prompt
    cache."""

    def __post_init__(self) -> None:
        check_budget(self.budget)

    @classmethod
    def of(cls, given: Mapping[str, Any], parent: ClientOptions | None = None) -> ClientOptions:
        """The options ``given`` (by name); one left out or :data:`UNSET` is ``parent``'s, or
        the default without a parent."""
        chosen = {name: value for name, value in given.items() if value is not UNSET}
        if parent is not None:
            chosen = {**parent.as_dict(), **chosen}
        return cls(**chosen)

    def as_dict(self) -> dict[str, Any]:
        """The options by name (values as given, not copied)."""
        return {name: getattr(self, name) for name in OPTION_NAMES}

    def guard_options(self, platform: str | None = None) -> GuardOptions:
        """What the guard reads of them (everything but the budget), with the client's
        platform (``"azure"``: requests name deployments)."""
        return GuardOptions(cap_output=self.cap_output, allow_unpriced=self.allow_unpriced,
                            store_prompts=self.store_prompts, prices=self.prices,
                            cache_order=as_cache_order(self.cache_order), platform=platform)


OPTION_NAMES: tuple[str, ...] = tuple(f.name for f in fields(ClientOptions))
"""The options' names, in the order every signature lists them."""


def pop_options(kwargs: dict[str, Any]) -> dict[str, Any]:
    """Take spendguard's options out of ``kwargs`` (the rest is the SDK's)."""
    return {name: kwargs.pop(name) for name in OPTION_NAMES if name in kwargs}


def option_parameters(*, unset: bool = False) -> list[inspect.Parameter]:
    """The options as keyword-only parameters (annotations as declared, as strings): with
    their defaults, or all :data:`UNSET` (``copy()``: one not given is kept)."""
    return [inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY,
                              default=UNSET if unset or f.default is MISSING else f.default,
                              annotation=f.type)
            for f in fields(ClientOptions)]
