"""Where a provider's traffic goes, as its adapter declares it: the gateway's default route
(which upstream a path and its headers reach) and the hosts ``install()`` guards."""

from __future__ import annotations

import pickle

import pytest

from spendguard._adoption.hosts import Destination, ProviderHosts
from spendguard._costing.endpoints import Provider
from spendguard._costing.prices import default_table
from spendguard._gateway.upstreams import Router, parse_upstream
from spendguard._providers.adapter import adapter_kinds, adapters

GEMINI_PATH = "/v1/models/gemini-2.5-flash:generateContent"


def test_one_adapter_is_the_default_wire_and_no_kind_is_two_adapters() -> None:
    assert sum(adapter.default_wire for adapter in adapters()) == 1
    names = [adapter.name for adapter in adapters()]
    platforms = [p for adapter in adapters() for p in adapter.platforms]
    assert len(adapter_kinds()) == len(names) + len(platforms)


@pytest.mark.parametrize(("path", "headers", "upstream", "url"), [
    ("/v1/chat/completions", {}, "openai", "https://api.openai.com/v1/chat/completions"),
    ("/v1", {}, "openai", "https://api.openai.com/v1"),
    ("/v1/messages", {}, "anthropic", "https://api.anthropic.com/v1/messages"),
    ("/v1/complete", {}, "anthropic", "https://api.anthropic.com/v1/complete"),
    ("/v1/models", {"anthropic-version": "2023-06-01"}, "anthropic",
     "https://api.anthropic.com/v1/models"),
    ("/v1/models", {"x-api-key": "k"}, "anthropic", "https://api.anthropic.com/v1/models"),
    ("/v1/models", {}, "openai", "https://api.openai.com/v1/models"),
    # A Gemini path wins over Anthropic's headers; Anthropic's path over OpenAI's key.
    (GEMINI_PATH, {"x-api-key": "k"}, "gemini",
     f"https://generativelanguage.googleapis.com{GEMINI_PATH}"),
    ("/v1beta/models/gemini-2.5-flash:countTokens", {}, "gemini",
     "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:countTokens"),
    ("/v1/messages", {"authorization": "Bearer k"}, "anthropic",
     "https://api.anthropic.com/v1/messages"),
    ("/groq/chat/completions", {"x-api-key": "k"}, "groq",
     "https://api.groq.com/openai/v1/chat/completions"),
])
def test_the_default_route_asks_paths_then_headers_then_the_default_wire(
        path: str, headers: dict[str, str], upstream: str, url: str) -> None:
    router = Router([parse_upstream("groq=https://api.groq.com/openai/v1")])
    routed = router.route(path, headers)
    assert routed is not None
    assert (routed[0].name, routed[1]) == (upstream, url)


def test_a_path_no_upstream_serves_is_not_routed() -> None:
    router = Router([])
    assert router.route("/v1beta", {}) is None
    assert router.route("/groq/chat/completions", {}) is None
    assert router.route("/openai/../anthropic/v1/messages", {}) is None


@pytest.mark.parametrize(("text", "provider", "platform", "key_env", "auth_header"), [
    ("groq=https://api.groq.com/openai/v1", Provider("openai"), None,
     "SPENDGUARD_GROQ_API_KEY", "authorization"),
    ("azure=https://r.openai.azure.com", Provider("openai"), "azure", "AZURE_OPENAI_API_KEY",
     "api-key"),
    ("prod=azure+https://r.openai.azure.com", Provider("openai"), "azure",
     "SPENDGUARD_PROD_API_KEY", "api-key"),
    ("anthropic=https://proxy.example", Provider("anthropic"), None, "ANTHROPIC_API_KEY",
     "x-api-key"),
    ("claude=anthropic+https://proxy.example", Provider("anthropic"), None,
     "SPENDGUARD_CLAUDE_API_KEY", "x-api-key"),
    ("gemini=https://proxy.example", Provider("gemini"), None, "GEMINI_API_KEY",
     "x-goog-api-key"),
    ("anthropic=openai+https://proxy.example", Provider("openai"), None, "ANTHROPIC_API_KEY",
     "authorization"),
])
def test_an_upstream_speaks_the_api_its_kind_or_name_marks(
        text: str, provider: Provider, platform: str | None, key_env: str,
        auth_header: str) -> None:
    upstream = parse_upstream(text)
    assert (upstream.provider, upstream.platform, upstream.key_env, upstream.auth_header) == (
        provider, platform, key_env, auth_header)


@pytest.mark.parametrize(("url", "destination"), [
    ("https://api.openai.com/v1/chat/completions", Destination(Provider("openai"))),
    ("https://api.anthropic.com/v1/messages", Destination(Provider("anthropic"))),
    ("https://r.openai.azure.com/openai/deployments/d/chat/completions",
     Destination(Provider("openai"), "azure")),
    ("https://r.cognitiveservices.azure.com/openai/v1/chat/completions",
     Destination(Provider("openai"), "azure")),
    ("https://bedrock-runtime-fips.us-east-1.amazonaws.com/model/m/invoke",
     Destination(Provider("anthropic"))),
    ("https://us-east5-aiplatform.googleapis.com/v1/projects/p/locations/us-east5/publishers/"
     "anthropic/models/claude-sonnet-4-6:rawPredict", Destination(Provider("anthropic"))),
    ("https://aiplatform.googleapis.com/v1/projects/p/locations/global/publishers/google/"
     "models/gemini-2.5-flash:generateContent", None),
    ("https://generativelanguage.googleapis.com/v1beta/models/g:generateContent", None),
    ("https://api.groq.com/openai/v1/chat/completions", Destination(Provider("openai"))),
    ("https://example.com/v1/chat/completions", None),
])
def test_install_guards_the_hosts_the_adapters_recognise(
        url: str, destination: Destination | None) -> None:
    host, _, rest = url.removeprefix("https://").partition("/")
    assert ProviderHosts().destination(url, host, "/" + rest, default_table()) == destination


def test_a_provider_is_a_package_name_made_once_and_listed_default_wire_first() -> None:
    assert Provider("openai") is Provider(Provider("openai")) == "openai"
    assert Provider("openai").value == "openai" and type(Provider("openai").value) is str
    assert pickle.loads(pickle.dumps(Provider("gemini"))) is Provider("gemini")
    assert Provider.names() == {"openai", "anthropic", "gemini"}
    assert [adapter.name for adapter in adapters()] == ["openai", "anthropic", "gemini"]
    with pytest.raises(ValueError, match="not a valid Provider"):
        Provider("azure")
