"""What every ``spendguard`` command does alike: JSON, colour, table width, typos, pipes.

- ``--json``: one document per command, indented by two spaces, money as exact decimal
  strings (:func:`emit_json`). An error under ``--json`` is a JSON document too, on standard
  error: ``{"error": {"message": ..., "exit_code": ...}}``.
- Colour only on a terminal, and never when ``NO_COLOR`` is set to anything
  (https://no-color.org) or ``TERM=dumb`` (:func:`paint`).
- Tables fit the terminal (``$COLUMNS``, else the terminal's width; no limit when the output
  is not a terminal, so files and pipes get whole lines): a text column too wide is wrapped
  onto more lines, never cut, and numbers are never wrapped (:func:`output_width`,
  :func:`aligned`).
- A mistyped command gets the closest ones suggested (:class:`SuggestingGroup`).
- A closed pipe (``spendguard export | head``) ends the command quietly, with exit status
  141 as a program stopped by SIGPIPE has.
"""

from __future__ import annotations

import difflib
import json
import os
import shutil
import sys
from decimal import Decimal
from typing import Any, TextIO

import click
from click import _compat as click_compat

from spendguard._core.tables import aligned
from spendguard._core.terminal import printable

__all__ = ["CLOSED_PIPE_EXIT", "SuggestingGroup", "aligned", "colour_enabled", "emit_json",
           "json_text", "output_width", "paint"]

CLOSED_PIPE_EXIT = 141
"""Exit status when the reader of standard output went away: 128 + SIGPIPE, as a shell shows
for any program stopped by a closed pipe."""


def json_text(data: Any) -> str:
    """``data`` as the one JSON style of the command line (Decimals as exact strings)."""
    return json.dumps(data, indent=2, ensure_ascii=False, default=_json_default)


def emit_json(data: Any, *, err: bool = False) -> None:
    """Print ``data`` as JSON on standard output (``err``: standard error)."""
    click.echo(json_text(data), err=err)


def paint(text: str, *, fg: str, bold: bool = False, err: bool = False) -> str:
    """``text`` coloured when the stream it goes to shows colour (a terminal, no NO_COLOR)."""
    stream = sys.stderr if err else sys.stdout
    if not colour_enabled(stream):
        return text
    return click.style(text, fg=fg, bold=bold)


def colour_enabled(stream: TextIO) -> bool:
    """Whether to colour what goes to ``stream``: a terminal, ``NO_COLOR`` unset or empty,
    ``TERM`` not ``dumb``."""
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    return not click_compat.should_strip_ansi(stream)


def output_width(stream: TextIO | None = None) -> int | None:
    """Columns a table may use when ``stream`` (default: standard output) is a terminal:
    ``$COLUMNS`` when set, else the terminal's width. None otherwise (no limit: a file or a
    pipe gets every line whole)."""
    target = stream or sys.stdout
    try:
        if not target.isatty():
            return None
    except (AttributeError, ValueError):
        return None
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    return shutil.get_terminal_size().columns


class SuggestingGroup(click.Group):
    """A group that answers a mistyped command with the closest names it has."""

    def resolve_command(self, ctx: click.Context,
                        args: list[str]) -> tuple[str | None, click.Command | None, list[str]]:
        name = args[0] if args else ""
        if name and not name.startswith("-") and self.get_command(ctx, name) is None:
            known = self.list_commands(ctx)
            close = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
            close += [known_name for known_name in known
                      if known_name.startswith(name) and known_name not in close]
            if close:
                quoted = " or ".join(f"'{choice}'" for choice in close[:3])
                ctx.fail(f"No such command '{printable(name)}'. Did you mean {quoted}?")
        return super().resolve_command(ctx, args)


def _json_default(value: object) -> str:
    if isinstance(value, Decimal):
        from spendguard._reporting.export.records import decimal_text  # noqa: PLC0415

        return decimal_text(value)
    raise TypeError(f"cannot write {type(value).__name__} as JSON")
