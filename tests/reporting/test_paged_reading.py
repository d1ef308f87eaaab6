"""Exports and reports stream the ledger: read a page at a time, they write exactly what they
wrote before, in every format and with ``aggregate="day"``.

The ledger's pages are made two records long, so three days of a dozen calls cross a page
boundary every second record and a day boundary inside pages.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

import spendguard
from tests.report_helpers import varied_ledger

_NOW = datetime(2026, 5, 20, 12, tzinfo=UTC)
_EXPORTS = [("csv", "call"), ("jsonl", "call"), ("focus", "call"), ("focus", "day")]


def _outputs(url: str, folder: Path) -> dict[str, object]:
    folder.mkdir()
    out: dict[str, object] = {}
    for format_, aggregate in _EXPORTS:
        path = folder / f"{format_}-{aggregate}"
        heard: list[int] = []
        result = spendguard.export_spend(path, format=format_,  # type: ignore[arg-type]
                                         ledger=url, aggregate=aggregate,  # type: ignore[arg-type]
                                         progress=heard.append)
        out[f"{format_}-{aggregate}"] = (path.read_bytes(), result.rows, result.total_usd)
        assert heard == list(range(1, 13))
    for by in ("model", "day", "tag", "scope"):
        report = spendguard.report_spend(url, by=by, now=_NOW)
        page = spendguard.write_report_html(report, folder / f"report-{by}.html")
        out[f"report-{by}"] = (report.as_dict(), spendguard.render_report_text(report),
                               page.read_bytes())
    return out


def test_every_export_and_report_is_the_same_read_two_records_at_a_time(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    varied_ledger(url)
    whole = _outputs(url, tmp_path / "whole")
    monkeypatch.setattr("spendguard._budget.ledger.sqlite._PAGE_ROWS", 2)
    assert _outputs(url, tmp_path / "paged") == whole
