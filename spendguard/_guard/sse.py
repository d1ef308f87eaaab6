"""Reading response bytes as they pass: content decoding and server-sent events, incrementally.

The transport sees bytes before the HTTP client decodes them, so gzip / deflate bodies are
decoded here (a copy, for reading usage; the caller still receives the original bytes).
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterator
from typing import Any

__all__ = ["ContentDecoder", "SSEDecoder", "decodable"]


_DECODED = ("gzip", "deflate", "x-gzip")


def _codings(content_encoding: str | None) -> list[str]:
    codings = [c.strip().lower() for c in (content_encoding or "").split(",") if c.strip()]
    return [c for c in codings if c != "identity"]


def _all_decoded(codings: list[str]) -> bool:
    return all(c in _DECODED for c in codings)


def decodable(content_encoding: str | None) -> bool:
    """Whether :class:`ContentDecoder` decodes a body with this ``Content-Encoding``."""
    return _all_decoded(_codings(content_encoding))


class ContentDecoder:
    """Incremental decoder for a ``Content-Encoding`` header (identity, gzip, deflate)."""

    def __init__(self, content_encoding: str | None) -> None:
        codings = _codings(content_encoding)
        self.supported = _all_decoded(codings)
        self._decoders = [
            zlib.decompressobj(zlib.MAX_WBITS | 16 if c in ("gzip", "x-gzip") else zlib.MAX_WBITS)
            for c in reversed(codings)
        ] if self.supported else []
        self._first_deflate = [c == "deflate" for c in reversed(codings)]

    def decode(self, data: bytes) -> bytes:
        """Decoded bytes for one chunk (b"" for an unsupported encoding)."""
        if not self.supported:
            return b""
        for index, decoder in enumerate(self._decoders):
            if self._first_deflate[index]:
                self._first_deflate[index] = False
                try:
                    data = decoder.decompress(data)
                except zlib.error:
                    # Some servers send raw deflate without the zlib header.
                    self._decoders[index] = zlib.decompressobj(-zlib.MAX_WBITS)
                    data = self._decoders[index].decompress(data)
                continue
            data = decoder.decompress(data)
        return data

    def flush(self) -> bytes:
        data = b""
        for decoder in self._decoders:
            data = decoder.decompress(data) + decoder.flush()
        return data


class SSEDecoder:
    """Split a byte stream into server-sent events: ``(event_name, data)`` pairs.

    ``data`` is the parsed JSON of the event's data lines, or None for non-JSON data such as
    OpenAI's closing ``[DONE]``.
    """

    def __init__(self) -> None:
        self._buffer = b""
        self._event: str | None = None
        self._data: list[bytes] = []

    def feed(self, chunk: bytes) -> Iterator[tuple[str | None, dict[str, Any] | None]]:
        self._buffer += chunk
        while True:
            newline = self._buffer.find(b"\n")
            if newline < 0:
                return
            line = self._buffer[:newline].rstrip(b"\r")
            self._buffer = self._buffer[newline + 1:]
            event = self._line(line)
            if event is not None:
                yield event

    def flush(self) -> Iterator[tuple[str | None, dict[str, Any] | None]]:
        if self._buffer:
            line, self._buffer = self._buffer.rstrip(b"\r"), b""
            event = self._line(line)
            if event is not None:
                yield event
        event = self._line(b"")
        if event is not None:
            yield event

    def _line(self, line: bytes) -> tuple[str | None, dict[str, Any] | None] | None:
        if not line:
            if not self._data and self._event is None:
                return None
            name, raw = self._event, b"\n".join(self._data)
            self._event, self._data = None, []
            try:
                parsed = json.loads(raw) if raw else None
            except ValueError:
                parsed = None
            return name, parsed if isinstance(parsed, dict) else None
        if line.startswith(b":"):
            return None
        field, _, value = line.partition(b":")
        value = value.removeprefix(b" ")
        if field == b"event":
            self._event = value.decode("utf-8", "replace")
        elif field == b"data":
            self._data.append(value)
        return None
