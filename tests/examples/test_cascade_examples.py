"""The cascade example and benchmark run offline and print what they promise."""

from __future__ import annotations

import runpy
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.example_runs import RunExample, on_examples_worker
from tests.paths import REPO

ROOT = REPO
HEADER = ("dataset,id,category,prompt_chars,weak_model,strong_model,weak_correct,"
          "strong_correct,contaminated\n")


@on_examples_worker("cascade")
def test_cascade_example_escalates_then_learns_to_skip(run_example: RunExample) -> None:
    out = run_example("cascade").stdout
    assert "escalated: does not parse as Triage" in out
    assert "learned: passed 1 of 3 tries on task 'triage'" in out
    assert "6 tickets:" in out


@pytest.fixture(scope="module")
def benchmark_main() -> Callable[[list[str]], int]:
    """``main`` of ``benchmarks/cascade_mmlu.py``, loaded once for this module."""
    main = runpy.run_path(str(ROOT / "benchmarks" / "cascade_mmlu.py"))["main"]
    assert callable(main)
    return main  # type: ignore[no-any-return]


def test_benchmark_prints_a_table_from_a_labels_file(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        benchmark_main: Callable[[list[str]], int]) -> None:
    rows = [f"mmlu,s-{i},{'algebra' if i % 2 else 'law'},400,w,s,{i % 3 != 0:d},1,0\n"
            for i in range(60)]
    data = tmp_path / "mmlu.csv"
    data.write_text(HEADER + "".join(rows) + "mmlu,x,law,9,w,s,1,1,1\n")
    assert benchmark_main([str(data)]) == 0
    out = capsys.readouterr().out
    assert "MMLU, 60 questions" in out
    always_strong = next(line for line in out.splitlines() if line.startswith("always strong"))
    assert always_strong.split()[3] == "1.0000"  # accuracy column
    assert "cascade, check p=1.0 q=0.0" in out
    assert "+ learning, skip below 50%" in out


def test_benchmark_says_where_to_put_missing_data(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        benchmark_main: Callable[[list[str]], int]) -> None:
    assert benchmark_main([str(tmp_path / "absent.csv")]) == 2
    err = capsys.readouterr().err
    assert "no data at" in err and "routellm-mmlu.csv" in err
