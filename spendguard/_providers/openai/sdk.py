"""The openai SDK's clients: which classes they are, and a plain one built for a base URL."""

from __future__ import annotations

from typing import Any

from spendguard._providers.openai.platforms import AZURE
from spendguard._providers.sdk import SdkClient

__all__ = ["CLIENTS", "ERROR", "USER_AGENT", "client"]

CLIENTS: tuple[SdkClient, ...] = (
    SdkClient("openai", "OpenAI"),
    SdkClient("openai", "AsyncOpenAI", is_async=True),
    # Subclasses of the two above: their constructors run the hooked ones.
    SdkClient("openai", "AzureOpenAI", platform=AZURE, own_api=False, hooked=False),
    SdkClient("openai", "AsyncAzureOpenAI", is_async=True, platform=AZURE, own_api=False,
              hooked=False),
)
ERROR: str = "openai.OpenAIError"
USER_AGENT = "OpenAI/"


def client(base_url: str | None) -> Any:
    """An ``openai.OpenAI`` client (its key from ``OPENAI_API_KEY``), at ``base_url`` if given."""
    import openai  # noqa: PLC0415 - only the SDK asked for is imported

    options: dict[str, Any] = {} if base_url is None else {"base_url": base_url}
    return openai.OpenAI(**options)
