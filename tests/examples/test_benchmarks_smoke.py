"""The benchmark scripts still run: each in its tiny ``--quick`` mode, end to end.

Only that they finish and print their tables is checked, never a timing: the figures of a quick
run mean nothing, and wall-clock assertions on a shared machine would be flaky. The peers'
venv is switched off here, so LiteLLM's rows take their "n/a" path; Redis rows run when a
local server answers and say "n/a" otherwise.

Each script runs once: ``estimation.py`` through the runner's test, the others on their own.
The scripts share the ``bench:`` keys in Redis db 15 and each clears them, so this module's
tests run one after another on one xdist worker.
"""

from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.paths import REPO
from tests.postgres_helpers import requires_postgres
from tests.redis_cluster_helpers import requires_redis_cluster_tools
from tests.redis_helpers import requires_redis

pytestmark = pytest.mark.xdist_group("benchmarks")

BENCHMARKS = REPO / "benchmarks"
# estimation.py is run by the runner's test.
OWN_SCRIPTS = ["overhead.py", "overhead_loopback.py", "enforcement.py", "import_time.py",
               "savings.py", "profile_call.py", "idle_wait.py"]
COMPARES_WITH_PEERS = {"overhead_loopback.py", "enforcement.py", "import_time.py"}


def run_script(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, SPENDGUARD_HOME=str(tmp_path), SPENDGUARD_BENCH_PEERS_PYTHON="none")
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=600, check=False)


def benchmark_module(name: str) -> Any:
    """A module of ``benchmarks/`` (they import one another by plain name)."""
    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))
    return importlib.import_module(name)


def harness() -> Any:
    return benchmark_module("harness")


@pytest.mark.parametrize("script", OWN_SCRIPTS)
def test_each_benchmark_runs_in_quick_mode_and_prints_a_table(tmp_path: Path,
                                                              script: str) -> None:
    result = run_script(tmp_path, str(BENCHMARKS / script), "--quick")
    assert result.returncode == 0, result.stderr[-3000:]
    # Nothing the run left behind fails on its way out (an unclosed client, a thread).
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    assert "\n|-" in result.stdout
    if script in COMPARES_WITH_PEERS:  # without the peers' venv their rows say so
        # ("n/a (not installed: ..." or "n/a (<peer> not installed: ..."; LiteLLM itself may
        # be importable here, from the frameworks test extra)
        assert re.search(r"n/a \((\S+ )?not installed", result.stdout), result.stdout[-2000:]


def test_the_runner_reports_machine_command_and_each_section(tmp_path: Path) -> None:
    """Also the quick run of ``estimation.py``: it finishes and its table is in the report."""
    report = tmp_path / "report.md"
    result = run_script(tmp_path, str(BENCHMARKS / "run_all.py"), "--quick", "--only",
                        "estimation", "--output", str(report))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    text = report.read_text()
    for expected in ("- machine:", "- date:", "- command:", "## estimation"):
        assert expected in text
    estimation = text.split("## estimation", 1)[1]
    assert "benchmarks/estimation.py --quick" in estimation
    assert "\n|-" in estimation


def test_the_ledger_throughput_benchmark_prints_a_row_per_backend(tmp_path: Path) -> None:
    """Its smallest run: three calls in one process per backend (Redis and PostgreSQL when
    their servers answer)."""
    no_redis = requires_redis.args[0]  # the skip condition: no server on 127.0.0.1:6379
    no_postgres = requires_postgres.args[0]  # none on 127.0.0.1:5432
    backends = ["memory", "sqlite", *([] if no_redis else ["redis"]),
                *([] if no_postgres else ["postgres"])]
    result = run_script(tmp_path, str(BENCHMARKS / "ledger_throughput.py"), "--calls", "3",
                        "--processes", "1", "--sqlite-pairs", "20", "--backends", *backends)
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    assert lines[0].split()[:3] == ["backend", "processes", "reservations/s"]
    assert [line.split()[:2] for line in lines[1:1 + len(backends)]] == [[b, "1"]
                                                                          for b in backends]
    counts = re.fullmatch(r"SQLite, per reserve \+ settle pair \(counts, the same on any "
                          r"machine\): ([\d.]+) statements, ([\d.]+) WAL pages of 1,024 bytes",
                          lines[-2])
    assert counts is not None, lines[-2]
    assert float(counts[1]) >= 2 and float(counts[2]) >= 2  # at least a commit each way
    # The same pages by what they hold: they add up to the count above.
    owners = re.fullmatch(r"SQLite, WAL pages per pair by what they hold: (.+)", lines[-1])
    assert owners is not None, lines[-1]
    parts = dict(part.rsplit(" ", 1) for part in owners[1].split(", "))
    assert {"calls", "totals"} <= set(parts)
    assert abs(sum(float(count) for count in parts.values()) - float(counts[2])) < 0.01
    floor = re.fullmatch(r"SQLite, one process, µs per reserve \+ settle pair: the ledger "
                         r"([\d,]+), the same writes on a bare connection ([\d,]+) \(SQLite's "
                         r"floor; [\d.]+x\)", lines[-4])
    assert floor is not None, lines[-4]
    paced = re.fullmatch(r"SQLite, a pair every 1 ms \(20 pairs\), µs: median ([\d,]+), p99 "
                         r"([\d,]+), p99.9 ([\d,]+), longest ([\d,]+)", lines[-3])
    assert paced is not None, lines[-3]
    median, longest = (int(paced[i].replace(",", "")) for i in (1, 4))
    assert 0 < median <= longest


def test_the_ledger_scale_benchmark_prints_a_row_per_read_command_and_the_floor(
        tmp_path: Path) -> None:
    """Its smallest run: a ledger of 40 records, each command once."""
    result = run_script(tmp_path, str(BENCHMARKS / "ledger_scale.py"), "--records", "40")
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.startswith("ledger: 40 records")
    rows = [line.split("|")[1].strip() for line in result.stdout.splitlines()
            if line.startswith("| ") and "---" not in line][1:]
    assert rows == ["ledger verify", "report", "report --json", "report --html",
                    "export focus --aggregate day", "export csv", "export jsonl",
                    "export focus", "floor: sqlite3 sum() GROUP BY model, day"]
    assert all(line.rstrip().endswith("| ok     |") for line in result.stdout.splitlines()
               if line.startswith("| ") and ("report" in line or "export" in line))


@requires_redis_cluster_tools
def test_the_redis_cluster_benchmark_prints_its_two_rows(tmp_path: Path) -> None:
    """Its smallest run: three calls in one process, on the cluster it starts and stops."""
    result = run_script(tmp_path, str(BENCHMARKS / "redis_cluster.py"), "--calls", "3",
                        "--processes", "1")
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    assert lines[0].split()[:2] == ["ledgers", "processes"]
    assert lines[1].startswith("1 ledger (1 primary)")
    assert lines[2].startswith("3 ledgers (1 per primary)")


@requires_redis_cluster_tools
def test_the_durable_settles_benchmark_prints_a_row_with_and_without_waiting(
        tmp_path: Path) -> None:
    result = run_script(tmp_path, str(BENCHMARKS / "redis_durable.py"), "--calls", "5")
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    assert lines[0].split()[0] == "settles"
    assert lines[1].startswith("no wait") and lines[2].startswith("wait_replicas=1")


def test_the_runner_rejects_an_unknown_script_name(tmp_path: Path) -> None:
    result = run_script(tmp_path, str(BENCHMARKS / "run_all.py"), "--only", "nonesuch")
    assert result.returncode == 2
    assert "unknown" in result.stderr


def test_round_robin_rotates_which_variant_goes_first() -> None:
    order: list[str] = []

    def variant(name: str) -> Any:
        def one() -> float:
            order.append(name)
            return 1.0
        return one

    samples = harness().round_robin({"a": variant("a"), "b": variant("b"), "c": variant("c")},
                                    rounds=3, warmup=1)
    assert order == ["a", "b", "c", "b", "c", "a", "c", "a", "b", "a", "b", "c"]
    assert {name: len(values) for name, values in samples.items()} == {"a": 3, "b": 3, "c": 3}


def test_percentile_is_nearest_rank_and_overhead_is_the_median_paired_difference() -> None:
    h = harness()
    values = [float(v) for v in range(1, 101)]
    assert h.percentile(values, 0.99) == 99.0
    assert h.percentile([5.0], 0.99) == 5.0
    assert h.paired_overhead_s([3.0, 10.0, 4.0], [1.0, 1.0, 1.0]) == 3.0


def test_markdown_tables_pad_every_column() -> None:
    table = harness().markdown_table(["a", "long header"], [["wide cell", "x"]])
    lines = table.splitlines()
    assert lines[0] == "| a         | long header |"
    assert lines[1] == "|-----------|-------------|"
    assert len({len(line) for line in lines}) == 1


def test_a_throughput_worker_that_dies_before_the_start_fails_the_run_at_once() -> None:
    """One worker cannot open its ledger (nothing listens on port 1): the run stops with a
    message instead of waiting for that worker forever."""
    throughput = benchmark_module("ledger_throughput")
    with pytest.raises(SystemExit, match="a worker exited before the run began"):
        throughput.measure_cpu(["memory://", "redis://127.0.0.1:1/0"], 3)
