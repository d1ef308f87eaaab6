"""Both modes against published measurements, and the docs table that reports their errors."""

from __future__ import annotations

import math

import pytest

from spendguard._sizing.validation import CASES, Outcome, markdown_table, run_cases
from tests.paths import REPO

DOCS = REPO / "docs" / "sizing.md"
START, END = "<!-- validation-table:start -->", "<!-- validation-table:end -->"


@pytest.fixture(scope="module")
def outcomes() -> list[Outcome]:
    return run_cases()


@pytest.mark.parametrize("case", [c for c in CASES if c.tolerance_pct is not None],
                         ids=lambda c: c.id)
def test_published_measurement_is_reproduced_within_its_stated_tolerance(case: object) -> None:
    (outcome,) = run_cases((case,))  # type: ignore[arg-type]
    assert outcome.held, (outcome.case.id, outcome.spec, outcome.calibrated)


@pytest.mark.parametrize("case", [c for c in CASES if c.measured_tolerance_pct is not None],
                         ids=lambda c: c.id)
def test_measured_mode_reproduces_each_measurement_within_the_error_docs_state(
        case: object) -> None:
    (outcome,) = run_cases((case,))  # type: ignore[arg-type]
    assert outcome.held, (outcome.case.id, outcome.measured_mode, outcome.case.measured)
    error = outcome.measured_error_pct
    assert error is not None
    assert abs(error) <= (15 if outcome.case.quantity == "GB" else 20)


def test_measured_mode_beats_formula_mode_on_fine_tuning_and_fast_cards(
        outcomes: list[Outcome]) -> None:
    held = [o for o in outcomes if o.case.measured_tolerance_pct is not None]
    for quantity in ("GB", "tok/s"):
        group = [o for o in held if o.case.quantity == quantity]
        spec = sum(abs(o.spec_error_pct or 0) for o in group) / len(group)
        measured = sum(abs(o.measured_error_pct or 0) for o in group) / len(group)
        assert measured < spec, quantity


def test_every_case_has_a_source_or_reason(outcomes: list[Outcome]) -> None:
    for outcome in outcomes:
        assert outcome.case.note
        assert outcome.case.tolerance_pct is not None or outcome.case.note.startswith(
            "not held")
        assert math.isfinite(outcome.spec)


def test_calibrated_mode_beats_spec_mode_on_engine_memory(outcomes: list[Outcome]) -> None:
    held = [o for o in outcomes if o.case.quantity == "KV GiB/GPU" and o.case.held_by]
    spec = sum(abs(o.spec_error_pct or 0) for o in held) / len(held)
    calibrated = sum(abs(o.calibrated_error_pct or 0) for o in held) / len(held)
    assert calibrated < 5 < spec


def test_docs_carry_the_computed_table(outcomes: list[Outcome]) -> None:
    text = DOCS.read_text(encoding="utf-8")
    carried = text.split(START, 1)[1].split(END, 1)[0].strip()
    assert carried == markdown_table(outcomes), (
        "docs/sizing.md is out of date: paste `python -m spendguard._sizing.validation`")
