"""The reserving guard's goals, read off one run of the benchmarks that measure them.

``run_all.py --goals`` runs ``profile_call``, ``overhead_loopback``, ``enforcement`` and
``ledger_throughput`` and ends its report with the table :func:`goals_table` makes from their
output: each goal, the figure measured in that run, and whether it is met. The goals:

- added time over loopback (non-streaming), spendguard ÷ the fastest installed peer in the
  same rounds: memory ≤ 1.5×, SQLite ≤ 2.5×, Redis ≤ 3.5× (with the run's 90 % interval);
- Python function calls added per guarded call (memory ledger) at most half of +437, the
  count when the goals were set (BENCHMARKS.md, "Fewer calls per guarded call");
- per SQLite reserve + settle pair: at most 8 statements and 6 KiB of WAL pages;
- SQLite pairs a second at least 1.8× a baseline's, measured in the same run: only with
  ``--baseline DIR`` (an older checkout whose library the same script then measures).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Goal", "goals_table", "parse_goals"]

_CALLS_WHEN_SET = 437
_LOOPBACK = {"memory": 1.5, "sqlite": 2.5, "redis": 3.5}
# "memory ledger 2.3× (1.9 to 2.7×)"; runs before the interval was printed have no brackets.
_RATIO = re.compile(r"(\w+) ledger (-?[\d.]+)×(?: \((-?[\d.]+|nan) to (-?[\d.]+|nan)×\))?")
_ADDED = re.compile(r"\(\+([\d,]+)\)")
_COUNTS = re.compile(r"SQLite, per reserve \+ settle pair .*: ([\d.]+) statements, ([\d.]+) WAL "
                     r"pages of ([\d,]+) bytes")
_SQLITE_ROW = re.compile(r"^sqlite\s+1\s+([\d,]+)\s", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class Goal:
    """One goal's line: what it asks, what the run measured, and whether that meets it."""

    goal: str
    measured: str
    met: bool | None  # None: not measured in this run


def _number(text: str) -> float:
    return float(text.replace(",", ""))


def parse_goals(sections: dict[str, str], baseline_throughput: str | None = None) -> list[Goal]:
    """The goals as measured by the scripts whose outputs are ``sections`` (by script name);
    ``baseline_throughput``: ``ledger_throughput``'s output on the baseline's library."""
    goals: list[Goal] = []
    loopback = sections.get("overhead_loopback", "")
    line = next((row for row in loopback.splitlines() if row.startswith("- non-streaming:")),
                "")
    found = {kind: (float(ratio), low, high) for kind, ratio, low, high in _RATIO.findall(line)}
    for kind, limit in _LOOPBACK.items():
        asked = f"added over loopback ÷ the fastest peer, {kind} ledger ≤ {limit}×"
        if kind not in found:
            goals.append(Goal(asked, "not measured", None))
            continue
        ratio, low, high = found[kind]
        interval = f" ({low} to {high}×)" if low else ""
        goals.append(Goal(asked, f"{ratio:.1f}×{interval}", 0 < ratio <= limit))
    profile = sections.get("profile_call", "")
    calls_row = next((row for row in profile.splitlines() if "Python function calls" in row), "")
    added = _ADDED.findall(calls_row)
    asked = f"Python function calls added per call, memory ledger ≤ half of +{_CALLS_WHEN_SET}"
    goals.append(Goal(asked, f"+{added[0]}", _number(added[0]) <= _CALLS_WHEN_SET / 2)
                 if added else Goal(asked, "not measured", None))
    throughput = sections.get("ledger_throughput", "")
    counts = _COUNTS.search(throughput)
    if counts is None:
        goals.append(Goal("SQLite statements per reserve + settle ≤ 8", "not measured", None))
        goals.append(Goal("SQLite WAL per reserve + settle ≤ 6 KiB", "not measured", None))
    else:
        statements = float(counts[1])
        kib = float(counts[2]) * _number(counts[3]) / 1024
        goals.append(Goal("SQLite statements per reserve + settle ≤ 8", f"{statements:.1f}",
                          statements <= 8))
        goals.append(Goal("SQLite WAL per reserve + settle ≤ 6 KiB", f"{kib:.1f} KiB",
                          kib <= 6))
    ours = _SQLITE_ROW.search(throughput)
    theirs = _SQLITE_ROW.search(baseline_throughput or "")
    asked = "SQLite pairs/s, 1 process, ≥ 1.8× the baseline's"
    if ours is None or theirs is None:
        goals.append(Goal(asked, "no baseline (--baseline DIR)" if ours else "not measured",
                          None))
    else:
        rate, before = _number(ours[1]), _number(theirs[1])
        goals.append(Goal(asked, f"{rate / before:.2f}× ({rate:,.0f} against {before:,.0f})",
                          rate >= 1.8 * before))
    return goals


def goals_table(goals: list[Goal]) -> str:
    """The goals as a markdown table."""
    rows = ["| goal | measured | met |", "|---|---|---|"]
    verdict = {True: "yes", False: "**no**", None: "—"}
    rows += [f"| {g.goal} | {g.measured} | {verdict[g.met]} |" for g in goals]
    return "\n".join(rows)
