"""Helpers for the report tests: a varied ledger, and a tiny PNG reader for screenshots."""

from __future__ import annotations

import shutil
import struct
import subprocess
import zlib
from collections import Counter
from decimal import Decimal
from pathlib import Path

import spendguard
from spendguard._budget.budget import Budget
from tests.finance_helpers import book, list_cost
from tests.ledger_helpers import FakeClock

CHROMIUM = next((path for name in ("chromium", "chromium-browser", "google-chrome")
                 if (path := shutil.which(name))), None)
"""A headless browser to render report pages in (None: browser tests are skipped)."""

D = Decimal


def varied_ledger(url: str) -> tuple[Budget, FakeClock]:
    """Three days of calls: four models, two teams under an org budget, batch and cache use."""
    clock = FakeClock()
    org = Budget("2", ledger=url, scope="org", clock=clock, period="monthly", warn_at=None)
    teams = [org.child("search", limit_usd="1"), org.child("support", limit_usd="0.5")]
    plan = [("gpt-4o", {"input": 20_000, "cache_read": 30_000, "output": 2_000}, True),
            ("gpt-4o-mini", {"input": 50_000, "output": 5_000}, False),
            ("claude-haiku-4-5", {"input": 5_000, "cache_read": 40_000, "cache_write_5m": 5_000,
                                  "output": 3_000}, False),
            ("claude-sonnet-4-5", {"input": 10_000, "output": 1_000}, False)]
    for day in range(3):
        for index, (model, tokens, batch) in enumerate(plan):
            with spendguard.tags(feature="chat" if index % 2 else "summaries"):
                book(teams[(day + index) % 2], model, tokens,
                     endpoint="batch" if batch else "chat",
                     actual_usd=list_cost(model, tokens, batch=batch),
                     estimated_input=sum(v for k, v in tokens.items() if k != "output") + 500)
            clock.advance(hours=1)
        clock.advance(hours=20)
    return org, clock


def screenshot(page: Path, shot: Path, *, width: int, height: int) -> None:
    """Render ``page`` in headless Chromium into the PNG ``shot`` (a window of that size)."""
    assert CHROMIUM is not None
    subprocess.run([CHROMIUM, "--headless", "--disable-gpu", "--no-sandbox",
                    "--hide-scrollbars", f"--user-data-dir={shot.parent / 'chromium'}",
                    f"--screenshot={shot}", f"--window-size={width},{height}",
                    page.resolve().as_uri()], check=True, capture_output=True, timeout=120)


def png_image(path: Path) -> list[list[tuple[int, int, int]]]:
    """The RGB rows of an 8-bit RGB/RGBA, non-interlaced PNG (top row first)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG file"
    position, chunks, header = 8, [], b""
    while position < len(data):
        (length,) = struct.unpack(">I", data[position:position + 4])
        kind = data[position + 4:position + 8]
        body = data[position + 8:position + 8 + length]
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            chunks.append(body)
        position += 12 + length
    width, height, depth, color_type, _, _, interlace = struct.unpack(">IIBBBBB", header)
    assert depth == 8 and color_type in (2, 6) and interlace == 0, "unsupported PNG layout"
    channels = 3 if color_type == 2 else 4
    raw = zlib.decompress(b"".join(chunks))
    stride = width * channels
    previous = bytearray(stride)
    rows: list[list[tuple[int, int, int]]] = []
    for row in range(height):
        start = row * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        _unfilter(kind, line, previous, channels)
        rows.append([(line[x], line[x + 1], line[x + 2]) for x in range(0, stride, channels)])
        previous = line
    return rows


def png_pixels(path: Path) -> Counter[tuple[int, int, int]]:
    """How many pixels of each RGB colour an 8-bit RGB/RGBA, non-interlaced PNG holds."""
    return Counter(pixel for row in png_image(path) for pixel in row)


def _unfilter(kind: int, line: bytearray, previous: bytearray, bpp: int) -> None:
    """Undo one scanline's PNG filter in place (filters 0-4 of the PNG spec)."""
    for i in range(len(line)):
        left = line[i - bpp] if i >= bpp else 0
        up = previous[i]
        if kind == 1:
            line[i] = (line[i] + left) & 0xFF
        elif kind == 2:
            line[i] = (line[i] + up) & 0xFF
        elif kind == 3:
            line[i] = (line[i] + (left + up) // 2) & 0xFF
        elif kind == 4:
            corner = previous[i - bpp] if i >= bpp else 0
            estimate = left + up - corner
            distances = (abs(estimate - left), abs(estimate - up), abs(estimate - corner))
            predictor = (left, up, corner)[distances.index(min(distances))]
            line[i] = (line[i] + predictor) & 0xFF


def rgb(hex_color: str) -> tuple[int, int, int]:
    """``#2563eb`` as ``(37, 99, 235)``."""
    value = hex_color.lstrip("#")
    return int(value[0:2], 16), int(value[2:4], 16), int(value[4:6], 16)
