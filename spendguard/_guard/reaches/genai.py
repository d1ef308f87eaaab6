"""Reaches into the private parts of ``google-genai``.

google-genai is not a Stainless SDK: a ``genai.Client`` keeps one ``BaseApiClient`` (shared by
its ``.aio``, ``.models``, ``.chats`` and every other module) that builds and sends each request
on its own httpx2 clients. What the guard reads and replaces there is named here; each reach
is checked against the installed version by ``tests/guard/test_private_reaches.py``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["api_client", "async_http_client", "async_twin", "generate_content_body",
           "generate_content_response", "is_vertex", "send_async_through",
           "serve_every_loop_from_own_pool", "set_async_http_client", "set_sync_http_client",
           "sync_http_client", "uses_aiohttp", "uses_google_auth_session"]


def api_client(client: Any) -> Any:
    """The client's ``BaseApiClient`` (its private ``_api_client``)."""
    return client._api_client


def async_twin(client: Any) -> Any:
    """The client's ``.aio`` (its private ``_aio``, built with the client), None on a client
    that has none (an ``AsyncClient`` itself)."""
    return getattr(client, "_aio", None)


def uses_google_auth_session(api: Any) -> bool:
    """Whether sync requests go through google-auth's own session instead of httpx2 (Vertex AI
    with an mTLS client certificate): the private ``_use_google_auth_sync()``."""
    return bool(api._use_google_auth_sync())


def uses_aiohttp(api: Any) -> bool:
    """Whether async requests go through aiohttp instead of httpx2: ``_use_aiohttp()``."""
    return bool(api._use_aiohttp())


def sync_http_client(api: Any) -> Any:
    """The httpx2 client sync requests are sent on (the private ``_httpx_client``)."""
    return api._httpx_client


def set_sync_http_client(api: Any, http_client: Any) -> None:
    """Send sync requests on ``http_client`` from now on."""
    api._httpx_client = http_client


def async_http_client(api: Any) -> Any:
    """The httpx2 client async requests are sent on (``_async_httpx_client``; None when there
    is none)."""
    return api._async_httpx_client


def set_async_http_client(api: Any, http_client: Any) -> None:
    """Send async requests on ``http_client`` from now on."""
    api._async_httpx_client = http_client


def send_async_through(api: Any, http_client: Any) -> None:
    """Make the client's options name ``http_client`` as the async httpx2 client, which the
    SDK then prefers to aiohttp (``_http_options.httpx_async_client``)."""
    api._http_options.httpx_async_client = http_client


def serve_every_loop_from_own_pool(async_client: Any) -> None:
    """Turn off the SDK's one-pool-per-event-loop mode of its async httpx2 client (the private
    ``_per_loop`` flag): the per-loop pools are built without the guard on their transport, so
    the client's own pool, which carries it, serves every loop instead."""
    if getattr(async_client, "_per_loop", False):
        async_client._per_loop = False


def is_vertex(client: Any) -> bool:
    """Whether a ``genai.Client`` (or its ``.aio``) speaks to Vertex AI (``vertexai`` on its
    ``BaseApiClient``)."""
    return bool(client._api_client.vertexai)


def generate_content_body(api: Any, model: str, contents: Any, config: Any) -> dict[str, Any]:
    """The Gemini Developer API body ``models.generate_content(model=, contents=, config=)``
    sends, built by the SDK's own private converter (``_GenerateContentParameters`` through
    ``_GenerateContentParameters_to_mldev``) and made JSON-ready as the SDK does before
    sending. Raises ``ValueError`` / ``TypeError`` (pydantic's validation) on bad arguments."""
    from google.genai import _common, models, types  # noqa: PLC0415

    parameters = types._GenerateContentParameters(model=model, contents=contents, config=config)
    body = models._GenerateContentParameters_to_mldev(api, parameters, None, parameters)
    body.pop("_url", None)
    body.pop("_query", None)
    body.pop("config", None)  # as generate_content does: what config held is lifted out
    ready: dict[str, Any] = _common.encode_unserializable_types(_common.convert_to_dict(body))
    return ready


def generate_content_response(body: dict[str, Any]) -> Any:
    """The ``types.GenerateContentResponse`` the ordinary call returns for a Gemini Developer
    API reply body (``_GenerateContentResponse_from_mldev``, then ``_from_response``)."""
    from google.genai import models, types  # noqa: PLC0415

    converted = models._GenerateContentResponse_from_mldev(body, None, None)
    return types.GenerateContentResponse._from_response(response=converted, kwargs={})
