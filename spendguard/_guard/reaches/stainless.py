"""Reaches into the private parts of the Stainless-generated SDKs (``openai``, ``anthropic``).

Both SDKs come from one generator and share these internals; each is checked against the
installed versions by ``tests/guard/test_private_reaches.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["PREPARE_REQUEST", "RETRY_COUNT_HEADER", "copy_passing", "hook_prepare_request",
           "is_hooked", "sdk_http_client", "sdk_prepare_request"]

PREPARE_REQUEST = "_prepare_request"
"""The SDK client's per-attempt request hook, ``_prepare_request(self, request)``: called on
every attempt (retries included) with the ``httpx2.Request`` about to be sent, a coroutine
function on the async clients. ``Guarded`` overrides it under this name to tag the request."""

RETRY_COUNT_HEADER = "x-stainless-retry-count"
"""The request header in which the SDKs number an attempt (``"0"`` for the first)."""


def sdk_http_client(client: Any) -> Any:
    """The SDK client's HTTP client (its private ``_client``): what it sends through, also
    when the user passed none. None while the SDK's constructor has not set it yet."""
    return getattr(client, "_client", None)


def sdk_prepare_request(sdk_class: type) -> Callable[..., Any]:
    """The SDK class's own request hook (see :data:`PREPARE_REQUEST`)."""
    hook: Callable[..., Any] = getattr(sdk_class, PREPARE_REQUEST)
    return hook


def hook_prepare_request(client: Any, hook: Callable[[Any], Any]) -> None:
    """Replace the request hook of this one client (an instance attribute: other clients of
    the class are untouched); ``hook(request)`` calls the class's own."""
    setattr(client, PREPARE_REQUEST, hook)


def is_hooked(client: Any) -> bool:
    """Whether :func:`hook_prepare_request` was called on this client."""
    return PREPARE_REQUEST in vars(client)


def copy_passing(copy: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
                 constructor_kwargs: Mapping[str, Any]) -> Any:
    """Call the SDK's ``copy()`` so that the copy's constructor also receives
    ``constructor_kwargs``: ``copy()`` passes its private ``_extra_kwargs`` on to it."""
    extra = dict(kwargs.pop("_extra_kwargs", None) or {})
    return copy(*args, _extra_kwargs={**extra, **constructor_kwargs}, **kwargs)
