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
_LAZY: dict[str, str] = {}

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    pass

__all__ = [
    "BudgetConfigError",
    "BudgetExceeded",
    "ConfigError",
    "LedgerError",
    "LedgerUnavailable",
    "PriceFileError",
    "ProviderResponseError",
    "SpendguardError",
    "TokenizerError",
    "UnknownModelError",
    "UnsupportedEndpointError",
    "__version__",
    *sorted(_LAZY),
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
