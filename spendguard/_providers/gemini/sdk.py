"""The google-genai SDK's clients: which classes they are, and a plain one built for a base
URL."""

from __future__ import annotations

from typing import Any

from spendguard._providers.sdk import SdkClient

__all__ = ["CLIENTS", "ERROR", "USER_AGENT", "client"]

CLIENTS: tuple[SdkClient, ...] = (
    SdkClient("google.genai", "Client"),
    # A Client's .aio, made by its constructor (and sharing its guard).
    SdkClient("google.genai.client", "AsyncClient", is_async=True, hooked=False),
)
ERROR: str = ""  # the guard's refusals are raised as spendguard's own errors
USER_AGENT = ""


def client(base_url: str | None) -> Any:
    """A ``google.genai.Client`` (its key from ``GEMINI_API_KEY``), at ``base_url`` if given."""
    from google import genai  # noqa: PLC0415 - only the SDK asked for is imported
    from google.genai import types  # noqa: PLC0415

    return genai.Client(http_options=types.HttpOptions(base_url=base_url))
