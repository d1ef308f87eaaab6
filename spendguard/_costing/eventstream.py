"""AWS event-stream frames (Bedrock's streamed responses), read incrementally for the meter.

Bedrock's ``invoke-with-response-stream`` answers ``application/vnd.amazon.eventstream``:
binary frames, each carrying one ``chunk`` event whose JSON payload holds the Anthropic stream
event base64-encoded under ``bytes``. Framing and checksums are botocore's own parser
(``botocore.eventstream.EventStreamBuffer``, the one the anthropic SDK uses to read the same
stream); this module only unwraps the payload into the ``(event name, data)`` pairs the
Anthropic stream reader takes from SSE.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

__all__ = ["EVENT_STREAM_TYPE", "EventStreamDecoder"]

EVENT_STREAM_TYPE = "application/vnd.amazon.eventstream"


class EventStreamDecoder:
    """Feed raw bytes as they arrive; yields each complete frame's Anthropic event."""

    def __init__(self) -> None:
        from botocore.eventstream import EventStreamBuffer  # noqa: PLC0415 - optional dep

        self._buffer = EventStreamBuffer()

    def feed(self, chunk: bytes) -> Iterator[tuple[str | None, dict[str, Any] | None]]:
        if not chunk:
            return
        self._buffer.add_data(chunk)
        for message in self._buffer:
            event = _event(message.headers, message.payload)
            if event is not None:
                yield event

    def flush(self) -> Iterator[tuple[str | None, dict[str, Any] | None]]:
        return iter(())  # a frame cut short carries no usable event


def _event(headers: dict[str, Any], payload: bytes,
           ) -> tuple[str | None, dict[str, Any] | None] | None:
    if headers.get(":message-type") != "event" or headers.get(":event-type") != "chunk":
        return None  # exceptions end the stream; the meter settles what it saw
    wrapper = json.loads(payload)
    data = json.loads(base64.b64decode(wrapper["bytes"]))
    if not isinstance(data, dict):
        return None
    name = data.get("type")
    return (name if isinstance(name, str) else None), data
