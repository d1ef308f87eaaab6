"""The planning and cache-ordering examples and the planning benchmark run offline."""

from __future__ import annotations

import runpy
import sys

import pytest

from tests.example_runs import RunExample, on_examples_worker
from tests.paths import REPO

ROOT = REPO


@on_examples_worker("fanout_plan")
def test_fanout_example_plans_approves_and_measures(run_example: RunExample) -> None:
    out = run_example("fanout_plan").stdout
    assert "approval asked: worst case" in out and "-> approved" in out
    assert "hit rate  97.8% measured, 97.8% expected" in out
    assert "as written" in out and "0.0%" in out


@on_examples_worker("cache_ordering")
def test_cache_ordering_example_shows_the_hit_rate_move(run_example: RunExample) -> None:
    out = run_example("cache_ordering").stdout
    assert "moved to the end of the last user message" in out
    assert "cache_order=False:\n  10 calls: hit rate 0.0%" in out
    # The default splits the time sentence out of the system prompt, within the system role.
    assert "cache_order=True:\n  10 calls: hit rate 89" in out
    assert ('default system: ["You answer refund questions. R", '
            '"Now: 2027-01-15T08:01:00Z, tra"]') in out
    assert "cache_order=CacheOrder(volatile_to_last_message=True):\n  10 calls: hit rate 89" in out
    assert "handbook sent first: True" in out


def test_planning_benchmark_prints_its_table(monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(sys, "argv", ["planning.py", "--requests", "40", "--documents", "2",
                                      "--document-tokens", "1200", "--raw-sample", "0",
                                      "--repeat", "1"])
    runpy.run_path(str(ROOT / "benchmarks" / "planning.py"), run_name="__main__")
    out = capsys.readouterr().out
    for row in ("raw tiktoken (40 requests)", "counting (count_request_tokens)", "plan",
                "plan, ordered for the cache"):
        assert row in out
