"""Writing AWS event-stream frames, as Bedrock streams them (the emulator's side of the wire).

The reading side is botocore's parser (:mod:`spendguard._costing.eventstream`); a frame written here
is checked by it, checksums included. Layout (AWS "Event stream encoding"): a 12-byte prelude
(total length, headers length, prelude CRC32), string headers, the payload, a message CRC32.
"""

from __future__ import annotations

import base64
import json
import struct
import zlib
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["bedrock_chunk_frame", "bedrock_stream", "event_stream_frame"]

_STRING = 7  # header value type: UTF-8 string


def event_stream_frame(headers: Mapping[str, str], payload: bytes) -> bytes:
    """One binary frame with string headers."""
    encoded = b"".join(
        struct.pack(">B", len(name.encode())) + name.encode()
        + struct.pack(">BH", _STRING, len(value.encode())) + value.encode()
        for name, value in headers.items())
    total = 12 + len(encoded) + len(payload) + 4
    prelude = struct.pack(">II", total, len(encoded))
    message = prelude + struct.pack(">I", zlib.crc32(prelude)) + encoded + payload
    return message + struct.pack(">I", zlib.crc32(message))


def bedrock_chunk_frame(event: Mapping[str, Any]) -> bytes:
    """A ``chunk`` frame carrying one Anthropic stream event, as Bedrock wraps it."""
    inner = base64.b64encode(json.dumps(event).encode()).decode()
    return event_stream_frame({":event-type": "chunk", ":content-type": "application/json",
                               ":message-type": "event"},
                              json.dumps({"bytes": inner}).encode())


def bedrock_stream(events: Iterable[Mapping[str, Any]]) -> bytes:
    """A whole ``invoke-with-response-stream`` body."""
    return b"".join(bedrock_chunk_frame(event) for event in events)
