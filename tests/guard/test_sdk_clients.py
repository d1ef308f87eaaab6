"""The SDK client classes each adapter names, checked against the installed SDKs.

An SDK upgrade that renames or moves a client class, or its base error, fails here by name:
``install()``, ``wrap()`` and the batch strategy look these up without importing the SDK.
"""

from __future__ import annotations

import anthropic
import openai
import pytest
from google import genai

from spendguard._costing.endpoints import Provider
from spendguard._guard.sdk_clients import loaded_class, loaded_sdk_error, sdk_of
from spendguard._providers import adapter_for, adapters
from spendguard._providers.sdk import SdkClient

ENTRIES = [(adapter.name, entry) for adapter in adapters() for entry in adapter.sdk_clients]


@pytest.mark.parametrize(("provider", "entry"), ENTRIES,
                         ids=[f"{name}-{entry.name}" for name, entry in ENTRIES])
def test_each_named_client_class_is_in_the_installed_sdk(provider: str,
                                                         entry: SdkClient) -> None:
    cls = loaded_class(entry)
    assert cls is not None
    assert cls.__name__ == entry.name
    assert entry.is_async == entry.name.startswith("Async")
    package = adapter_for(provider).sdk_package
    assert cls.__module__ == package or cls.__module__.startswith(package + ".")
    if entry.hooked:  # install() wraps the constructor the class itself defines
        assert "__init__" in cls.__dict__


def test_each_adapter_names_one_own_api_client_per_flavour() -> None:
    for adapter in adapters():
        own = [entry.is_async for entry in adapter.sdk_clients if entry.own_api]
        assert sorted(own) == [False, True], adapter.name


def test_the_base_errors_named_are_the_sdks_own() -> None:
    assert loaded_sdk_error(adapter_for("openai")) is openai.OpenAIError
    assert loaded_sdk_error(adapter_for("anthropic")) is anthropic.AnthropicError
    assert loaded_sdk_error(adapter_for("gemini")) is None


def test_an_sdk_client_is_told_by_its_classes() -> None:
    azure = openai.AzureOpenAI(api_key="k", api_version="2024-10-21",
                               azure_endpoint="https://example.openai.azure.com")
    bedrock = anthropic.AnthropicBedrock(aws_access_key="a", aws_secret_key="s",
                                         aws_region="us-east-1")
    for client, provider, platform in [
            (openai.OpenAI(api_key="k"), Provider("openai"), None),
            (openai.AsyncOpenAI(api_key="k"), Provider("openai"), None),
            (azure, Provider("openai"), "azure"),
            (anthropic.Anthropic(api_key="k"), Provider("anthropic"), None),
            (bedrock, Provider("anthropic"), None)]:
        found = sdk_of(client)
        assert found is not None
        assert (found.provider, found.platform) == (provider, platform)
    assert sdk_of(genai.Client(api_key="k")) is None  # attached by its own client half
    assert sdk_of(object()) is None


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini"])
def test_the_adapter_builds_a_plain_client_for_a_base_url(provider: str,
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY"):
        monkeypatch.setenv(name, "k")
    client = adapter_for(provider).sdk_client("http://127.0.0.1:9/v1/")
    if provider != "gemini":  # google-genai keeps its base URL in private options
        assert str(client.base_url) == "http://127.0.0.1:9/v1/"
    own = [loaded_class(entry) for entry in adapter_for(provider).sdk_clients
           if entry.own_api and not entry.is_async]
    assert isinstance(client, tuple(cls for cls in own if cls is not None))
