"""Where OpenAI's API is reached: the gateway's default route, and the hosts install() guards.

- The gateway's default route ``/v1/...`` is OpenAI's when no other provider claims the
  request (by its path or headers): the official client's base URL ends in ``/v1``, so the
  upstream's base URL holds it and the forwarded path is the rest.
- install()'s traffic guard: ``api.openai.com``, and Azure OpenAI resources
  (``*.openai.azure.com``, ``*.cognitiveservices.azure.com``, ``*.services.ai.azure.com``),
  whose requests name deployments.
"""

from __future__ import annotations

from spendguard._providers.openai.platforms import AZURE

__all__ = ["API_HOST", "gateway_path", "traffic_kind"]

API_HOST = "api.openai.com"
_AZURE_SUFFIXES = (".openai.azure.com", ".cognitiveservices.azure.com",
                   ".services.ai.azure.com")


def gateway_path(path: str) -> str | None:
    """The path after the upstream's ``…/v1`` base URL, for a path under ``/v1``; else None."""
    if path.startswith("/v1/") or path == "/v1":
        return path[3:]
    return None


def traffic_kind(name: str, host: str) -> str | None:
    """``name`` for OpenAI's own host, the Azure platform for an Azure resource, else None."""
    if host == API_HOST:
        return name
    if host.endswith(_AZURE_SUFFIXES):
        return AZURE
    return None
