"""The cascade: try the cheapest model first, check its reply, escalate only on failure.

:func:`cascade` and :func:`acascade` are twin thin shells over :class:`_Run`, which makes
every decision: the order of the tiers, which to skip (learning), whether the money left covers
the next attempt's worst case, and what each attempt cost. The shells only send requests and
run checks, the two steps that differ between sync and async.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from spendguard._core.errors import BudgetExceeded, CascadeFailed, ConfigError
from spendguard._core.money import ZERO, format_usd, parse_usd
from spendguard._strategies import replies
from spendguard._strategies.cascade.checks import Candidate, CheckLike, Verdict, as_check
from spendguard._strategies.cascade.learning import Learning

if TYPE_CHECKING:
    from spendguard._costing.usage import Usage

__all__ = ["AttemptOutcome", "CascadeAttempt", "CascadeResult", "acascade", "cascade"]


class AttemptOutcome(StrEnum):
    """What became of one tier."""

    PASSED = "passed"
    FAILED = "failed"
    """Its reply failed the check: the cascade escalated."""
    SKIPPED = "skipped"
    """Learning skipped it: it rarely passes this task."""
    UNAFFORDABLE = "unaffordable"
    """Its worst case did not fit the money left; not sent."""
    REFUSED = "refused"
    """The guarded client (or the judge's) raised BudgetExceeded."""


@dataclass(frozen=True, slots=True)
class CascadeAttempt:
    """One tier's line in a cascade's trace: model, tokens, USD, check result and why."""

    model: str
    outcome: AttemptOutcome
    reason: str = ""
    input_tokens: int = 0
    """All input tokens billed (uncached, cache reads and cache writes)."""
    output_tokens: int = 0
    call_usd: Decimal = ZERO
    check_usd: Decimal = ZERO
    worst_case_usd: Decimal | None = None
    """The pre-flight worst case, when a money limit was known."""
    verdict: Verdict | None = None
    usage: Usage | None = field(default=None, repr=False)
    response: Any = field(default=None, repr=False)

    @property
    def cost_usd(self) -> Decimal:
        """The call plus its check (USD)."""
        return self.call_usd + self.check_usd

    def line(self) -> str:
        """One readable line: ``gpt-4o-mini  failed  412+35 tok  $0.0001  why``."""
        tokens = f"{self.input_tokens}+{self.output_tokens} tok"
        return (f"{self.model:<28} {self.outcome.value:<12} {tokens:>16} "
                f"{format_usd(self.cost_usd):>11}  {self.reason}").rstrip()


def _trace(attempts: Sequence[CascadeAttempt]) -> str:
    return "\n".join(f"  {a.line()}" for a in attempts)


@dataclass(frozen=True, slots=True)
class CascadeResult:
    """The reply that passed, with the trace of every attempt and the savings (USD)."""

    response: Any = field(repr=False)
    text: str
    model: str
    passed: bool
    """False only when ``accept_last=True`` returned a last tier that failed its check."""
    value: Any
    """What the passing check extracted (a pydantic instance, a regex match), or None."""
    attempts: tuple[CascadeAttempt, ...]
    baseline_usd: Decimal
    """Always calling the largest model: its price for the final reply's tokens."""
    task: str | None = None

    @property
    def cost_usd(self) -> Decimal:
        """Every attempt and check, in USD."""
        return sum((a.cost_usd for a in self.attempts), ZERO)

    @property
    def savings_usd(self) -> Decimal:
        """Baseline minus cost (negative when escalating cost more than going large at once)."""
        return self.baseline_usd - self.cost_usd

    def report(self) -> str:
        """The trace and totals, for people."""
        return (f"{_trace(self.attempts)}\n  cost {format_usd(self.cost_usd)}, "
                f"always-largest {format_usd(self.baseline_usd)}, "
                f"saved {format_usd(self.savings_usd)}")


def _billed_input(usage: Usage) -> int:
    return (usage.input_tokens + usage.cache_read_tokens
            + sum(usage.cache_write_tokens.values()))


def _order(models: Sequence[str], keep_order: bool) -> tuple[str, ...]:
    if not models:
        raise ConfigError("models: give at least one model, cheapest first or in any order")
    if len(set(models)) != len(models):
        raise ConfigError(f"models: {list(models)} names a model twice")
    if keep_order:
        return tuple(models)
    # sorted() is stable: equal prices keep the order given.
    return tuple(sorted(models, key=replies.rank_usd))


class _Run:
    """One cascade's state and every decision in it; the shells do only the I/O."""

    def __init__(self, client: Any, request: Mapping[str, Any], models: Sequence[str],
                 check: CheckLike, *, task: str | None, learning: Learning | None,
                 budget: object | None, max_usd: object | None, keep_order: bool,
                 accept_last: bool, want_async: bool) -> None:
        if replies.is_async_client(client) != want_async:
            twin = "spendguard.acascade" if not want_async else "spendguard.cascade"
            raise ConfigError(f"client: {type(client).__name__} is "
                              f"{'async' if not want_async else 'sync'}; use {twin} for it")
        if learning is not None and not task:
            raise ConfigError("task: learning needs a task name to keep statistics under, "
                              "e.g. task='classify-ticket'")
        if "model" in request:
            raise ConfigError("request: leave 'model' out; the cascade sets it per tier "
                              "from models=[...]")
        self.client = client
        self.request = dict(request)
        self.provider = replies.provider_of(client)
        self.endpoint = replies.endpoint_for(self.provider, request)
        self.tiers = _order(models, keep_order)
        self.check = as_check(check)
        self.task = task
        self.learning = learning
        self.budget = budget
        self.max_usd = None if max_usd is None else parse_usd(max_usd, field="max_usd")
        self.accept_last = accept_last
        self.attempts: list[CascadeAttempt] = []
        self.done = False
        self.passing: CascadeAttempt | None = None
        self._next = 0
        self._worst: Decimal | None = None

    def body(self, model: str) -> dict[str, Any]:
        return {**self.request, "model": model}

    def _limit_usd(self) -> Decimal | None:
        spent = sum((a.cost_usd for a in self.attempts), ZERO)
        limits = [] if self.max_usd is None else [self.max_usd - spent]
        if self.budget is not None:
            limits.append(replies.remaining_usd(self.budget))
        around = replies.budget_left_usd(self.client)
        if around is not None:
            limits.append(around)
        return min(limits) if limits else None

    def next_model(self) -> str | None:
        """The next tier to call, recording the ones skipped; None when the cascade is over."""
        while not self.done and self._next < len(self.tiers):
            model = self.tiers[self._next]
            self._next += 1
            last = self._next == len(self.tiers)
            if self.learning is not None and self.task and not last:
                decision = self.learning.decide(self.task, model)
                if not decision.attempt:
                    self.attempts.append(CascadeAttempt(model, AttemptOutcome.SKIPPED,
                                                        decision.reason))
                    continue
            limit = self._limit_usd()
            self._worst = None
            if limit is not None:
                self._worst = replies.worst_usd(self.provider, self.endpoint,
                                                self.body(model))
                if self._worst > limit:
                    self.attempts.append(CascadeAttempt(
                        model, AttemptOutcome.UNAFFORDABLE,
                        f"worst case {format_usd(self._worst)} > "
                        f"{format_usd(limit)} left", worst_case_usd=self._worst))
                    self.done = True
                    return None
            return model
        return None

    def candidate(self, model: str, response: Any) -> Candidate:
        return Candidate(model, replies.reply_text(self.endpoint, response), response,
                         self.body(model), self.client, self.provider, self.endpoint)

    def _called(self, model: str, response: Any, outcome: AttemptOutcome, reason: str,
                verdict: Verdict | None) -> CascadeAttempt:
        usage = replies.reply_usage(self.provider, response)
        return CascadeAttempt(model, outcome, reason, _billed_input(usage), usage.output_tokens,
                              replies.cost_usd(model, usage),
                              verdict.cost_usd if verdict is not None else ZERO,
                              self._worst, verdict, usage, response)

    def settle(self, model: str, response: Any, verdict: Verdict) -> None:
        """Record a checked reply; the cascade ends when it passed."""
        last = self._next == len(self.tiers)
        outcome = AttemptOutcome.PASSED if verdict.passed else AttemptOutcome.FAILED
        reason = verdict.reason or ("check failed" if not verdict.passed else "")
        if not verdict.passed and not last:
            reason = f"escalated: {reason}"
        attempt = self._called(model, response, outcome, reason, verdict)
        self.attempts.append(attempt)
        if self.learning is not None and self.task:
            self.learning.record_attempt(self.task, model, passed=verdict.passed,
                                         cost_usd=attempt.cost_usd)
        if verdict.passed or (last and self.accept_last):
            self.passing = attempt
            self.done = True

    def refused(self, model: str, response: Any, exc: BudgetExceeded) -> None:
        """The guarded client refused the call (or its judge call): the money ran out."""
        reason = (f"budget {exc.scope!r} refused "
                  f"{'the check' if response is not None else 'the call'}: "
                  f"{format_usd(exc.estimate_usd)} worst case, "
                  f"{format_usd(exc.remaining_usd)} left")
        if response is None:
            self.attempts.append(CascadeAttempt(model, AttemptOutcome.REFUSED, reason,
                                                worst_case_usd=self._worst))
        else:
            self.attempts.append(self._called(model, response, AttemptOutcome.REFUSED, reason,
                                              None))
        self.done = True

    def result(self, cause: BaseException | None = None) -> CascadeResult:
        """The passing reply, or CascadeFailed naming every attempt and its cost."""
        attempts = tuple(self.attempts)
        spent = sum((a.cost_usd for a in attempts), ZERO)
        if self.passing is None:
            money = any(a.outcome in (AttemptOutcome.UNAFFORDABLE, AttemptOutcome.REFUSED)
                        for a in attempts)
            why = "the money ran out" if money else "every tier failed its check"
            raise CascadeFailed(
                f"cascade failed: {why} after {len(attempts)} attempt(s) costing "
                f"{format_usd(spent)}:\n{_trace(attempts)}",
                reason="budget" if money else "all_failed", attempts=attempts, cost_usd=spent,
            ) from cause
        final = self.passing
        largest = self.tiers[-1]
        baseline = final.call_usd if final.model == largest or final.usage is None else \
            replies.cost_usd(largest, final.usage)
        if self.learning is not None and self.task:
            self.learning.record_run(self.task, cost_usd=spent, baseline_usd=baseline)
        verdict = final.verdict
        return CascadeResult(final.response, replies.reply_text(self.endpoint, final.response),
                             final.model, final.outcome is AttemptOutcome.PASSED,
                             verdict.value if verdict is not None else None, attempts,
                             baseline, self.task)


def cascade(client: Any, request: Mapping[str, Any], *, models: Sequence[str],
            check: CheckLike = None, task: str | None = None, learning: Learning | None = None,
            budget: object | None = None, max_usd: object | None = None,
            keep_order: bool = False, accept_last: bool = False) -> CascadeResult:
    """Call the cheapest model first and escalate through ``models`` until ``check`` passes.

    ``request`` holds the SDK call's keyword arguments without ``model`` (chat.completions for
    OpenAI clients, or Responses when it has ``input``; messages for Anthropic clients;
    ``models.generate_content``'s ``contents`` and ``config`` for Gemini clients, or the REST
    body).
    ``models`` are sorted by price unless ``keep_order``. Before each attempt whose money is
    limited (``budget``, ``max_usd``, the guarded client's budget or a ``with budget:`` block),
    its worst case must fit what is left. Raises
    :class:`~spendguard._core.errors.CascadeFailed` when no tier passes or the money runs out,
    unless ``accept_last`` returns the last tier's reply anyway.
    """
    run = _Run(client, request, models, check, task=task, learning=learning, budget=budget,
               max_usd=max_usd, keep_order=keep_order, accept_last=accept_last,
               want_async=False)
    cause: BaseException | None = None
    while (model := run.next_model()) is not None:
        response = None
        try:
            with replies.tagged(task, model):
                response = replies.call(client, run.endpoint, run.body(model))
                verdict = run.check.check(run.candidate(model, response))
        except BudgetExceeded as exc:
            run.refused(model, response, exc)
            cause = exc
            break
        run.settle(model, response, verdict)
    return run.result(cause)


async def acascade(client: Any, request: Mapping[str, Any], *, models: Sequence[str],
                   check: CheckLike = None, task: str | None = None,
                   learning: Learning | None = None, budget: object | None = None,
                   max_usd: object | None = None, keep_order: bool = False,
                   accept_last: bool = False) -> CascadeResult:
    """The async twin of :func:`cascade`, for ``AsyncOpenAI`` / ``AsyncAnthropic`` clients."""
    run = _Run(client, request, models, check, task=task, learning=learning, budget=budget,
               max_usd=max_usd, keep_order=keep_order, accept_last=accept_last,
               want_async=True)
    cause: BaseException | None = None
    while (model := run.next_model()) is not None:
        response = None
        try:
            with replies.tagged(task, model):
                response = await replies.acall(client, run.endpoint, run.body(model))
                verdict = await run.check.acheck(run.candidate(model, response))
        except BudgetExceeded as exc:
            run.refused(model, response, exc)
            cause = exc
            break
        run.settle(model, response, verdict)
    return run.result(cause)
