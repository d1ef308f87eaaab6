"""Inline SVG charts drawn by hand: stacked columns, labelled bars, a ring. No scripts.

Geometry is float (pixels); every number shown is formatted by the caller from exact values.
Every label is escaped: scope names and tag values come from users. Hovering a mark shows its
``<title>``, which browsers render as a tooltip without any script.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape

__all__ = ["Bar", "Series", "bars", "nice_ticks", "ring", "stacked_columns"]

FONT = "font-family=\"inherit\" font-size=\"12\" fill=\"#475569\""
GRID = "#e2e8f0"
TRACK = "#f1f5f9"


@dataclass(frozen=True, slots=True)
class Series:
    """One stacked series: its name, colour and a value per column."""

    name: str
    color: str
    values: Sequence[float]


@dataclass(frozen=True, slots=True)
class Bar:
    """One horizontal bar: ``value`` of ``scale``, with the text shown at its end.

    ``marker`` draws a thin line at that value (a budget's limit); ``track`` shades the whole
    scale behind the bar.
    """

    label: str
    value: float
    color: str
    text: str
    tooltip: str = ""
    marker: float | None = None


def nice_ticks(top: float, count: int = 4) -> tuple[list[float], int]:
    """Round axis values from 0 to at least ``top`` (steps of 1, 2, 2.5 or 5 times a power of
    10), and the decimal places that show every step alike."""
    if top <= 0:
        return [0.0, 1.0], 0
    raw = top / count
    exponent = math.floor(math.log10(raw))
    multiple = next(m for m in (1, 2, 2.5, 5, 10) if m * 10 ** exponent >= raw)
    step = multiple * 10 ** exponent
    places = max(0, -exponent + (1 if multiple == 2.5 else 0))
    return [step * i for i in range(math.ceil(top / step - 1e-9) + 1)], places


def stacked_columns(labels: Sequence[str], series: Sequence[Series], *,
                    tick_text: Callable[[float, int], str], width: int = 960,
                    height: int = 280) -> str:
    """Columns per label, each stacked from ``series``; ``tick_text(value, places)`` labels
    the y axis."""
    left, right, top, bottom = 72, 12, 12, 30
    plot_w, plot_h = width - left - right, height - top - bottom
    sums = [sum(s.values[i] for s in series) for i in range(len(labels))]
    ticks, places = nice_ticks(max(sums, default=0.0))
    scale = plot_h / ticks[-1]
    parts = [_open(width, height, "Spend per day, stacked by model")]
    for tick in ticks:
        y = top + plot_h - tick * scale
        parts.append(f'<line x1="{left}" x2="{width - right}" y1="{y:.1f}" y2="{y:.1f}" '
                     f'stroke="{GRID}"/>')
        parts.append(f'<text x="{left - 8}" y="{y + 4:.1f}" text-anchor="end" {FONT}>'
                     f'{escape(tick_text(tick, places))}</text>')
    slot = plot_w / max(len(labels), 1)
    bar_w = max(2.0, min(48.0, slot * 0.72))
    every = max(1, math.ceil(len(labels) / 10))  # at most ~10 date labels
    for i, label in enumerate(labels):
        x = left + slot * i + (slot - bar_w) / 2
        y = top + plot_h
        for s in series:
            h = s.values[i] * scale
            if h <= 0:
                continue
            y -= h
            parts.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar_w:.1f}" height="{h:.1f}" '
                         f'fill="{s.color}"><title>{escape(label)} · {escape(s.name)}'
                         f'</title></rect>')
        if i % every == 0:
            parts.append(f'<text x="{x + bar_w / 2:.1f}" y="{height - bottom + 18}" '
                         f'text-anchor="middle" {FONT}>{escape(label)}</text>')
    parts.append(f'<line x1="{left}" x2="{width - right}" y1="{top + plot_h}" '
                 f'y2="{top + plot_h}" stroke="#94a3b8"/>')
    return "".join(parts) + "</svg>"


def bars(items: Sequence[Bar], *, scale: float, width: int = 960, label_w: int = 220,
         text_w: int = 170, row_h: int = 30, track: bool = False, title: str = "") -> str:
    """One labelled horizontal bar per item, all on the same ``scale`` (> 0)."""
    height = max(row_h * len(items), row_h)
    plot_w = width - label_w - text_w
    scale = scale if scale > 0 else 1.0
    parts = [_open(width, height, title)]
    for i, item in enumerate(items):
        y = i * row_h
        bar_y, bar_h = y + 7, row_h - 14
        parts.append(f'<text x="{label_w - 12}" y="{y + row_h / 2 + 4:.1f}" text-anchor="end" '
                     f'{FONT} fill="#0f172a">{escape(_clip(item.label, label_w // 7))}'
                     f'<title>{escape(item.label)}</title></text>')
        if track:
            parts.append(f'<rect x="{label_w}" y="{bar_y}" width="{plot_w}" height="{bar_h}" '
                         f'rx="3" fill="{TRACK}"/>')
        w = min(max(item.value, 0.0) / scale, 1.0) * plot_w
        if w > 0:
            parts.append(f'<rect x="{label_w}" y="{bar_y}" width="{max(w, 2.0):.1f}" '
                         f'height="{bar_h}" rx="3" fill="{item.color}"><title>'
                         f'{escape(item.tooltip or item.text)}</title></rect>')
        if item.marker is not None:
            mx = label_w + min(item.marker / scale, 1.0) * plot_w
            parts.append(f'<line x1="{mx:.1f}" x2="{mx:.1f}" y1="{y + 3}" y2="{y + row_h - 3}" '
                         f'stroke="#0f172a" stroke-width="2"/>')
        parts.append(f'<text x="{width - text_w + 10}" y="{y + row_h / 2 + 4:.1f}" {FONT}>'
                     f'{escape(item.text)}</text>')
    return "".join(parts) + "</svg>"


def ring(parts: Sequence[tuple[str, float, str]], *, center: str, size: int = 180) -> str:
    """A ring split into ``(name, share, colour)`` parts, with ``center`` text in the hole."""
    radius, stroke = size / 2 - 16, 26
    circumference = 2 * math.pi * radius
    out = [_open(size, size, ", ".join(name for name, _, _ in parts)),
           f'<circle cx="{size / 2}" cy="{size / 2}" r="{radius:.1f}" fill="none" '
           f'stroke="{TRACK}" stroke-width="{stroke}"/>']
    start = 0.0
    for name, share, color in parts:
        length = max(0.0, min(share, 1.0)) * circumference
        if length > 0:
            out.append(f'<circle cx="{size / 2}" cy="{size / 2}" r="{radius:.1f}" fill="none" '
                       f'stroke="{color}" stroke-width="{stroke}" stroke-dasharray='
                       f'"{length:.2f} {circumference:.2f}" stroke-dashoffset="{-start:.2f}" '
                       f'transform="rotate(-90 {size / 2} {size / 2})"><title>{escape(name)}'
                       f'</title></circle>')
        start += length
    out.append(f'<text x="{size / 2}" y="{size / 2 + 7}" text-anchor="middle" '
               f'font-size="20" font-weight="600" fill="#0f172a">{escape(center)}</text>')
    return "".join(out) + "</svg>"


def _open(width: int, height: int, title: str) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
            f'width="100%" role="img" aria-label="{escape(title)}" '
            f'preserveAspectRatio="xMinYMin meet">')


def _clip(text: str, length: int) -> str:
    # Only the label drawn beside a bar is shortened; its tooltip and the tables show it whole.
    return text if len(text) <= length else text[: length - 1] + "…"
