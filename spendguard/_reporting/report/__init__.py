"""Spend reports: a terminal table by model, scope, tag or day, and a self-contained HTML page.

``report_spend()`` reads a ledger once into a :class:`SpendReport` (exact money);
``render_text(report)`` and ``render_html(report)`` draw it; ``write_html(report, path)``
saves the page.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import date, datetime
from pathlib import Path

from spendguard._budget.ledger.base import Ledger
from spendguard._core.errors import ConfigError
from spendguard._core.money import exact_sums
from spendguard._core.private_files import write_private_text
from spendguard._reporting.export.filters import SpendFilter, ledger_of
from spendguard._reporting.report.folding import DEFAULT_TOP
from spendguard._reporting.report.html import render_html
from spendguard._reporting.report.summary import (
    GROUPINGS,
    BudgetUse,
    EstimateCheck,
    Group,
    OnTrack,
    SpendReport,
    WouldRefuse,
    check_by,
    summarise,
)
from spendguard._reporting.report.table import render_text

__all__ = [
    "GROUPINGS",
    "BudgetUse",
    "EstimateCheck",
    "Group",
    "OnTrack",
    "SpendReport",
    "WouldRefuse",
    "render_html",
    "render_text",
    "report_spend",
    "write_html",
]


def report_spend(ledger: Ledger | str | os.PathLike[str] | None = None, *, by: str = "model",
                 since: datetime | date | str | None = None,
                 until: datetime | date | str | None = None, scope: str | None = None,
                 tag: str | None = None, model: str | None = None,
                 top: int | None = DEFAULT_TOP, internal_tags: bool = False,
                 now: datetime | None = None,
                 progress: Callable[[int], object] | None = None) -> SpendReport:
    """A report of the ledger's spend, grouped ``by`` model, scope, tag, day or provider
    (``tag:KEY`` groups by one tag's values). Filters as in :func:`spendguard.export_spend`.
    Its ``total_usd`` is the exact sum of the records read. Children of one parent and kind
    (per-user scopes) past the ``top`` that spent most fold into one row; ``top=None`` shows
    them all. ``by="tag"`` shows the callers' tags only; ``internal_tags`` adds spendguard's
    own (``spendguard.call_id``, ...).

    ``report.on_track`` answers "are we on track?" for each budget with a daily or monthly
    period: spent so far, the forecast at the period's end, when the limit is reached at the
    current pace, the last period, refused and would-refuse calls — for the period containing
    ``now`` (an aware datetime; default: the current time).

    The records are read once, as a stream: memory holds one accumulator per group (model,
    scope, tag, day, budget), not the records, whatever the ledger's size. ``progress`` is
    told the number of records read so far after each one."""
    if top is not None and (isinstance(top, bool) or not isinstance(top, int) or top < 1):
        raise ConfigError(f"top: {top!r} is not a number of rows; use a whole number of at "
                          f"least 1, or None to show every scope")
    check_by(by)
    chosen = SpendFilter.of(since=since, until=until, scope=scope, tag=tag, model=model)
    opened = ledger_of(ledger)
    with exact_sums():
        return summarise(chosen.records(opened, progress=progress), by=by, ledger=opened,
                         since=chosen.since, until=chosen.until, top=top,
                         internal_tags=internal_tags, as_of=now)


def write_html(report: SpendReport, path: str | os.PathLike[str]) -> Path:
    """Save the report's page at ``path``; returns the path."""
    target = Path(path)
    try:
        write_private_text(target, render_html(report))
    except OSError as exc:
        raise ConfigError(f"html: cannot write {target}: {exc.strerror or exc}; check the path and "
                          f"its permissions") from exc
    return target
