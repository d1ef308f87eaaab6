"""An official SDK's client class, named rather than imported (an adapter's ``sdk_clients``)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["SdkClient"]


@dataclass(frozen=True, slots=True)
class SdkClient:
    """One client class of a provider's official SDK, by name: the layers that recognise or
    patch clients look it up in ``sys.modules``, so naming it never imports the SDK."""

    module: str
    """The module it is found in once its SDK is imported (``"openai"``)."""
    name: str
    """Its class name in that module (``"AsyncAzureOpenAI"``)."""
    is_async: bool = False
    """Whether its calls are coroutines."""
    platform: str | None = None
    """The guard's platform for its clients, where their requests need it to be priced
    (``"azure"``: their paths name deployments); None where the URL says enough."""
    own_api: bool = True
    """Whether it addresses the provider's own API (a batch is sent with one of these); False
    for a platform's client (Azure OpenAI, Claude on Bedrock or Vertex AI)."""
    hooked: bool = True
    """Whether ``install()`` hooks its constructor; False where a hooked class's constructor
    builds its clients (a subclass calling its base's, a client another one makes)."""
