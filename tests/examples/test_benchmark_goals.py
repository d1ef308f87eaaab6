"""``run_all.py --goals``: the reserving guard's goals read off the benchmarks' own output."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.paths import REPO

BENCHMARKS = REPO / "benchmarks"

# What the scripts print, cut to the lines the goals are read from (their formats as printed).
PROFILE = ("| phase | memory ledger | sqlite ledger | redis ledger |\n"
           "| Python function calls per call: guarded, raw (added) | 6,573, 6,355 (+218) | "
           "6,613, 6,355 (+258) | 6,703, 6,355 (+348) |\n")
LOOPBACK = ("- non-streaming: memory ledger 1.4× (1.2 to 1.7×), sqlite ledger 3.2× (2.9 to "
            "3.7×), redis ledger 5.0× (4.5 to 5.7×) (fastest peer: tokenwarden 0.1.0, 210 µs "
            "added; in brackets the 90 % interval of 1,000 resamples of the rounds)\n"
            "- stream: first chunk: memory ledger 9.9× (9.0 to 9.9×)\n")
THROUGHPUT = """backend  processes  reservations/s  µs per call  vs SQLite  client CPU  Redis CPU
sqlite           1           9,000        111.1      1.00x       100.0          -
sqlite           8           8,000        125.0      1.00x       120.0          -
""" + ("SQLite, per reserve + settle pair (counts, the same on any machine): 8.0 statements, "
       "6.3 WAL pages of 1,024 bytes\n")
BASELINE = THROUGHPUT.replace("9,000", "4,500")


def goals_module() -> Any:
    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))
    return importlib.import_module("goals")


def test_each_goal_is_read_off_the_output_of_the_script_that_measures_it() -> None:
    goals = goals_module()
    found = goals.parse_goals({"profile_call": PROFILE, "overhead_loopback": LOOPBACK,
                               "ledger_throughput": THROUGHPUT}, BASELINE)
    assert [(g.measured, g.met) for g in found] == [
        ("1.4× (1.2 to 1.7×)", True),  # the non-streaming line, not the stream's
        ("3.2× (2.9 to 3.7×)", False),
        ("5.0× (4.5 to 5.7×)", False),
        ("+218", True),  # the memory ledger's column
        ("8.0", True),
        ("6.3 KiB", False),
        ("2.00× (9,000 against 4,500)", True),  # one process, against the baseline's
    ]
    table = goals.goals_table(found)
    assert table.splitlines()[0] == "| goal | measured | met |"
    assert "| SQLite WAL per reserve + settle ≤ 6 KiB | 6.3 KiB | **no** |" in table


def test_a_goal_whose_figure_is_missing_says_so_rather_than_passing() -> None:
    goals = goals_module()
    found = goals.parse_goals({"ledger_throughput": THROUGHPUT})
    assert [g.met for g in found[:4]] == [None] * 4  # no loopback nor profile output
    assert found[-1].measured == "no baseline (--baseline DIR)" and found[-1].met is None
    older = LOOPBACK.replace(" (1.2 to 1.7×)", "")  # a run from before the intervals
    assert goals.parse_goals({"overhead_loopback": older})[0].measured == "1.4×"


def test_a_baseline_without_goals_or_a_checkout_is_refused_with_the_fix(tmp_path: Path) -> None:
    env = dict(os.environ, SPENDGUARD_HOME=str(tmp_path), SPENDGUARD_BENCH_PEERS_PYTHON="none")
    for args in (["--baseline", str(REPO)], ["--goals", "--baseline", str(tmp_path)]):
        done = subprocess.run([sys.executable, str(BENCHMARKS / "run_all.py"), *args],
                              capture_output=True, text=True, env=env, cwd=REPO, timeout=120,
                              check=False)
        assert done.returncode == 2
        assert "--baseline: give it with --goals, naming a checkout of spendguard" in done.stderr
        assert "Traceback" not in done.stderr
