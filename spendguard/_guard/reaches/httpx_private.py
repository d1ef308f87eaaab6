"""Reaches into the private parts of the HTTP clients, ``httpx2`` and classic ``httpx``.

Both keep the same internals (httpx2 began as a fork of httpx); each is checked against the
installed versions by ``tests/guard/test_private_reaches.py``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["decode_content", "keep_read_body", "raw_header_items", "wrap_transports"]


def raw_header_items(headers: Any) -> Iterable[tuple[bytes, bytes, bytes]]:
    """A ``Headers``' own list of ``(name as sent, name in lower case, value)`` byte triples
    (its private ``_list``): read in place, where ``raw`` would build a copy of it and the
    names would be lowered again."""
    items: Iterable[tuple[bytes, bytes, bytes]] = headers._list
    return items


def keep_read_body(response: Any, content: bytes) -> None:
    """Give a response whose raw body was iterated whole (and which is closed) that body's
    content, decoded (its private ``_content``): ``read()``, ``content`` and ``iter_bytes()``
    then answer from it, with no second stream to build and read."""
    response._content = content


def decode_content(response: Any, raw: bytes) -> bytes:
    """A whole raw body of an ``httpx2`` response decoded by the response's own content
    decoder (its private ``_get_content_decoder``), the bytes its ``iter_bytes`` would give.
    Raises the library's ``DecodingError`` for a body that is not what its header says."""
    decoder = response._get_content_decoder()
    return b"".join([*decoder.decode(raw), *decoder.flush()])


def wrap_transports(http_client: Any, dispatcher: type[Any]) -> None:
    """Put ``dispatcher(transport)`` around the client's default transport and every proxy
    mount, each once (idempotent).

    A client keeps them in its private ``_transport`` and ``_mounts`` (a dict of URL pattern to
    transport or None); wrapping them, rather than passing a transport, keeps the client's
    own settings (keep-alive, proxies)."""
    transport = http_client._transport
    if transport.__class__ is not dispatcher and not isinstance(transport, dispatcher):
        http_client._transport = dispatcher(transport)
    mounts = http_client._mounts
    if not mounts:  # the usual client (no proxies): nothing more to look at, every request
        return
    for pattern, transport in list(mounts.items()):
        if transport is not None and not isinstance(transport, dispatcher):
            mounts[pattern] = dispatcher(transport)
