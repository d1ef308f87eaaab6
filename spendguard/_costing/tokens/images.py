"""Image tokens by the providers' published rules, and image sizes read from file headers.

OpenAI (vision guide): *tile* models scale an image to fit 2048×2048, then so its short side is
at most 768 px, and bill ``base + per_tile × (512-px tiles)``; ``detail="low"`` bills ``base``.
*Patch* models bill ``ceil(w/32) × ceil(h/32)`` patches (at most 1536, the image shrunk to fit)
times a per-model multiplier. Anthropic (vision guide): an image costs about ``w × h / 750``
tokens (28-px patches) after being shrunk to the model's native resolution: long edge 1568 px
and ~1,600 tokens before Opus 4.7, 2576 px and 4,784 tokens from Opus 4.7 on.
"""

from __future__ import annotations

import base64
import binascii
import functools
import math
import struct
from dataclasses import dataclass

__all__ = [
    "AnthropicImageRule",
    "OpenAIPatchRule",
    "OpenAITileRule",
    "image_size",
    "image_size_from_base64",
]

# An image whose size cannot be read (a URL, a file id) is assumed to be this large for the
# central estimate; the rule's maximum is the bound.
TYPICAL_SIZE_PX = (1024, 1024)


@dataclass(frozen=True)
class OpenAITileRule:
    """``base + per_tile × tiles`` (detail high/auto) or ``base`` (detail low)."""

    base: int
    per_tile: int

    def tokens(self, width: int, height: int, detail: str = "auto") -> int:
        if detail == "low":
            return self.base
        w, h = float(width), float(height)
        if max(w, h) > 2048:
            scale = 2048 / max(w, h)
            w, h = w * scale, h * scale
        if min(w, h) > 768:
            scale = 768 / min(w, h)
            w, h = w * scale, h * scale
        tiles = math.ceil(w / 512) * math.ceil(h / 512)
        return self.base + self.per_tile * tiles

    def max_tokens(self, detail: str = "auto") -> int:
        # the worst shape after scaling is 768 × 2048: 2 × 4 tiles
        return self.base if detail == "low" else self.base + self.per_tile * 8


@dataclass(frozen=True)
class OpenAIPatchRule:
    """``min(patches, 1536) × multiplier`` with 32-px patches."""

    multiplier: float
    max_patches: int = 1536

    def tokens(self, width: int, height: int, detail: str = "auto") -> int:
        patches = math.ceil(width / 32) * math.ceil(height / 32)
        return math.ceil(min(patches, self.max_patches) * self.multiplier)

    def max_tokens(self, detail: str = "auto") -> int:
        return math.ceil(self.max_patches * self.multiplier)


@dataclass(frozen=True)
class AnthropicImageRule:
    """Shrink to the native resolution, then ``max(w×h/750, 28-px patches)``, capped."""

    long_edge_px: int
    max_image_tokens: int

    def tokens(self, width: int, height: int, detail: str = "auto") -> int:
        w, h = float(width), float(height)
        scale = min(1.0, self.long_edge_px / max(w, h, 1.0),
                    math.sqrt(self.max_image_tokens * 750 / max(w * h, 1.0)))
        w, h = w * scale, h * scale
        patches = math.ceil(w / 28) * math.ceil(h / 28)
        return min(self.max_image_tokens, max(math.ceil(w * h / 750), patches))

    def max_tokens(self, detail: str = "auto") -> int:
        return self.max_image_tokens


def _png(data: bytes) -> tuple[int, int] | None:
    if data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR" and len(data) >= 24:
        width, height = struct.unpack(">II", data[16:24])
        return int(width), int(height)
    return None


def _gif(data: bytes) -> tuple[int, int] | None:
    if data[:6] in (b"GIF87a", b"GIF89a") and len(data) >= 10:
        width, height = struct.unpack("<HH", data[6:10])
        return int(width), int(height)
    return None


def _webp(data: bytes) -> tuple[int, int] | None:
    if data[:4] != b"RIFF" or data[8:12] != b"WEBP" or len(data) < 30:
        return None
    chunk = data[12:16]
    if chunk == b"VP8 ":
        width, height = struct.unpack("<HH", data[26:30])
        return int(width) & 0x3FFF, int(height) & 0x3FFF
    if chunk == b"VP8L":
        bits = int.from_bytes(data[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8X":
        return int.from_bytes(data[24:27], "little") + 1, int.from_bytes(data[27:30], "little") + 1
    return None


# JPEG start-of-frame markers carry the size; C4 (DHT), C8 (JPG) and CC (DAC) do not.
_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}


def _jpeg(data: bytes) -> tuple[int, int] | None:
    if data[:2] != b"\xff\xd8":
        return None
    i = 2
    while i + 9 < len(data):
        if data[i] != 0xFF:
            return None
        marker = data[i + 1]
        if marker == 0xFF:  # fill byte
            i += 1
            continue
        if marker in (0x01, *range(0xD0, 0xD8)):  # markers without a length
            i += 2
            continue
        (length,) = struct.unpack(">H", data[i + 2:i + 4])
        if marker in _SOF:
            height, width = struct.unpack(">HH", data[i + 5:i + 9])
            return int(width), int(height)
        i += 2 + length
    return None


def image_size(data: bytes) -> tuple[int, int] | None:
    """``(width, height)`` in pixels of a PNG, JPEG, GIF or WebP, or None if unreadable."""
    for reader in (_png, _jpeg, _gif, _webp):
        size = reader(data)
        if size is not None and size[0] > 0 and size[1] > 0:
            return size
    return None


@functools.lru_cache(maxsize=1024)
def image_size_from_base64(data: str) -> tuple[int, int] | None:
    """Image size from base64 text (a bare payload or a ``data:`` URL), or None."""
    if data.startswith("data:"):
        data = data.partition(",")[2]
    # PNG, GIF and WebP keep the size in the first bytes; JPEG may need to skip EXIF blocks.
    for chars in (64, 65536, len(data)):
        chunk = data[: chars - chars % 4] if chars < len(data) else data
        try:
            raw = base64.b64decode(chunk + "=" * (-len(chunk) % 4))
        except (binascii.Error, ValueError):
            return None
        size = image_size(raw)
        if size is not None or chars >= len(data):
            return size
    return None
