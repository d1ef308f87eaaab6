"""Inline SVG charts drawn by hand: stacked columns, labelled bars, a ring. No scripts.

Geometry is float (pixels); every number shown is formatted by the caller from exact values.
Every label is escaped: scope names and tag values come from users. Hovering a mark shows its
``<title>``, which browsers render as a tooltip without any script. Long labels wrap onto up
to three lines instead of being cut; columns whose totals span two orders of magnitude switch
to a log scale so that a small day stays visible beside a large one.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape

__all__ = ["LOG_SCALE_SPREAD", "Bar", "Series", "bars", "nice_ticks", "ring", "stacked_columns",
           "wrap_label"]

FONT = "font-family=\"inherit\" font-size=\"12\" fill=\"#475569\""
GRID = "#e2e8f0"
TRACK = "#f1f5f9"
LOG_SCALE_SPREAD = 50.0  # largest ÷ smallest non-zero column from which the scale is log
_LINE_H = 15  # pixels between wrapped label lines
_BREAK_AFTER = " /:._-,=@"


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


def _log_axis(sums: Sequence[float]) -> tuple[float, float]:
    """Decades (powers of 10) from just below the smallest non-zero sum to the largest."""
    positive = [value for value in sums if value > 0]
    low = math.floor(math.log10(min(positive)))
    if math.isclose(math.log10(min(positive)), low):
        low -= 1  # the smallest column keeps a visible height
    return float(low), float(max(math.ceil(math.log10(max(positive))), low + 1))


def stacked_columns(labels: Sequence[str], series: Sequence[Series], *,
                    tick_text: Callable[[float, int], str], width: int = 960,
                    height: int = 280, log: bool | None = None,
                    pace: tuple[float, str] | None = None) -> str:
    """Columns per label, each stacked from ``series``; ``tick_text(value, places)`` labels
    the y axis. ``pace`` is ``(value, label)``: a dashed line across the chart at that value
    (the daily rate a forecast assumes), labelled.

    ``log`` (default: when the largest non-zero column is ``LOG_SCALE_SPREAD`` times the
    smallest or more) draws each column's total on a log scale, split between its series in
    proportion to their values.
    """
    left, right, top, bottom = 72, 12, 12, 30
    plot_w, plot_h = width - left - right, height - top - bottom
    sums = [sum(s.values[i] for s in series) for i in range(len(labels))]
    axis_sums = sums + ([pace[0]] if pace is not None and pace[0] > 0 else [])
    positive = [value for value in axis_sums if value > 0]
    if log is None:
        log = bool(positive) and max(positive) >= LOG_SCALE_SPREAD * min(positive)
    if log and positive:
        low, high = _log_axis(axis_sums)
        ticks = [10 ** k for k in range(int(low), int(high) + 1)]
        places_of = {tick: max(0, -int(math.log10(tick))) for tick in ticks}

        def y_of(value: float) -> float:
            share = (math.log10(value) - low) / (high - low) if value > 0 else 0.0
            return top + plot_h - max(share, 0.0) * plot_h
        title = "Spend per day, stacked by model (log scale)"
    else:
        log = False
        ticks, places = nice_ticks(max(axis_sums, default=0.0))
        places_of = dict.fromkeys(ticks, places)

        def y_of(value: float) -> float:
            return top + plot_h - value * plot_h / ticks[-1]
        title = "Spend per day, stacked by model"
    parts = [_open(width, height, title)]
    for tick in ticks:
        y = y_of(tick)
        parts.append(f'<line x1="{left}" x2="{width - right}" y1="{y:.1f}" y2="{y:.1f}" '
                     f'stroke="{GRID}"/>')
        parts.append(f'<text x="{left - 8}" y="{y + 4:.1f}" text-anchor="end" {FONT}>'
                     f'{escape(tick_text(tick, places_of[tick]))}</text>')
    slot = plot_w / max(len(labels), 1)
    bar_w = max(2.0, min(48.0, slot * 0.72))
    every = max(1, math.ceil(len(labels) / 10))  # at most ~10 date labels
    for i, label in enumerate(labels):
        x = left + slot * i + (slot - bar_w) / 2
        column_h = top + plot_h - y_of(sums[i]) if sums[i] > 0 else 0.0
        y = top + plot_h
        for s in series:
            if s.values[i] <= 0:
                continue
            h = column_h * s.values[i] / sums[i]
            y -= h
            parts.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar_w:.1f}" height="{h:.1f}" '
                         f'fill="{s.color}"><title>{escape(label)} · {escape(s.name)}'
                         f'</title></rect>')
        if i % every == 0:
            parts.append(f'<text x="{x + bar_w / 2:.1f}" y="{height - bottom + 18}" '
                         f'text-anchor="middle" {FONT}>{escape(label)}</text>')
    parts.append(f'<line x1="{left}" x2="{width - right}" y1="{top + plot_h}" '
                 f'y2="{top + plot_h}" stroke="#94a3b8"/>')
    if pace is not None and pace[0] > 0:
        y = y_of(pace[0])
        parts.append(f'<line class="pace" x1="{left}" x2="{width - right}" y1="{y:.1f}" '
                     f'y2="{y:.1f}" stroke="#0f172a" stroke-width="1.5" '
                     f'stroke-dasharray="6 4"><title>{escape(pace[1])}</title></line>')
        parts.append(f'<text x="{width - right - 4}" y="{max(y - 5, top + 10):.1f}" '
                     f'text-anchor="end" {FONT}>{escape(pace[1])}</text>')
    return "".join(parts) + "</svg>"


def wrap_label(text: str, chars: int, max_lines: int = 3) -> list[str]:
    """``text`` in lines of at most ``chars``, broken after a separator where one is near.

    Only the last allowed line is shortened (with "…") when even three lines are too few; the
    tooltip and the tables show the name whole.
    """
    lines: list[str] = []
    rest = text
    while len(rest) > chars and len(lines) < max_lines - 1:
        cut = max((rest.rfind(mark, 0, chars) for mark in _BREAK_AFTER), default=-1) + 1
        if cut < chars // 2:  # no separator in the second half: break inside the word
            cut = chars
        lines.append(rest[:cut].rstrip())
        rest = rest[cut:].lstrip()
    lines.append(_clip(rest, chars))
    return lines


def bars(items: Sequence[Bar], *, scale: float, width: int = 960, label_w: int = 220,
         text_w: int = 170, row_h: int = 30, track: bool = False, title: str = "") -> str:
    """One labelled horizontal bar per item, all on the same ``scale`` (> 0)."""
    labels = [wrap_label(item.label, label_w // 7) for item in items]
    heights = [max(row_h, _LINE_H * len(lines) + 10) for lines in labels]
    height = max(sum(heights), row_h)
    plot_w = width - label_w - text_w
    scale = scale if scale > 0 else 1.0
    parts = [_open(width, height, title)]
    y = 0
    for item, lines, this_h in zip(items, labels, heights, strict=True):
        first = y + this_h / 2 + 4 - _LINE_H * (len(lines) - 1) / 2
        spans = "".join(f'<tspan x="{label_w - 12}" y="{first + _LINE_H * n:.1f}">'
                        f'{escape(line)}</tspan>' for n, line in enumerate(lines))
        parts.append(f'<text class="label" text-anchor="end" {FONT} fill="#0f172a">{spans}'
                     f'<title>{escape(item.label)}</title></text>')
        parts.append(_bar_marks(item, y, this_h, row_h, label_w=label_w, plot_w=plot_w,
                                scale=scale, track=track, text_x=width - text_w + 10))
        y += this_h
    return "".join(parts) + "</svg>"


def _bar_marks(item: Bar, y: float, this_h: float, row_h: int, *, label_w: int, plot_w: int,
               scale: float, track: bool, text_x: int) -> str:
    parts: list[str] = []
    bar_y, bar_h = y + (this_h - row_h) / 2 + 7, row_h - 14
    if track:
        parts.append(f'<rect x="{label_w}" y="{bar_y:.1f}" width="{plot_w}" '
                     f'height="{bar_h}" rx="3" fill="{TRACK}"/>')
    w = min(max(item.value, 0.0) / scale, 1.0) * plot_w
    if w > 0:
        parts.append(f'<rect x="{label_w}" y="{bar_y:.1f}" width="{max(w, 2.0):.1f}" '
                     f'height="{bar_h}" rx="3" fill="{item.color}"><title>'
                     f'{escape(item.tooltip or item.text)}</title></rect>')
    if item.marker is not None:
        mx = label_w + min(item.marker / scale, 1.0) * plot_w
        parts.append(f'<line x1="{mx:.1f}" x2="{mx:.1f}" y1="{bar_y - 4:.1f}" '
                     f'y2="{bar_y + bar_h + 4:.1f}" stroke="#0f172a" stroke-width="2"/>')
    parts.append(f'<text x="{text_x}" y="{y + this_h / 2 + 4:.1f}" {FONT}>'
                 f'{escape(item.text)}</text>')
    return "".join(parts)


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
