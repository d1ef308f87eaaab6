"""Checks: does a model's reply pass? Small composable policies for the cascade.

A check takes a :class:`Candidate` (the reply's text, the SDK response, the request) and returns
a :class:`Verdict`. Combine checks with ``&`` (all must pass; stops at the first failure, so put
cheap checks first) and ``|`` (any may pass; stops at the first pass). ``always_pass`` is the
null check. Plain callables, pydantic models and compiled regexes are accepted wherever a check
is, through :func:`as_check`.
"""

from __future__ import annotations

import abc
import inspect
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from spendguard._core.errors import ConfigError
from spendguard._core.money import ZERO
from spendguard._costing.endpoints import Endpoint
from spendguard._strategies import replies

__all__ = [
    "Candidate",
    "Check",
    "CheckLike",
    "Verdict",
    "always_pass",
    "as_check",
    "check_all",
    "check_any",
    "check_judge",
    "check_matches",
    "check_parses",
    "check_with",
]


@dataclass(frozen=True, slots=True)
class Candidate:
    """One model's reply, as a check sees it."""

    model: str
    text: str
    response: Any = field(default=None, repr=False)
    request: Mapping[str, Any] = field(default_factory=dict, repr=False)
    client: Any = field(default=None, repr=False)
    """The client the reply came from; a judge check without its own client uses it."""
    provider: str = ""
    """The provider whose API answered; by default the endpoint's."""
    endpoint: Endpoint = field(default_factory=replies.default_endpoint)
    """The endpoint that answered; by default the default wire's first one (chat)."""

    def __post_init__(self) -> None:
        if not self.provider and self.endpoint.provider is not None:
            object.__setattr__(self, "provider", self.endpoint.provider.value)


@dataclass(frozen=True, slots=True)
class Verdict:
    """A check's answer: passed or not, why, an optional parsed value, and what deciding cost."""

    passed: bool
    reason: str = ""
    value: Any = None
    """What the check extracted (a pydantic instance, a regex match), or None."""
    cost_usd: Decimal = ZERO
    """USD spent deciding (a judge call); 0 for local checks."""

    def __bool__(self) -> bool:
        return self.passed


class Check(abc.ABC):
    """Base class of checks; subclasses implement :meth:`check` (and :meth:`acheck` if async)."""

    @abc.abstractmethod
    def check(self, candidate: Candidate) -> Verdict:
        """Judge one reply."""

    async def acheck(self, candidate: Candidate) -> Verdict:
        """Judge one reply from async code; local checks just run :meth:`check`."""
        return self.check(candidate)

    def __call__(self, candidate: Candidate) -> Verdict:
        return self.check(candidate)

    def __and__(self, other: CheckLike) -> check_all:
        return check_all(self, other)

    def __or__(self, other: CheckLike) -> check_any:
        return check_any(self, other)


CheckLike = Check | Callable[[str], Any] | type | re.Pattern[str] | None
"""A Check, a callable on the reply text, a pydantic model class, a compiled regex, or None."""


def as_check(value: CheckLike) -> Check:
    """The :class:`Check` for a check-like value (see :data:`CheckLike`)."""
    if value is None:
        return always_pass
    if isinstance(value, Check):
        return value
    if isinstance(value, re.Pattern):
        return check_matches(value)
    if isinstance(value, type):
        return check_parses(value)
    if callable(value):
        return check_with(value)
    raise ConfigError(
        f"check: expected a callable, a pydantic model class, a compiled regex or a "
        f"spendguard check, got {type(value).__name__}; for a regex string use "
        f"spendguard.check_matches({value!r})"
    )


def _combine(verdicts: list[Verdict], passed: bool) -> Verdict:
    value = next((v.value for v in verdicts if v.passed and v.value is not None), None)
    return Verdict(passed, "; ".join(v.reason for v in verdicts if v.reason), value,
                   sum((v.cost_usd for v in verdicts), ZERO))


class check_all(Check):  # lower case like tenacity's policies
    """Passes when every check passes; stops at the first failure."""

    def __init__(self, *checks: CheckLike) -> None:
        self.checks = tuple(as_check(c) for c in checks)

    def check(self, candidate: Candidate) -> Verdict:
        verdicts: list[Verdict] = []
        for check in self.checks:
            verdicts.append(check.check(candidate))
            if not verdicts[-1].passed:
                return _combine(verdicts, False)
        return _combine(verdicts, True)

    async def acheck(self, candidate: Candidate) -> Verdict:
        verdicts: list[Verdict] = []
        for check in self.checks:
            verdicts.append(await check.acheck(candidate))
            if not verdicts[-1].passed:
                return _combine(verdicts, False)
        return _combine(verdicts, True)


class check_any(Check):
    """Passes when any check passes; stops at the first pass."""

    def __init__(self, *checks: CheckLike) -> None:
        self.checks = tuple(as_check(c) for c in checks)

    def check(self, candidate: Candidate) -> Verdict:
        verdicts: list[Verdict] = []
        for check in self.checks:
            verdicts.append(check.check(candidate))
            if verdicts[-1].passed:
                return _combine(verdicts, True)
        return _combine(verdicts, False)

    async def acheck(self, candidate: Candidate) -> Verdict:
        verdicts: list[Verdict] = []
        for check in self.checks:
            verdicts.append(await check.acheck(candidate))
            if verdicts[-1].passed:
                return _combine(verdicts, True)
        return _combine(verdicts, False)


class _AlwaysPass(Check):
    """The null check: every reply passes (the cascade then returns the first tier's reply)."""

    def check(self, candidate: Candidate) -> Verdict:
        return Verdict(True)

    def __repr__(self) -> str:
        return "always_pass"


always_pass = _AlwaysPass()


def _as_verdict(result: Any, name: str) -> Verdict:
    if isinstance(result, Verdict):
        return result
    if isinstance(result, bool):
        return Verdict(result, "" if result else f"{name} returned False")
    raise ConfigError(f"check {name}: must return a bool or a spendguard Verdict, "
                      f"got {type(result).__name__}")


class check_with(Check):
    """A plain function of the reply text: returns a bool or a Verdict.

    Raising ``ValueError`` or ``AssertionError`` counts as failing, with the message as reason
    (so ``json.loads`` or an ``assert`` can be the whole check). Async functions work in
    :func:`spendguard.acascade`.
    """

    def __init__(self, function: Callable[[str], bool | Verdict | Awaitable[bool | Verdict]],
                 *, name: str | None = None) -> None:
        self.function = function
        self.name: str = name or str(getattr(function, "__name__", "check"))
        self.is_async = inspect.iscoroutinefunction(function)

    def check(self, candidate: Candidate) -> Verdict:
        if self.is_async:
            raise ConfigError(f"check {self.name} is async; use spendguard.acascade with an "
                              "async client, or pass a plain function")
        try:
            return _as_verdict(self.function(candidate.text), self.name)
        except ConfigError:
            raise  # a misuse to fix, not a failed reply (ConfigError is also a ValueError)
        except (ValueError, AssertionError) as exc:
            return Verdict(False, f"{self.name}: {type(exc).__name__}: {exc}")

    async def acheck(self, candidate: Candidate) -> Verdict:
        if not self.is_async:
            return self.check(candidate)
        try:
            return _as_verdict(await self.function(candidate.text), self.name)  # type: ignore[misc]
        except ConfigError:
            raise
        except (ValueError, AssertionError) as exc:
            return Verdict(False, f"{self.name}: {type(exc).__name__}: {exc}")


class check_matches(Check):
    """Passes when the regex is found in the text (``full=True``: matches all of it)."""

    def __init__(self, pattern: str | re.Pattern[str], flags: int = 0, *,
                 full: bool = False) -> None:
        self.pattern = pattern if isinstance(pattern, re.Pattern) else re.compile(pattern, flags)
        self.full = full

    def check(self, candidate: Candidate) -> Verdict:
        text = candidate.text.strip() if self.full else candidate.text
        match = self.pattern.fullmatch(text) if self.full else self.pattern.search(text)
        if match is None:
            how = "match all of" if self.full else "appear in"
            return Verdict(False, f"regex {self.pattern.pattern!r} does not {how} the reply")
        return Verdict(True, value=match)


_FENCE = re.compile(r"```(?:json)?\s*\n(.*?)```", re.DOTALL)


class check_parses(Check):
    """Passes when the reply is JSON that validates as the pydantic model (code fences allowed).

    The parsed instance is the verdict's ``value`` (and the cascade result's ``value``).
    """

    def __init__(self, model: type, *, strict: bool | None = None) -> None:
        from pydantic import BaseModel  # noqa: PLC0415 - pydantic loads only when used

        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            raise ConfigError(f"check_parses: expected a pydantic BaseModel subclass, got "
                              f"{model!r}")
        self.model: type[BaseModel] = model
        self.strict = strict

    def check(self, candidate: Candidate) -> Verdict:
        from pydantic import ValidationError  # noqa: PLC0415

        fenced = _FENCE.search(candidate.text)
        text = fenced.group(1) if fenced else candidate.text
        try:
            value = self.model.model_validate_json(text.strip(), strict=self.strict)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "reply"
            return Verdict(False, f"does not parse as {self.model.__name__}: {where}: "
                                  f"{first['msg']} ({exc.error_count()} error(s))")
        return Verdict(True, value=value)


_JUDGE_PROMPT = """You are checking an answer that another model wrote.

Criteria: {criteria}

Question:
{question}

Answer:
{answer}

Does the answer meet the criteria? Reply with one word: PASS or FAIL."""


class check_judge(Check):
    """Asks a (usually cheap) judge model whether the reply meets ``criteria``.

    The judge call goes through ``client`` (default: the client the cascade is using), so a
    guarded client budgets it like any other call; its cost is the verdict's ``cost_usd`` and
    is counted in the cascade's trace. ``BudgetExceeded`` from the judge call propagates.
    """

    def __init__(self, criteria: str, *, model: str, client: Any = None,
                 max_tokens: int = 16, prompt: str = _JUDGE_PROMPT) -> None:
        if not criteria.strip():
            raise ConfigError("check_judge: criteria must say what a passing answer looks like")
        self.criteria = criteria
        self.model = model
        self.client = client
        self.max_tokens = max_tokens
        self.prompt = prompt

    def _request(self, candidate: Candidate,
                 client: Any) -> tuple[str, Endpoint, dict[str, Any]]:
        provider = replies.provider_of(client)
        question = replies.prompt_text(candidate.endpoint, candidate.request)
        content = self.prompt.format(criteria=self.criteria, question=question,
                                     answer=candidate.text)
        body = replies.text_request(provider, self.model, content, self.max_tokens)
        return provider, replies.endpoint_for(provider, body), body

    def _verdict(self, provider: str, endpoint: Endpoint, response: Any) -> Verdict:
        said = replies.reply_text(endpoint, response).strip()
        spent = replies.cost_usd(self.model, replies.reply_usage(provider, response))
        passed = said.upper().startswith("PASS")
        return Verdict(passed, "" if passed else f"judge {self.model} said {said[:80]!r}",
                       cost_usd=spent)

    def _client(self, candidate: Candidate, want_async: bool) -> Any:
        client = self.client if self.client is not None else candidate.client
        if client is None:
            raise ConfigError("check_judge: no client; pass client=... to check_judge")
        if replies.is_async_client(client) != want_async:
            kind = "an async" if want_async else "a sync"
            raise ConfigError(f"check_judge: needs {kind} client here, got "
                              f"{type(client).__name__}; pass client=... to check_judge")
        return client

    def check(self, candidate: Candidate) -> Verdict:
        client = self._client(candidate, want_async=False)
        provider, endpoint, body = self._request(candidate, client)
        return self._verdict(provider, endpoint, replies.call(client, endpoint, body))

    async def acheck(self, candidate: Candidate) -> Verdict:
        client = self._client(candidate, want_async=True)
        provider, endpoint, body = self._request(candidate, client)
        return self._verdict(provider, endpoint, await replies.acall(client, endpoint, body))
