"""The anthropic SDK's clients: which classes they are, and a plain one built for a base URL."""

from __future__ import annotations

from typing import Any

from spendguard._providers.sdk import SdkClient

__all__ = ["CLIENTS", "ERROR", "USER_AGENT", "client"]

CLIENTS: tuple[SdkClient, ...] = (
    SdkClient("anthropic", "Anthropic"),
    SdkClient("anthropic", "AsyncAnthropic", is_async=True),
    # The platforms' clients: their own classes, not subclasses of the two above.
    SdkClient("anthropic", "AnthropicBedrock", own_api=False),
    SdkClient("anthropic", "AsyncAnthropicBedrock", is_async=True, own_api=False),
    SdkClient("anthropic", "AnthropicVertex", own_api=False),
    SdkClient("anthropic", "AsyncAnthropicVertex", is_async=True, own_api=False),
)
ERROR: str = "anthropic.AnthropicError"
USER_AGENT = "Anthropic/"


def client(base_url: str | None) -> Any:
    """An ``anthropic.Anthropic`` client (its key from ``ANTHROPIC_API_KEY``), at ``base_url``
    if given."""
    import anthropic  # noqa: PLC0415 - only the SDK asked for is imported

    options: dict[str, Any] = {} if base_url is None else {"base_url": base_url}
    return anthropic.Anthropic(**options)
