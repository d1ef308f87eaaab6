"""The HTML report page: self-contained, escaped, and its charts drawn in a real browser."""

from __future__ import annotations

import re
from decimal import Decimal as D
from pathlib import Path

import pytest

import spendguard
from spendguard import Budget, report_spend, write_report_html
from spendguard._reporting.report import render_html
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
    assert page.count("<svg") >= 5  # the budget panel is HTML (it wraps), the charts SVG


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
        write_report_html(report_spend(url), tmp_path / "missing-dir" / "r.html")


@pytest.mark.browser
@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium is not installed "
                                              "(apt-get install chromium)")
def test_the_charts_render_in_a_headless_browser(url: str, tmp_path: Path) -> None:
    varied_ledger(url)
    page = write_report_html(report_spend(url, by="scope"), tmp_path / "report.html")
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


_MEASURE = """<script>
const panel = document.querySelector('.budgets');
const box = panel.getBoundingClientRect();
const rows = [...panel.querySelectorAll('li')].map(li => ({
  name: li.querySelector('.name').textContent,
  figures: li.querySelector('.figures').textContent,
  inside: [...li.querySelectorAll('*')].every(el => {
    const r = el.getBoundingClientRect();
    return r.left >= box.left - 1 && r.right <= box.right + 1
      && el.scrollWidth <= el.clientWidth + 1;
  }),
}));
const pre = document.createElement('pre');
pre.id = 'measured';
pre.textContent = JSON.stringify({rows, page: document.documentElement.clientWidth,
                                  panel: box.right});
document.body.appendChild(pre);
</script>"""


def _measure(page: Path, tmp_path: Path, width: int) -> dict[str, object]:
    import html
    import json
    import subprocess

    probe = tmp_path / f"probe-{width}.html"
    probe.write_text(page.read_text(encoding="utf-8").replace("</body>", _MEASURE + "</body>"),
                     encoding="utf-8")
    assert CHROMIUM is not None
    dom = subprocess.run([CHROMIUM, "--headless", "--disable-gpu", "--no-sandbox",
                          f"--user-data-dir={tmp_path / 'chromium'}", "--dump-dom",
                          f"--window-size={width},2000", probe.resolve().as_uri()],
                         check=True, capture_output=True, text=True, timeout=120).stdout
    found = re.search(r'<pre id="measured">(.*?)</pre>', dom, re.S)
    assert found is not None, dom[-500:]
    result: dict[str, object] = json.loads(html.unescape(found[1]))
    return result


@pytest.mark.browser
@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium is not installed "
                                              "(apt-get install chromium)")
def test_the_budget_panel_is_sorted_by_fill_and_never_cuts_a_name_or_a_figure(
        url: str, tmp_path: Path) -> None:
    clock = FakeClock()
    long = "customer-success-escalations-emea-" * 3
    fills = {"project:alpha": "0.10", f"project:{long}north": "0.95",
             f"project:{long}south": "0.50", "team:z": "0.80"}
    for scope, spent in fills.items():
        book(Budget("250000" if scope == "team:z" else "1", ledger=url, scope=scope,
                    clock=clock, warn_at=None),
             "gpt-4o-mini", {"input": 10},
             actual_usd=str(D(spent) * (250000 if scope == "team:z" else 1)),
             worst_usd=str(D(spent) * (250000 if scope == "team:z" else 1)))
    page = write_report_html(report_spend(url, by="scope"), tmp_path / "report.html")
    for width in (1400, 390):
        measured = _measure(page, tmp_path, width)
        rows = measured["rows"]
        assert isinstance(rows, list)
        names = [row["name"].split(" ")[0] for row in rows]
        assert names == [f"project:{long}north", "team:z", f"project:{long}south",
                         "project:alpha"], width
        assert all(row["inside"] for row in rows), (width, rows)
        assert "$200,000.00 of $250,000.00 · 80" in rows[1]["figures"]
