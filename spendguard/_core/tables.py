"""Aligned text tables that fit a width: long names wrap onto more lines, never cut."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

from spendguard._core.terminal import printable

__all__ = ["aligned"]

_MIN_TEXT_COLUMN = 12


def aligned(header: Sequence[str], rows: Sequence[Sequence[str]], *, left: int = 1,
            width: int | None = None, gap: int = 2,
            wrap: Sequence[int] | None = None) -> list[str]:
    """Rows under ``header`` in padded columns: the first ``left`` and any unnamed one
    left-aligned, the others (numbers) right-aligned.

    With ``width``, the widest columns of ``wrap`` (default: the left-aligned ones) are
    narrowed until the table fits, down to 12 characters each; their cells wrap onto more
    lines, never cut. Numbers never wrap: a table of many numbers may stay wider. Cells are
    made printable first: names and tags are the user's.
    """
    table = [tuple(header), *(tuple(printable(str(cell)) for cell in row) for row in rows)]
    count = len(header)
    widths = [max(len(row[i]) for row in table) for i in range(count)]
    text_columns = [i for i in range(count) if i < left or not header[i]]
    wrapping = text_columns if wrap is None else [i for i in wrap if i in text_columns]
    if width is not None:
        _narrow(widths, wrapping, width - gap * (count - 1))
    lines = []
    for row in table:
        cells = [_wrapped(cell, widths[i]) if i in wrapping else [cell]
                 for i, cell in enumerate(row)]
        for depth in range(max(len(cell) for cell in cells)):
            parts = []
            for i, cell in enumerate(cells):
                part = cell[depth] if depth < len(cell) else ""
                parts.append(part.ljust(widths[i]) if i in text_columns
                             else part.rjust(widths[i]))
            lines.append((" " * gap).join(parts).rstrip())
    return lines


def _narrow(widths: list[int], text_columns: list[int], room: int) -> None:
    while sum(widths) > room:
        candidates = [i for i in text_columns if widths[i] > _MIN_TEXT_COLUMN]
        if not candidates:
            return
        widest = max(candidates, key=lambda i: widths[i])
        widths[widest] = max(_MIN_TEXT_COLUMN, widths[widest] - (sum(widths) - room))


def _wrapped(cell: str, width: int) -> list[str]:
    if len(cell) <= width:
        return [cell]
    return textwrap.wrap(cell, width, break_long_words=True, break_on_hyphens=False,
                         drop_whitespace=True) or [""]
