"""The report page's look: colours and CSS, kept apart from the page's content."""

from __future__ import annotations

__all__ = ["BATCH_COLOR", "CACHE_COLOR", "CSS", "ESTIMATE_COLOR", "OTHER_COLOR", "PALETTE",
           "STANDARD_COLOR", "status_color"]

PALETTE = ("#2563eb", "#f59e0b", "#7c3aed", "#db2777", "#0891b2", "#a16207")
"""Model colours, distinguishable in print and for common colour-vision deficiencies."""
OTHER_COLOR = "#94a3b8"
# Measures that are not models get colours of their own, so no chart reads as a model's.
CACHE_COLOR, ESTIMATE_COLOR = "#0d9488", "#475569"
BATCH_COLOR, STANDARD_COLOR = "#4f46e5", "#cbd5e1"
_OK, _NEAR, _OVER = "#16a34a", "#f59e0b", "#dc2626"


def status_color(used: float | None) -> str:
    """Green below 80 % of a limit, amber up to it, red beyond."""
    if used is None or used < 0.8:
        return _OK
    return _NEAR if used <= 1 else _OVER


CSS = """
:root { color-scheme: light; }
* { box-sizing: border-box; }
body { margin: 0; background: #f8fafc; color: #0f172a;
  font: 14px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial,
  sans-serif; font-variant-numeric: tabular-nums; }
main { max-width: 1120px; margin: 0 auto; padding: 32px 28px 48px; }
header { display: flex; justify-content: space-between; align-items: flex-end; gap: 24px;
  padding-bottom: 20px; border-bottom: 1px solid #e2e8f0; margin-bottom: 24px; }
h1 { margin: 0; font-size: 26px; letter-spacing: -0.01em; }
h2 { margin: 0 0 2px; font-size: 16px; }
.meta, .note { margin: 4px 0 0; color: #64748b; }
.note { margin: 0 0 14px; font-size: 13px; }
code { font-size: 12px; background: #eef2f7; padding: 1px 5px; border-radius: 4px;
  word-break: break-all; }
.total { text-align: right; }
.total span, .card span { display: block; color: #64748b; font-size: 12px;
  text-transform: uppercase; letter-spacing: .06em; }
.total strong { font-size: 34px; letter-spacing: -0.02em; }
.cards { display: grid; grid-template-columns: repeat(4, 1fr); gap: 16px; margin-bottom: 20px; }
.card, section { background: #fff; border: 1px solid #e2e8f0; border-radius: 12px;
  box-shadow: 0 1px 2px rgba(15, 23, 42, .04); }
.card { padding: 14px 18px; }
.card strong { display: block; font-size: 24px; margin: 2px 0; }
.card small { color: #64748b; }
section { padding: 18px 22px 20px; margin-bottom: 20px; overflow: hidden; }
.pair { display: grid; grid-template-columns: 3fr 2fr; gap: 20px; }
.pair section { margin-bottom: 20px; }
.legend { display: flex; flex-wrap: wrap; gap: 6px 16px; margin-bottom: 10px;
  font-size: 12px; color: #334155; }
.legend i { display: inline-block; width: 10px; height: 10px; border-radius: 2px;
  margin-right: 6px; vertical-align: -1px; }
.ring { display: flex; align-items: center; gap: 18px; }
.ring svg { width: 170px; flex: none; }
.ring p { margin: 0; color: #334155; }
.empty { color: #94a3b8; font-style: italic; margin: 8px 0; }
table { width: 100%; border-collapse: collapse; font-size: 13px; }
th, td { padding: 7px 10px; text-align: right; border-bottom: 1px solid #eef2f7; }
th:first-child, td:first-child { text-align: left; overflow-wrap: anywhere; }
thead th { color: #64748b; font-weight: 600; font-size: 12px; text-transform: uppercase;
  letter-spacing: .04em; border-bottom: 1px solid #cbd5e1; }
tbody tr:nth-child(even) { background: #f8fafc; }
tfoot th { border-top: 2px solid #cbd5e1; border-bottom: 0; }
.budgets { list-style: none; margin: 0; padding: 0; }
.budgets li { display: grid; grid-template-columns: minmax(0, 2fr) minmax(120px, 3fr)
  minmax(0, 2fr); gap: 4px 16px; align-items: center; padding: 8px 0;
  border-bottom: 1px solid #eef2f7; }
.budgets .name { overflow-wrap: anywhere; font-weight: 600; }
.budgets .period { color: #64748b; font-weight: 400; white-space: nowrap; }
.budgets .meter { height: 12px; background: #eef2f7; border-radius: 6px; overflow: hidden; }
.budgets .meter i { display: block; height: 100%; }
.budgets .figures { overflow-wrap: anywhere; text-align: right; }
.budgets .figures span { display: block; }
.budgets .last { color: #64748b; font-size: 12px; }
.outside { margin: 12px 0 0; }
footer { color: #94a3b8; font-size: 12px; text-align: center; margin-top: 8px; }
@media (max-width: 760px) { .cards, .pair { grid-template-columns: 1fr 1fr; }
  .budgets li { grid-template-columns: 1fr; } .budgets .figures { text-align: left; }
  .pair { grid-template-columns: 1fr; } header { flex-direction: column;
  align-items: flex-start; } .total { text-align: left; } }
@media print { body { background: #fff; } section, .card { box-shadow: none;
  break-inside: avoid; } }
"""
