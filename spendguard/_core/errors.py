"""Every error spendguard raises, in one tree.

::

    SpendguardError                 base of everything below: "spendguard refused"
    ├── ConfigError (ValueError)    bad user input: a budget, a price file, a CLI argument
    │   ├── PriceFileError          a price / GPU / model data file failed validation
    │   └── BudgetConfigError       a limit, threshold, scope or period that makes no sense
    ├── UnknownModelError (KeyError)  no price / architecture / GPU of that name; says how to add
    ├── UnsupportedEndpointError    a request the guard cannot price, refused before sending
    ├── ProviderResponseError       a provider body or stream that cannot be read
    ├── TokenizerError              the offline tokenizer data is missing or corrupt
    ├── LedgerError                 the ledger cannot be opened, migrated or written
    │   └── LedgerUnavailable       a shared ledger (Redis) cannot be reached; fails closed
    │       └── LedgerReset         it came back empty or older than seen; fails closed
    ├── BudgetExceeded              a call refused because it could overspend a scope
    │   └── RunawayRefused          refused by a runaway rule (repeats, velocity, attempts)
    ├── BatchRequestFailed          a deferred (batch) request errored, expired or was refused
    └── CascadeFailed               every cascade tier failed its check, or the money ran out

    BudgetWarning (UserWarning)     not an error: a scope's spend reached its warn_at level

Errors carry structured fields so callers can act on them without parsing messages.
``BudgetExceeded`` raised inside the HTTP transport is re-raised by the provider adapters as a
subclass that also inherits the SDK's own base error (``openai.OpenAIError`` /
``anthropic.AnthropicError``): the SDKs then pass it through unchanged instead of wrapping and
retrying it. We never subclass the HTTP library's exceptions: the SDKs retry those.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

__all__ = [
    "BatchRequestFailed",
    "BudgetConfigError",
    "BudgetExceeded",
    "BudgetWarning",
    "CascadeFailed",
    "ConfigError",
    "LedgerError",
    "LedgerNotFound",
    "LedgerReset",
    "LedgerUnavailable",
    "PriceFileError",
    "ProviderResponseError",
    "RunawayRefused",
    "SpendguardError",
    "TokenizerError",
    "UnknownModelError",
    "UnsupportedEndpointError",
]


class SpendguardError(Exception):
    """Base class of every error spendguard raises."""


class ConfigError(SpendguardError, ValueError):
    """Bad input from the user: the message names the field and the fix."""


class PriceFileError(ConfigError):
    """A data file (prices, GPUs, model architectures) failed validation."""

    def __init__(self, message: str, *, path: str | None = None, entry: str | None = None,
                 field: str | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.entry = entry
        self.field = field


class BudgetConfigError(ConfigError):
    """A budget limit, threshold, scope or period that makes no sense."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class UnknownModelError(SpendguardError, KeyError):
    """No entry for that name; the message lists close matches and how to add one."""

    def __init__(self, message: str, *, name: str, kind: str = "model",
                 suggestions: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.message = message
        self.name = name
        self.kind = kind
        self.suggestions = tuple(suggestions)

    def __str__(self) -> str:  # KeyError would repr() the message
        return self.message


class UnsupportedEndpointError(SpendguardError):
    """A request the guard cannot price, refused before anything is sent."""

    def __init__(self, message: str, *, method: str, path: str) -> None:
        super().__init__(message)
        self.method = method
        self.path = path


class ProviderResponseError(SpendguardError):
    """A provider response or stream that cannot be read as the API documents it."""

    def __init__(self, message: str, *, provider: str | None = None,
                 field: str | None = None) -> None:
        super().__init__(message)
        self.provider = provider
        self.field = field


class TokenizerError(SpendguardError):
    """The offline tokenizer data is missing, corrupt, or the model's encoding is unknown."""


class LedgerError(SpendguardError):
    """The ledger cannot be opened, migrated or written."""


class LedgerNotFound(LedgerError):
    """A ledger was to be read but there is none at that path or URL (nothing recorded
    there yet); reading never creates one."""


class LedgerUnavailable(LedgerError):
    """A shared ledger cannot be reached; the call is refused (fail closed)."""

    def __init__(self, message: str, *, url: str) -> None:
        super().__init__(message)
        self.url = url


class LedgerReset(LedgerUnavailable):
    """A shared ledger came back empty or older than this process or machine saw it (Redis
    restarted without its data, was flushed, or failed over to a lagging replica): calls are
    refused, as while it is unreachable, until it is restored or reseeded."""


class BudgetExceeded(SpendguardError):
    """A call refused before it was sent, because its worst case could overspend a scope."""

    def __init__(self, message: str, *, scope: str, limit_usd: Decimal, spent_usd: Decimal,
                 reserved_usd: Decimal, estimate_usd: Decimal, refused_by: str = "limit_usd",
                 max_calls: int | None = None, calls: int | None = None) -> None:
        super().__init__(message)
        self.scope = scope
        self.limit_usd = limit_usd
        self.spent_usd = spent_usd
        self.reserved_usd = reserved_usd
        self.estimate_usd = estimate_usd
        self.refused_by = refused_by
        """The limit that refused: ``"limit_usd"`` (money) or ``"max_calls"`` (a call cap)."""
        self.max_calls = max_calls
        """The scope's call cap, when it has one."""
        self.calls = calls
        """Calls the scope had counted in the period when refused (with a call cap)."""

    @property
    def remaining_usd(self) -> Decimal:
        """What the scope had left when the call was refused (USD)."""
        return self.limit_usd - self.spent_usd - self.reserved_usd


class RunawayRefused(BudgetExceeded):
    """A call refused before it was sent because a runaway rule of its scope tripped (the same
    request over and over, spend too fast, too many attempts); names the rule and how to lift
    it. A :class:`BudgetExceeded`, so code that handles refusals handles this one too."""

    def __init__(self, message: str, *, scope: str, rule: str | None, until: Any,
                 limit_usd: Decimal, spent_usd: Decimal, reserved_usd: Decimal,
                 estimate_usd: Decimal) -> None:
        super().__init__(message, scope=scope, limit_usd=limit_usd, spent_usd=spent_usd,
                         reserved_usd=reserved_usd, estimate_usd=estimate_usd)
        self.rule = rule
        """``"repeats"``, ``"velocity"``, ``"attempts_per_call"``, ``"attempts_per_minute"``, or
        None for a refusal during a cool-down tripped earlier."""
        self.until = until
        """When the cool-down ends (an aware ``datetime``), when known."""


class BatchRequestFailed(SpendguardError):
    """A deferred request got no response: it errored, expired, was cancelled, or was refused."""

    def __init__(self, message: str, *, custom_id: str, status: str, route: str,
                 error: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.custom_id = custom_id
        self.status = status
        """``"errored"``, ``"expired"``, ``"cancelled"`` or ``"refused"`` (by the budget)."""
        self.route = route
        """``"batch"`` or ``"fallback"`` (an ordinary call made after the batch ran late)."""
        self.error = error
        """The provider's error body, when it sent one."""


class CascadeFailed(SpendguardError):
    """Every tier of a cascade failed its check, or the money ran out; names each attempt."""

    def __init__(self, message: str, *, reason: str, attempts: Sequence[Any],
                 cost_usd: Decimal) -> None:
        super().__init__(message)
        self.reason = reason
        """``"all_failed"`` or ``"budget"``."""
        self.attempts = tuple(attempts)
        """The cascade's trace, in order: :class:`spendguard.CascadeAttempt` records (typed
        ``Any`` here because the error layer does not import the cascade)."""
        self.cost_usd = cost_usd


class BudgetWarning(UserWarning):
    """A scope's spend reached its ``warn_at`` share of the limit (issued once per period)."""
