"""The HTML report page: self-contained, escaped, and its charts drawn in a real browser."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import spendguard
from spendguard._budget.budget import Budget
from spendguard._reporting.report import render_html, report_spend, write_html
from spendguard._reporting.report.page_style import (
    BATCH_COLOR,
    CACHE_COLOR,
    ESTIMATE_COLOR,
    PALETTE,
)
from tests.finance_helpers import book
from tests.ledger_helpers import FakeClock
from tests.report_helpers import CHROMIUM, png_pixels, rgb, screenshot, varied_ledger


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'ledger.db'}"


def test_the_page_needs_no_network_and_runs_no_script(url: str) -> None:
    varied_ledger(url)
    page = render_html(report_spend(url))
    assert page.startswith("<!DOCTYPE html>")
    assert "<script" not in page.lower()
    assert not re.search(r"\b(src|href)\s*=", page)
    assert "url(" not in page and "@import" not in page
    # The only URL is the SVG namespace, which browsers never fetch.
    assert set(re.findall(r"https?://[^\"' ]+", page)) == {"http://www.w3.org/2000/svg"}
    assert page.count("<svg") >= 6


def test_user_text_is_escaped(url: str) -> None:
    b = Budget("1", ledger=url, scope="<script>alert(1)</script>", clock=FakeClock())
    with spendguard.tags(team="<img onerror=x>"):
        book(b, "gpt-4o", {"input": 100})
    for by in ("scope", "tag", "model"):
        page = render_html(report_spend(url, by=by))
        assert "<script>alert" not in page and "<img" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in render_html(report_spend(url, by="scope"))


def test_an_empty_ledger_still_renders(url: str) -> None:
    spendguard.open_ledger(url)  # made, with nothing in it yet
    page = render_html(report_spend(url))
    assert "No spend recorded in this period." in page
    assert "$0.00" in page


def test_write_html_reports_an_unwritable_path(url: str, tmp_path: Path) -> None:
    spendguard.open_ledger(url)
    with pytest.raises(spendguard.ConfigError, match=r"^html: cannot write"):
        write_html(report_spend(url), tmp_path / "missing-dir" / "r.html")


@pytest.mark.browser
@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium is not installed "
                                              "(apt-get install chromium)")
def test_the_charts_render_in_a_headless_browser(url: str, tmp_path: Path) -> None:
    varied_ledger(url)
    page = write_html(report_spend(url, by="scope"), tmp_path / "report.html")
    shot = tmp_path / "shot.png"
    # Tall enough for every chart however the page wraps (the ledger's path is in its header).
    screenshot(page, shot, width=1200, height=2400)
    pixels = png_pixels(shot)
    # Solid fills come out in their exact colours; each chart must have painted an area.
    drawn = {
        "spend over time and by model (first model)": pixels[rgb(PALETTE[0])],
        "spend over time and by model (second model)": pixels[rgb(PALETTE[1])],
        "budgets (green: under 80 %)": pixels[rgb("#16a34a")],
        "estimate vs actual": pixels[rgb(ESTIMATE_COLOR)],
        "batch share ring": pixels[rgb(BATCH_COLOR)],
        "cache hit rate": pixels[rgb(CACHE_COLOR)],
    }
    too_small = {chart: count for chart, count in drawn.items() if count < 500}
    assert not too_small, f"charts that did not render: {too_small}"
