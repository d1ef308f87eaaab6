"""A spend report as plain text for a terminal: a summary line, a table, the budgets."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from spendguard._budget.templates import OVERFLOW_SUFFIX
from spendguard._core.money import format_usd
from spendguard._core.periods import WINDOW_STEPS, window_seconds
from spendguard._core.tables import aligned
from spendguard._core.terminal import printable
from spendguard._reporting.report.summary import Group, SpendReport

__all__ = ["percent", "period_text", "render_text"]

_BAR_CELLS = 20


def percent(share: float | None, *, signed: bool = False) -> str:
    """``12.3%`` (``+12.3%`` when signed), or ``-`` when there is nothing to divide."""
    if share is None:
        return "-"
    return f"{share * 100:+.1f}%" if signed else f"{share * 100:.1f}%"


def period_text(report: SpendReport, *, joiner: str, open_end: str) -> str:
    """The days a report covers, both included (``until`` is exclusive); empty for all time."""
    if report.since is None and report.until is None:
        return ""
    first = report.since.date().isoformat() if report.since else open_end
    last = ((report.until - timedelta(microseconds=1)).date().isoformat() if report.until
            else open_end)
    return f"{first}{joiner}{last}"


def render_text(report: SpendReport, *, width: int | None = None, colour: bool = False) -> str:
    """The report as aligned text, ending in a newline; with ``width``, tables fit in that
    many columns (long names wrap onto more lines, never cut); with ``colour``, budget bars
    are green under 80 %, yellow to 100 % and red over (ANSI colours, for a terminal)."""
    usd = format_usd

    total = report.total
    period = period_text(report, joiner=" to ", open_end="...") or "all time"
    lines = [f"spendguard report: {period} (UTC), ledger {printable(report.ledger_url)}", ""]
    lines.append(f"Spent {usd(total.spent_usd)} on {total.calls:,} calls; cache hit "
                 f"{percent(total.cache_hit_rate)} of input tokens; batch "
                 f"{percent(report.batch_share)} of spend")
    extras = []
    if report.recovered_usd:
        extras.append(f"{usd(report.recovered_usd)} charged for calls whose process vanished")
    if report.adjustments_usd:
        extras.append(f"{usd(report.adjustments_usd)} of adjustments")
    if report.overrun_calls:
        calls = f"{report.overrun_calls:,} call{'' if report.overrun_calls == 1 else 's'}"
        extras.append(f"{usd(report.overrun_usd)} on {calls} that cost more than the worst "
                      "case reserved (status overrun)")
    if extras:
        lines.append("Includes " + "; ".join(extras) + ".")
    lines.append("")
    header = (f"BY {report.by.upper()}", "CALLS", "INPUT TOK", "OUTPUT TOK", "CACHE HIT",
              "SPENT", "SHARE")
    rows = [_group_row(group, total.spent_usd, usd) for group in report.groups]
    rows.append(("TOTAL", f"{total.calls:,}", f"{total.input_tokens:,}",
                 f"{total.output_tokens:,}", percent(total.cache_hit_rate),
                 usd(total.spent_usd), "100.0%" if total.spent_usd else "-"))
    lines += _aligned(header, rows=rows, width=width)
    if report.overlapping:
        lines.append(f"(a call in several {report.by}s counts in each; TOTAL counts it once)")
    if report.budgets:
        budget_lines = _aligned(("BUDGET", "PERIOD", "SPENT", "LIMIT", "USED", ""), left=2,
                                width=width, rows=[
            (b.scope, _period_label(b.period_key), usd(b.spent_usd),
             "unlimited" if b.limit_usd is None else usd(b.limit_usd), percent(b.used),
             _bar(b.used)) for b in report.budgets])
        if colour:
            budget_lines = _coloured_bars(budget_lines)
        lines += ["", *budget_lines]
    overflowing = [b.scope for b in report.budgets if b.scope.endswith(OVERFLOW_SUFFIX)]
    if overflowing:
        lines.append(f"({', '.join(overflowing)}: values past their template's max_children, "
                     f"sharing one budget)")
    if any(b.folded for b in report.budgets):
        lines.append("(a \"* (N more)\" row sums the children past the top that spent most; "
                     "--all-scopes lists them)")
    if report.on_track:
        lines += ["", *_aligned(("ON TRACK", "PERIOD", "SPENT", "FORECAST", "LIMIT", "STATUS",
                                 "RUNS OUT", "LAST PERIOD", "REFUSED", "WOULD REFUSE"),
                                left=2, width=width, rows=[
            (t.scope, f"{t.period_key} ({t.elapsed_share * 100:.0f}%)", usd(t.spent_usd),
             usd(t.forecast_usd), "unlimited" if t.limit_usd is None else usd(t.limit_usd),
             t.status, "-" if t.runs_out_at is None else f"{t.runs_out_at:%Y-%m-%d %H:%M}",
             f"{t.last_period_key} {usd(t.last_period_usd)}",
             f"{t.refused_calls:,} {usd(t.refused_usd)}",
             f"{t.would_refuse_calls:,} {usd(t.would_refuse_usd)}") for t in report.on_track])]
        lines.append("(forecast: spent so far + the last 7 days' daily rate (6 hours' for a "
                     "daily budget) x the time left)")
    if report.runaway_trips:
        lines += ["", *_aligned(("RUNAWAY TRIPS", "RULE", "TRIPS"), width=width, rows=[
            (scope, rule, f"{count:,}")
            for (scope, rule), count in sorted(report.runaway_trips.items())])]
    if report.would_refuse:
        lines.append("")
        lines += [f"Observe mode: budget {w.scope!r} would have refused {w.calls:,} "
                  f"call{'' if w.calls == 1 else 's'}, {usd(w.spent_usd)}"
                  for w in report.would_refuse]
    if report.estimates:
        lines += ["", *_aligned(("ESTIMATES", "CALLS", "INPUT ERROR", "RESERVED", "ACTUAL"),
                                width=width, rows=[
            (e.model, f"{e.calls:,}", percent(e.input_error, signed=True), usd(e.reserved_usd),
             usd(e.actual_usd)) for e in report.estimates])]
    return "\n".join(line.rstrip() for line in lines) + "\n"


def _group_row(group: Group, whole: Decimal,
               usd: Callable[[Decimal], str]) -> tuple[str, ...]:
    share = float(group.spent_usd / whole) if whole else None
    return (group.name, f"{group.calls:,}", f"{group.input_tokens:,}",
            f"{group.output_tokens:,}", percent(group.cache_hit_rate), usd(group.spent_usd),
            percent(share))


def _period_label(key: str) -> str:
    """``"1h to 10:06"`` for a rolling window's step key (the window ending with that step)."""
    label, at, start_s = key.partition("@")
    if not at or not start_s.isdigit():
        return key
    seconds = window_seconds(label) or 0
    end = datetime.fromtimestamp(int(start_s) + seconds // WINDOW_STEPS, UTC)
    return f"{label} to {end:%Y-%m-%d %H:%M:%S}"


_ANSI = {"green": "\x1b[32m", "yellow": "\x1b[33m", "red": "\x1b[31m"}
_ANSI_RESET = "\x1b[0m"


def _coloured_bars(lines: list[str]) -> list[str]:
    """Budget rows with their bar coloured by how full the budget is."""
    out = lines[:1]
    for line in lines[1:]:
        at = line.find("#") if "#" in line else line.find("....")
        if at < 0:
            out.append(line)
            continue
        bar = line[at:]
        filled = bar.count("#")
        colour = ("red" if bar.endswith("over") else
                  "yellow" if filled >= 0.8 * _BAR_CELLS else "green")
        out.append(f"{line[:at]}{_ANSI[colour]}{bar}{_ANSI_RESET}")
    return out


def _bar(share: float | None) -> str:
    if share is None:
        return ""
    filled = min(_BAR_CELLS, max(0, round(share * _BAR_CELLS)))
    return "#" * filled + "." * (_BAR_CELLS - filled) + (" over" if share > 1 else "")


def _aligned(header: Sequence[str], *, rows: Sequence[Sequence[str]], left: int = 1,
             width: int | None = None) -> list[str]:
    """Columns padded to fit: the first ``left`` and any unnamed one left-aligned, numbers
    right-aligned; names wrapped when the table must fit ``width``."""
    return aligned(header, rows, left=left, width=width)
