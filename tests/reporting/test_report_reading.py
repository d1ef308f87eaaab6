"""The HTML report as a person reads it: small days beside a large one, whole scope names, and
an input-estimate headline that says whose bound it is."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from spendguard import Budget, report_spend, write_report_html
from spendguard._reporting.report import render_html
from spendguard._reporting.report.page_style import PALETTE
from spendguard._reporting.report.svg import Bar, Series, bars, stacked_columns, wrap_label
from tests.finance_helpers import book
from tests.ledger_helpers import FakeClock
from tests.report_helpers import CHROMIUM, png_image, png_pixels, rgb, screenshot

LONG_SCOPE = "org/platform-engineering/search-relevance-experiments/weekly-reindex"


def _rect_heights(svg: str, color: str) -> list[float]:
    return [float(h) for h in re.findall(rf'height="([0-9.]+)" fill="{color}"', svg)]


def test_a_small_day_stays_visible_next_to_a_large_one() -> None:
    series = [Series("big", "#111111", [100.0, 0.0, 0.0]),
              Series("small", "#222222", [0.0, 0.02, 0.5])]
    svg = stacked_columns(["d1", "d2", "d3"], series, tick_text=lambda v, p: f"{v:.{p}f}")
    assert "(log scale)" in svg
    # Axis from 10^-2 (the decade below 0.02) to 10^2: four decades on 238 px.
    assert _rect_heights(svg, "#222222") == pytest.approx([238 * 0.30103 / 4, 238 * 1.69897 / 4],
                                                          abs=0.1)
    linear = stacked_columns(["d1", "d2"], [Series("s", "#333333", [1.0, 0.5])],
                             tick_text=lambda v, p: f"{v}")
    assert "(log scale)" not in linear
    assert _rect_heights(linear, "#333333") == pytest.approx([238 / 1.0, 119.0], abs=0.1)


def test_log_columns_split_between_models_in_proportion() -> None:
    series = [Series("a", "#111111", [90.0, 0.3]), Series("b", "#222222", [10.0, 0.1])]
    svg = stacked_columns(["d1", "d2"], series, tick_text=lambda v, p: f"{v}")
    a, b = _rect_heights(svg, "#111111"), _rect_heights(svg, "#222222")
    assert a[0] / b[0] == pytest.approx(9, rel=0.01) and a[1] / b[1] == pytest.approx(3, rel=0.01)


def test_long_labels_wrap_instead_of_being_cut() -> None:
    lines = wrap_label(LONG_SCOPE, 38)
    assert len(lines) == 2 and "".join(lines) == LONG_SCOPE
    assert all(len(line) <= 38 for line in lines)
    assert lines[0][-1] in "/-"  # broken after a separator
    svg = bars([Bar(LONG_SCOPE, 0.5, "#16a34a", "50 %")], scale=1.0, label_w=270)
    assert svg.count("<tspan") == 2 and "…" not in svg
    assert wrap_label("x" * 200, 20)[-1].endswith("…")  # only past three lines


def _two_providers(url: str) -> None:
    budget = Budget("5", ledger=url, scope="app", clock=FakeClock())
    book(budget, "gpt-4o", {"input": 1_000, "output": 10}, estimated_input=1_000)
    book(budget, "claude-sonnet-4-5", {"input": 1_000, "output": 10}, estimated_input=1_340)


def test_the_input_estimate_headline_names_each_providers_bound(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    _two_providers(url)
    page = render_html(report_spend(url))
    assert "Input estimate vs reported" in page and "+34.0% · +0.0%" in page
    assert "Anthropic&#x27;s upper bound · OpenAI&#x27;s exact count" in page
    assert "Input estimate error" not in page


def _skewed_ledger(url: str) -> None:
    clock = FakeClock()
    big = Budget("500", ledger=url, scope="big", clock=clock)
    small = Budget("1", ledger=url, scope=LONG_SCOPE, clock=clock)
    book(big, "gpt-4o", {"input": 1_000, "output": 10}, actual_usd="120")
    for _ in range(3):
        clock.advance(days=1)
        book(small, "gpt-4o-mini", {"input": 100, "output": 10}, actual_usd="0.02")


@pytest.mark.browser
@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium is not installed "
                                              "(apt-get install chromium)")
def test_small_days_and_wrapped_scope_names_render_in_a_browser(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    _skewed_ledger(url)
    report = report_spend(url, by="scope")
    page = write_report_html(report, tmp_path / "report.html")
    html = page.read_text(encoding="utf-8")
    assert "Log scale: the largest day is 6,000× the smallest" in html
    assert f'<div class="name">{LONG_SCOPE} <span class="period">' in html  # whole, as text
    shot = tmp_path / "shot.png"
    screenshot(page, shot, width=1200, height=900)
    pixels = png_pixels(shot)
    # The $0.02 days are drawn in the second model's colour; on a linear axis beside $120
    # they would be 0.04 px tall and paint nothing.
    assert pixels[rgb(PALETTE[1])] > 1_000
    assert pixels[rgb(PALETTE[0])] > 1_000
    assert f"{LONG_SCOPE[:20]}" in html and "…" not in html


def _text_bands(rows: list[list[tuple[int, int, int]]], right_px: int) -> int:
    """Lines of text left of ``right_px``: runs of inked rows apart by 3+ blank rows."""
    inked = [i for i, row in enumerate(rows) if any(sum(pixel) < 450 for pixel in row[:right_px])]
    return sum(1 for n, i in enumerate(inked) if n == 0 or i - inked[n - 1] > 3)


@pytest.mark.browser
@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium is not installed "
                                              "(apt-get install chromium)")
def test_a_long_label_is_drawn_on_two_lines_inside_its_column(tmp_path: Path) -> None:
    svg = bars([Bar(LONG_SCOPE, 0.5, "#16a34a", "50 %")], scale=1.0, label_w=270)
    page = tmp_path / "label.html"
    page.write_text(f'<!DOCTYPE html><html><body style="margin:0;background:#fff">'
                    f'<div style="width:960px">{svg}</div></body></html>', encoding="utf-8")
    shot = tmp_path / "label.png"
    screenshot(page, shot, width=960, height=200)
    rows = png_image(shot)
    # The label column is the first 270 of 960 px: two lines of text there, none cut off.
    assert _text_bands(rows, 258) == 2
    assert not any(sum(pixel) < 300 for row in rows for pixel in row[258:270])
