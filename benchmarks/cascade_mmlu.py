"""Cost against quality of the cascade on MMLU, replaying real per-question correctness labels.

Usage::

    .venv/bin/python benchmarks/cascade_mmlu.py [PATH_TO_routellm-mmlu.csv]
        [--weak MODEL] [--strong MODEL] [--chars-per-token 4] [--output-tokens 5] [--seed 0]

The data (RouteLLM's MMLU labels: for each of 14,042 questions, whether Mixtral-8x7B and
GPT-4-1106 answered correctly) is read from ``../shared/data/routellm-mmlu.csv`` relative to the
repository root unless a path is given; rows marked ``contaminated`` are left out, as RouteLLM
does. Each question is a two-tier cascade: the weak model answers, a simulated check judges it,
and a failed check escalates to the strong model, whose answer is kept whatever it is
(``accept_last=True``). A check of reliability (p, q) flags a wrong weak answer with
probability p and a right one (a false alarm) with probability q; checks cost nothing here (a
regex or a schema, not a judge call). Learning is spendguard's own :class:`Learning` with the
MMLU subject as the task name, fed online in a seeded random order. Tokens are
``ceil(prompt_chars / chars_per_token)`` in and ``output_tokens`` out per call, priced with
spendguard's price table (``spendguard.cost``).
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import random
import sys
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

from spendguard._core.money import ZERO
from spendguard._costing.cost import cost
from spendguard._costing.prices import price
from spendguard._costing.usage import Usage
from spendguard._strategies.cascade.learning import Learning, MemoryStats

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATA = REPO.parent / "shared" / "data" / "routellm-mmlu.csv"
CHECKS = [(1.0, 0.0), (0.9, 0.1), (0.8, 0.2), (0.7, 0.3), (0.9, 0.3)]
LEARNING_THRESHOLDS = [0.1, 0.5]


@dataclass(frozen=True, slots=True)
class Question:
    subject: str
    weak_usd: Decimal
    strong_usd: Decimal
    weak_correct: bool
    strong_correct: bool


@dataclass(frozen=True, slots=True)
class Outcome:
    name: str
    correct: int
    cost_usd: Decimal
    weak_calls: int
    strong_calls: int
    skipped: int


def load(path: Path, weak: str, strong: str, chars_per_token: float,
         output_tokens: int) -> list[Question]:
    questions = []
    with path.open(newline="") as handle:
        for row in csv.DictReader(handle):
            if row["contaminated"] == "1":
                continue
            usage = Usage(input_tokens=math.ceil(int(row["prompt_chars"]) / chars_per_token),
                          output_tokens=output_tokens)
            questions.append(Question(row["category"], cost(weak, usage).total,
                                      cost(strong, usage).total, row["weak_correct"] == "1",
                                      row["strong_correct"] == "1"))
    return questions


def single(name: str, questions: list[Question], strong: bool) -> Outcome:
    correct = sum(q.strong_correct if strong else q.weak_correct for q in questions)
    spent = sum((q.strong_usd if strong else q.weak_usd for q in questions), ZERO)
    n = len(questions)
    return Outcome(name, correct, spent, 0 if strong else n, n if strong else 0, 0)


def cascade(name: str, questions: list[Question], *, catch: float, false_alarm: float,
            learning: Learning | None, weak: str, seed: int) -> Outcome:
    check_rng = random.Random(seed)
    correct = weak_calls = strong_calls = skipped = 0
    spent = ZERO
    for q in questions:
        # Both draws happen for every question, so runs with and without learning see the
        # same check outcomes on the questions where both ask the weak model.
        flags_wrong, flags_right = check_rng.random() < catch, check_rng.random() < false_alarm
        if learning is not None and not learning.decide(q.subject, weak).attempt:
            skipped += 1
            passed = False
        else:
            weak_calls += 1
            spent += q.weak_usd
            passed = not (flags_right if q.weak_correct else flags_wrong)
            if learning is not None:
                learning.record_attempt(q.subject, weak, passed=passed, cost_usd=q.weak_usd)
        if passed:
            correct += q.weak_correct
            continue
        strong_calls += 1
        spent += q.strong_usd
        correct += q.strong_correct
    return Outcome(name, correct, spent, weak_calls, strong_calls, skipped)


def table(outcomes: list[Outcome], n: int, strong: Outcome) -> str:
    head = (f"{'strategy':<44} {'accuracy':>8} {'vs strong':>9} {'strong %':>8} "
            f"{'skipped %':>9} {'cost $':>9} {'$ / 1k q':>9} {'saving':>7}")
    lines = [head, "-" * len(head)]
    for o in outcomes:
        accuracy = o.correct / n
        saving = 1 - o.cost_usd / strong.cost_usd
        lines.append(f"{o.name:<44} {accuracy:>8.4f} {accuracy / (strong.correct / n):>8.1%} "
                     f"{o.strong_calls / n:>8.1%} {o.skipped / n:>9.1%} "
                     f"{o.cost_usd:>9.4f} {o.cost_usd * 1000 / n:>9.4f} {saving:>7.1%}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("path", nargs="?", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--weak", default="claude-haiku-5-5")
    parser.add_argument("--strong", default="claude-opus-5-5")
    parser.add_argument("--chars-per-token", type=float, default=4.0)
    parser.add_argument("--output-tokens", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if not args.path.is_file():
        print(f"cascade_mmlu: no data at {args.path}.\nThis benchmark replays RouteLLM's MMLU "
              "labels (routellm-mmlu.csv, see shared/data/README.md). Put the file at "
              f"{DEFAULT_DATA} or pass its path: benchmarks/cascade_mmlu.py PATH",
              file=sys.stderr)
        return 2

    questions = load(args.path, args.weak, args.strong, args.chars_per_token,
                     args.output_tokens)
    random.Random(args.seed).shuffle(questions)  # online learning sees subjects interleaved
    n = len(questions)
    always_weak = single(f"always weak ({args.weak})", questions, strong=False)
    always_strong = single(f"always strong ({args.strong})", questions, strong=True)
    outcomes = [always_weak, always_strong]
    for catch, false_alarm in CHECKS:
        label = f"check p={catch:.1f} q={false_alarm:.1f}"
        outcomes.append(cascade(f"cascade, {label}", questions, catch=catch,
                                false_alarm=false_alarm, learning=None, weak=args.weak,
                                seed=args.seed))
        for threshold in LEARNING_THRESHOLDS:
            learning = Learning(MemoryStats(), skip_below=threshold, min_tries=20, explore=0.1,
                                rng=random.Random(args.seed))
            outcomes.append(cascade(f"  + learning, skip below {threshold:.0%}", questions,
                                    catch=catch, false_alarm=false_alarm, learning=learning,
                                    weak=args.weak, seed=args.seed))

    weak_price, strong_price = price(args.weak), price(args.strong)
    print(f"MMLU, {n:,} questions (contaminated rows left out); "
          f"{os.path.relpath(args.path)}")  # relative: no machine path in a report
    print(f"weak = {args.weak} (Mixtral-8x7B's labels), strong = {args.strong} "
          f"(GPT-4-1106's labels); prices from spendguard's table "
          f"({weak_price.as_of} / {strong_price.as_of})")
    print(f"tokens: ceil(prompt_chars / {args.chars_per_token:g}) in, {args.output_tokens} out "
          f"per call; checks cost $0; learning: min 20 tries, explore 10 %; seed {args.seed}")
    print("p = chance the check catches a wrong weak answer, q = false-alarm rate on a right "
          "one; 'saving' is against always strong\n")
    print(table(outcomes, n, always_strong))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
