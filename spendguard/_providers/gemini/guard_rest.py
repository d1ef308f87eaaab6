"""google-genai's REST path, for what its public methods cannot send as spendguard needs.

``spendguard.batch()`` prices, keeps and resubmits each Gemini request as the REST body the
ordinary ``generate_content`` call sends (a ``GenerateContentRequest``), and reads a batch's
``batchStats`` and inline responses, which ``client.batches.get`` leaves out of its
``BatchJob``. So it sends REST bodies through the client's own ``BaseApiClient``: its auth,
base URL, API version and retries, on its httpx2 clients, that is through the guard. The
body of ``generate_content`` arguments is built by the SDK's own converter, as the ordinary
call builds it. The reaches into google-genai's private parts this needs are named in
:mod:`spendguard._guard.reaches.genai`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from spendguard._core.errors import ConfigError
from spendguard._guard.reaches import genai as reach

__all__ = ["arest_request", "generate_request", "is_vertex", "response_object",
           "rest_request"]

_ARGUMENTS = frozenset({"model", "contents", "config"})


is_vertex = reach.is_vertex


def _model_id(model: str) -> str:
    return model.rpartition("/")[2]


def generate_request(client: Any, params: Mapping[str, Any], where: str) -> dict[str, Any]:
    """The REST ``GenerateContentRequest`` an ordinary ``client.models.generate_content(
    **params)`` sends, with ``model`` (the bare id) added for pricing."""
    unknown = sorted(set(params) - _ARGUMENTS)
    if unknown:
        raise ConfigError(f"{where}: {', '.join(unknown)} is not an argument of "
                          f"generate_content; give model, contents and config (generation "
                          f"settings, system_instruction and tools go in config)")
    model = params.get("model")
    if not isinstance(model, str) or not model:
        raise ConfigError(f"{where}.model: give the model id, e.g. 'gemini-2.5-flash'")
    if params.get("contents") is None:
        raise ConfigError(f"{where}.contents: give the prompt (a string, or Content dicts)")
    try:
        body = reach.generate_content_body(reach.api_client(client), model, params["contents"],
                                           params.get("config"))
    except (ValueError, TypeError) as exc:  # pydantic's ValidationError is a ValueError
        raise ConfigError(f"{where}: {exc}") from exc
    plain: dict[str, Any] = json.loads(json.dumps(body))
    return {"model": _model_id(model), **plain}


def _decoded(response: Any) -> dict[str, Any]:
    body = response.body
    decoded = json.loads(body) if body else {}
    return decoded if isinstance(decoded, dict) else {"value": decoded}


def rest_request(client: Any, method: str, path: str, body: Mapping[str, Any] | None = None,
                 headers: Mapping[str, str] | None = None) -> dict[str, Any]:
    """One REST call through the client's API client (``path`` after the API version, e.g.
    ``batches/123``); its JSON reply. The SDK's own errors (``google.genai.errors.APIError``)
    are raised as they come."""
    options = {"headers": dict(headers)} if headers else None
    return _decoded(reach.api_client(client).request(method, path, dict(body or {}), options))


async def arest_request(client: Any, method: str, path: str,
                        body: Mapping[str, Any] | None = None,
                        headers: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The async twin of :func:`rest_request`."""
    options = {"headers": dict(headers)} if headers else None
    return _decoded(await reach.api_client(client).async_request(method, path,
                                                                 dict(body or {}), options))


def response_object(body: Mapping[str, Any]) -> Any:
    """The ``types.GenerateContentResponse`` the ordinary call returns for a REST reply."""
    return reach.generate_content_response(dict(body))
