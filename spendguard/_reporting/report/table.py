"""A spend report as plain text for a terminal: a summary line, a table, the budgets."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from spendguard._budget.templates import OVERFLOW_SUFFIX
from spendguard._core.money import format_usd
from spendguard._core.periods import WINDOW_STEPS, window_seconds
from spendguard._core.terminal import printable
from spendguard._reporting.report.summary import Group, SpendReport

__all__ = ["money_places", "percent", "period_text", "render_text"]

_BAR_CELLS = 20


def money_places(report: SpendReport) -> int:
    """Cents once the money is large enough to read that way, else four places."""
    return 2 if abs(report.total_usd) >= 10 else 4


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


def render_text(report: SpendReport) -> str:
    """The report as aligned text, ending in a newline."""
    places = money_places(report)

    def usd(amount: Decimal) -> str:
        return format_usd(amount, places=places)

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
    lines += _aligned(header, rows=rows)
    if report.overlapping:
        lines.append(f"(a call in several {report.by}s counts in each; TOTAL counts it once)")
    if report.budgets:
        lines += ["", *_aligned(("BUDGET", "PERIOD", "SPENT", "LIMIT", "USED", ""), left=2, rows=[
            (b.scope, _period_label(b.period_key), usd(b.spent_usd),
             "unlimited" if b.limit_usd is None else usd(b.limit_usd), percent(b.used),
             _bar(b.used)) for b in report.budgets])]
    overflowing = [b.scope for b in report.budgets if b.scope.endswith(OVERFLOW_SUFFIX)]
    if overflowing:
        lines.append(f"({', '.join(overflowing)}: values past their template's max_children, "
                     f"sharing one budget)")
    if any(b.folded for b in report.budgets):
        lines.append("(a \"* (N more)\" row sums the children past the top that spent most; "
                     "--all-scopes lists them)")
    if report.runaway_trips:
        lines += ["", *_aligned(("RUNAWAY TRIPS", "RULE", "TRIPS"), rows=[
            (scope, rule, f"{count:,}")
            for (scope, rule), count in sorted(report.runaway_trips.items())])]
    if report.would_refuse:
        lines.append("")
        lines += [f"Observe mode: budget {w.scope!r} would have refused {w.calls:,} "
                  f"call{'' if w.calls == 1 else 's'}, {usd(w.spent_usd)}"
                  for w in report.would_refuse]
    if report.estimates:
        lines += ["", *_aligned(("ESTIMATES", "CALLS", "INPUT ERROR", "RESERVED", "ACTUAL"), rows=[
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


def _bar(share: float | None) -> str:
    if share is None:
        return ""
    filled = min(_BAR_CELLS, max(0, round(share * _BAR_CELLS)))
    return "#" * filled + "." * (_BAR_CELLS - filled) + (" over" if share > 1 else "")


def _aligned(header: Sequence[str], *, rows: Sequence[Sequence[str]],
             left: int = 1) -> list[str]:
    """Columns padded to fit: the first ``left`` and any unnamed one left-aligned, numbers
    right-aligned."""
    # Names and tag values are the user's: neutralised before they are measured and padded.
    table = [tuple(header), *(tuple(printable(cell) for cell in row) for row in rows)]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    return ["  ".join(cell.ljust(widths[i]) if i < left or not header[i]
                      else cell.rjust(widths[i]) for i, cell in enumerate(row))
            for row in table]
