"""Each reach into another library's private code, checked against the installed version.

An upgrade of openai, anthropic, google-genai, httpx2 or httpx that moves one of these parts
fails here, by name, before it fails anywhere else.
"""

from __future__ import annotations

import gzip
import inspect
import subprocess
import sys
import textwrap
import zlib
from pathlib import Path
from types import ModuleType
from typing import Any

import anthropic
import httpx
import httpx2
import openai
import pytest
import respx
from google import genai

from spendguard._guard.reaches import genai as genai_reach
from spendguard._guard.reaches.httpx_private import (
    decode_content,
    keep_read_body,
    raw_header_items,
    wrap_transports,
)
from spendguard._guard.reaches.imports import PatchOnImport
from spendguard._guard.reaches.stainless import (
    PREPARE_REQUEST,
    RETRY_COUNT_HEADER,
    copy_passing,
    hook_prepare_request,
    is_hooked,
    sdk_http_client,
    sdk_prepare_request,
)

STAINLESS = (openai.OpenAI, openai.AsyncOpenAI, openai.AzureOpenAI, openai.AsyncAzureOpenAI,
             anthropic.Anthropic, anthropic.AsyncAnthropic, anthropic.AnthropicBedrock,
             anthropic.AsyncAnthropicBedrock, anthropic.AnthropicVertex,
             anthropic.AsyncAnthropicVertex)


class _Wrapper:
    def __init__(self, inner: Any) -> None:
        self.inner = inner


@pytest.mark.parametrize("cls", STAINLESS, ids=lambda cls: cls.__name__)
def test_every_stainless_client_has_the_per_attempt_request_hook(cls: type) -> None:
    hook = sdk_prepare_request(cls)
    assert list(inspect.signature(hook).parameters) == ["self", "request"]
    assert inspect.iscoroutinefunction(hook) == cls.__name__.startswith("Async")


@pytest.mark.parametrize(("cls", "http"), [(openai.OpenAI, httpx2.Client),
                                           (openai.AsyncOpenAI, httpx2.AsyncClient),
                                           (anthropic.Anthropic, httpx2.Client),
                                           (anthropic.AsyncAnthropic, httpx2.AsyncClient)])
def test_a_stainless_client_keeps_its_http_client_where_it_is_read(cls: Any,
                                                                   http: type) -> None:
    given = http()
    assert sdk_http_client(cls(api_key="k", http_client=given)) is given
    assert isinstance(sdk_http_client(cls(api_key="k")), http)
    assert sdk_http_client(object()) is None


@pytest.mark.parametrize("cls", [openai.OpenAI, anthropic.Anthropic], ids=lambda c: c.__name__)
def test_a_stainless_copy_passes_constructor_arguments_to_the_copy(cls: Any) -> None:
    class Recording(cls):  # type: ignore[misc]
        def __init__(self, *args: Any, marker: str = "", **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.marker = marker

    copied = copy_passing(Recording(api_key="k").copy, (), {"max_retries": 5},
                          {"marker": "given"})
    assert copied.marker == "given" and copied.max_retries == 5


@respx.mock
def test_the_instance_hook_sees_every_attempt_numbered_in_the_retry_header() -> None:
    route = respx.get("https://api.openai.com/v1/models")
    # respx's own types name httpx, which resolves to httpx2 here (tests/conftest.py)
    route.side_effect = [httpx.Response(500, json={}, headers={"retry-after-ms": "0"}),
                         httpx.Response(200, json={"object": "list", "data": []})]
    client = openai.OpenAI(api_key="k", max_retries=1)
    other = openai.OpenAI(api_key="k")
    own = sdk_prepare_request(type(client))
    seen: list[str] = []

    def hook(request: httpx2.Request) -> Any:
        seen.append(request.headers[RETRY_COUNT_HEADER])
        return own(client, request)

    hook_prepare_request(client, hook)
    client.models.list()
    assert seen == ["0", "1"]
    assert is_hooked(client) and not is_hooked(other) and PREPARE_REQUEST == "_prepare_request"


def test_httpx2_headers_keep_raw_name_lowered_name_and_value_triples() -> None:
    headers = httpx2.Headers([("X-Request-ID", "r1"), ("x-request-id", "r2")])
    assert list(raw_header_items(headers)) == [(b"X-Request-ID", b"x-request-id", b"r1"),
                                                (b"x-request-id", b"x-request-id", b"r2")]


@pytest.mark.parametrize("cls", [httpx2.Client, httpx2.AsyncClient], ids=lambda c: c.__name__)
def test_an_httpx2_clients_transport_and_proxy_mounts_are_wrapped_once(cls: Any) -> None:
    client = cls(mounts={"http://proxied": httpx2.HTTPTransport() if cls is httpx2.Client
                         else httpx2.AsyncHTTPTransport(), "http://none": None})
    default = client._transport
    wrap_transports(client, _Wrapper)
    wrap_transports(client, _Wrapper)
    assert isinstance(client._transport, _Wrapper) and client._transport.inner is default
    mounted = {str(pattern.pattern): t for pattern, t in client._mounts.items()}
    assert mounted["http://none"] is None
    assert isinstance(mounted["http://proxied"], _Wrapper)
    assert not isinstance(mounted["http://proxied"].inner, _Wrapper)


def test_classic_httpx_keeps_the_same_private_parts() -> None:
    # Run apart: in this process ``import httpx`` resolves to httpx2 (tests/conftest.py).
    code = textwrap.dedent("""
        import httpx
        from spendguard._guard.reaches.httpx_private import raw_header_items, wrap_transports
        class Wrapper:
            def __init__(self, inner):
                self.inner = inner
        assert list(raw_header_items(httpx.Headers({"A": "b"}))) == [(b"A", b"a", b"b")]
        for client in (httpx.Client(mounts={"http://p": httpx.HTTPTransport()}),
                       httpx.AsyncClient(mounts={"http://p": httpx.AsyncHTTPTransport()})):
            wrap_transports(client, Wrapper)
            assert isinstance(client._transport, Wrapper)
            assert all(isinstance(t, Wrapper) for t in client._mounts.values())
        print("ok")
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=False, cwd=Path(__file__).resolve().parents[2])
    assert result.stdout.strip() == "ok", result.stderr


def test_a_genai_client_sends_on_the_httpx2_clients_of_its_api_client() -> None:
    client = genai.Client(api_key="k", http_options=genai.types.HttpOptions(
        httpx_client=httpx2.Client(), httpx_async_client=httpx2.AsyncClient()))
    api = genai_reach.api_client(client)
    assert api is client.models._api_client
    assert not genai_reach.uses_google_auth_session(api)
    assert genai_reach.uses_aiohttp(api) in (True, False)
    sync, async_ = genai_reach.sync_http_client(api), genai_reach.async_http_client(api)
    assert isinstance(sync, httpx2.Client) and isinstance(async_, httpx2.AsyncClient)
    replacement, async_replacement = httpx2.Client(), httpx2.AsyncClient()
    genai_reach.set_sync_http_client(api, replacement)
    genai_reach.set_async_http_client(api, async_replacement)
    assert genai_reach.sync_http_client(api) is replacement
    assert genai_reach.async_http_client(api) is async_replacement
    genai_reach.send_async_through(api, async_replacement)
    assert api._http_options.httpx_async_client is async_replacement


def test_a_genai_clients_aio_is_found_and_shares_its_api_client() -> None:
    client = genai.Client(api_key="k")
    aio = genai_reach.async_twin(client)
    assert aio is client.aio
    assert genai_reach.api_client(aio) is genai_reach.api_client(client)


def test_the_genai_per_loop_async_client_can_serve_every_loop_from_its_own_pool() -> None:
    client = genai.Client(api_key="k")
    async_client = genai_reach.async_http_client(genai_reach.api_client(client))
    if async_client is None or not hasattr(async_client, "_per_loop"):
        pytest.skip("this google-genai builds no per-loop async client by default: "
                    "the reach is a no-op")
    assert async_client._per_loop is True
    genai_reach.serve_every_loop_from_own_pool(async_client)
    assert async_client._per_loop is False


def test_a_package_is_patched_right_after_it_is_imported(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "reach_probe.py").write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    seen: list[tuple[str, int]] = []

    def loaded(module: ModuleType) -> None:
        seen.append((module.__name__, module.VALUE))

    hook = PatchOnImport(lambda name: name == "reach_probe", loaded)
    monkeypatch.setattr(sys, "meta_path", [hook, *sys.meta_path])
    monkeypatch.delitem(sys.modules, "reach_probe", raising=False)
    import reach_probe  # type: ignore[import-not-found]

    assert seen == [("reach_probe", 1)]
    assert reach_probe.__spec__ is not None and reach_probe.__spec__.origin == str(
        tmp_path / "reach_probe.py")
    monkeypatch.delitem(sys.modules, "reach_probe")


def test_genai_builds_the_generate_content_body_and_reads_its_reply_with_its_own_converters(
) -> None:
    client = genai.Client(api_key="k")
    assert not genai_reach.is_vertex(client)
    body = genai_reach.generate_content_body(
        genai_reach.api_client(client), "gemini-2.5-flash", "Hello",
        {"max_output_tokens": 64, "system_instruction": "Be brief"})
    assert body["contents"] == [{"parts": [{"text": "Hello"}], "role": "user"}]
    assert body["generationConfig"] == {"maxOutputTokens": 64}
    assert body["systemInstruction"]["parts"] == [{"text": "Be brief"}]
    reply = genai_reach.generate_content_response({
        "candidates": [{"content": {"role": "model", "parts": [{"text": "Hi"}]}}],
        "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 1}})
    assert reply.text == "Hi"
    assert reply.usage_metadata.prompt_token_count == 3


def test_an_httpx2_response_read_raw_answers_from_the_body_kept_as_its_content() -> None:
    response = httpx2.Response(200, stream=httpx2.ByteStream(b"body"))
    raw = b"".join(response.iter_raw())
    assert response.is_closed and response.is_stream_consumed
    keep_read_body(response, raw)
    assert (response.read(), response.content, response.text) == (b"body", b"body", "body")
    assert list(response.iter_bytes()) == [b"body"]


def test_an_httpx2_client_times_a_response_that_arrives_closed() -> None:
    def reply(request: httpx2.Request) -> httpx2.Response:
        response = httpx2.Response(200, stream=httpx2.ByteStream(b"body"))
        keep_read_body(response, b"".join(response.iter_raw()))
        return response

    response = httpx2.Client(transport=httpx2.MockTransport(reply)).get("http://x.test/")
    assert response.content == b"body" and response.elapsed.total_seconds() >= 0


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "gzip, identity"])
def test_an_httpx2_response_decodes_a_whole_raw_body_with_its_own_decoder(encoding: str) -> None:
    body = b'{"usage": {"prompt_tokens": 1}}' * 20
    raw = gzip.compress(body) if encoding.startswith("gzip") else zlib.compress(body)
    response = httpx2.Response(200, headers={"content-encoding": encoding},
                               stream=httpx2.ByteStream(raw))
    assert decode_content(response, raw) == body


def test_an_httpx2_response_refuses_a_body_that_is_not_what_its_encoding_says() -> None:
    response = httpx2.Response(200, headers={"content-encoding": "gzip"},
                               stream=httpx2.ByteStream(b"plain"))
    with pytest.raises(httpx2.DecodingError):
        decode_content(response, b"plain")
