"""Fixtures for the token-counting tests: the OpenAI Cookbook examples, and tiny image and PDF
files built by hand (no Pillow)."""

from __future__ import annotations

import base64
import struct
import zlib
from typing import Any

# OpenAI Cookbook, "How to count tokens with tiktoken", section 6: the API reported 129 prompt
# tokens for gpt-3.5-turbo / gpt-4 and 124 for gpt-4o / gpt-4o-mini.
COOKBOOK_MESSAGES: list[dict[str, Any]] = [
    {"role": "system", "content": "You are a helpful, pattern-following assistant that "
                                  "translates corporate jargon into plain English."},
    {"role": "system", "name": "example_user",
     "content": "New synergies will help drive top-line growth."},
    {"role": "system", "name": "example_assistant",
     "content": "Things working well together will increase revenue."},
    {"role": "system", "name": "example_user",
     "content": "Let's circle back when we have more bandwidth to touch base on opportunities "
                "for increased leverage."},
    {"role": "system", "name": "example_assistant",
     "content": "Let's talk later when we're less busy about how to do better."},
    {"role": "user", "content": "This late pivot means we don't have time to boil the ocean for "
                                "the client deliverable."},
]

# Section 7: with this tool the API reported 105 (gpt-3.5-turbo, gpt-4) and 101 (gpt-4o).
COOKBOOK_TOOLS: list[dict[str, Any]] = [{"type": "function", "function": {
    "name": "get_current_weather",
    "description": "Get the current weather in a given location",
    "parameters": {"type": "object", "properties": {
        "location": {"type": "string", "description": "The city and state, e.g. San Francisco, CA"},
        "unit": {"type": "string", "description": "The unit of temperature to return",
                 "enum": ["celsius", "fahrenheit"]},
    }, "required": ["location"]},
}}]
COOKBOOK_TOOL_MESSAGES = [
    {"role": "system", "content": "You are a helpful assistant that can answer to questions "
                                  "about the weather."},
    {"role": "user", "content": "What's the weather like in San Francisco?"},
]


def png(width: int, height: int) -> bytes:
    """A valid 1-bit grey PNG of the given size."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))
    header = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)
    row = b"\x00" + b"\x00" * ((width + 7) // 8)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(row * height)) + chunk(b"IEND", b""))


def jpeg(width: int, height: int, *, exif_bytes: int = 0) -> bytes:
    """A JPEG header (SOI, APP0, an optional large APP1, SOF0): enough to read its size."""
    app0 = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    app1 = b""
    if exif_bytes:
        app1 = b"\xff\xe1" + struct.pack(">H", exif_bytes + 2) + b"\x00" * exif_bytes
    sof0 = (b"\xff\xc0" + struct.pack(">HBHHB", 17, 8, height, width, 3)
            + b"\x01\x22\x00\x02\x11\x01\x03\x11\x01")
    return b"\xff\xd8" + app0 + app1 + sof0 + b"\xff\xd9"


def gif(width: int, height: int) -> bytes:
    return b"GIF89a" + struct.pack("<HH", width, height) + b"\x00\x00\x00;"


def webp_lossless(width: int, height: int) -> bytes:
    bits = (width - 1) | ((height - 1) << 14)
    payload = b"\x2f" + bits.to_bytes(4, "little") + b"\x00" * 8
    return b"RIFF" + struct.pack("<I", 4 + 8 + len(payload)) + b"WEBPVP8L" + struct.pack(
        "<I", len(payload)) + payload


def data_url(data: bytes, media_type: str = "image/png") -> str:
    return f"data:{media_type};base64,{base64.b64encode(data).decode()}"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def pdf(pages: int) -> bytes:
    """A minimal PDF with ``pages`` page objects (uncompressed, as most small PDFs are)."""
    objects = [b"1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj",
               f"2 0 obj << /Type /Pages /Count {pages} >> endobj".encode()]
    objects += [f"{3 + i} 0 obj << /Type /Page /Parent 2 0 R >> endobj".encode()
                for i in range(pages)]
    return b"%PDF-1.4\n" + b"\n".join(objects) + b"\n%%EOF\n"
