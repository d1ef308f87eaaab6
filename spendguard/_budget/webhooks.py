"""Where a budget's alerts go (:class:`Webhook`) and what they say (:class:`Alert`).

Kept apart from the alert worker (:mod:`spendguard._budget.alerts`, which listens to call
events) so that the budget module can check ``alerts=`` without importing the event stream.
The worker installs itself with :func:`set_watcher` when it is imported; ``spendguard.Webhook``
is imported through it.
"""

from __future__ import annotations

import json
import logging
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any, Literal, Protocol
from urllib.parse import urlsplit

import tenacity

from spendguard._budget.ledger.base import Ledger, Totals
from spendguard._core.errors import BudgetConfigError
from spendguard._core.money import ZERO, format_usd, normalised
from spendguard._core.periods import as_utc

__all__ = ["FORECAST_FROM", "Alert", "Budget", "Threshold", "Webhook", "check_webhooks",
           "forecast_usd", "mask_url", "set_watcher", "watch"]

log = logging.getLogger("spendguard.alerts")

Threshold = Literal["warn", "limit", "forecast", "runaway"]
FORECAST_FROM = Decimal("0.1")
"""The share of a period that must have passed before a forecast alert may fire."""


class Budget(Protocol):
    """What alerts read of a :class:`spendguard.Budget` (named here, not imported: the budget
    module imports this one)."""

    scope: str
    limit_usd: Decimal
    alerts: tuple[Webhook, ...]
    _warn_usd: Decimal | None

    @property
    def ledger(self) -> Ledger: ...
    @property
    def period_key(self) -> str: ...
    def now(self) -> datetime: ...
    def totals(self) -> Totals: ...


_watcher: Callable[[Budget], None] | None = None


def set_watcher(watcher: Callable[[Budget], None]) -> None:
    """Install the alert worker's hook (done once, by :mod:`spendguard._budget.alerts`)."""
    global _watcher  # noqa: PLW0603 - one worker per process
    _watcher = watcher


def watch(budget: Budget) -> None:
    """Let the alert worker hear ``budget``'s calls while it is alive."""
    if _watcher is not None:
        _watcher(budget)


def mask_url(url: str) -> str:
    """A URL as it may be shown: its scheme and host only (``https://hooks.slack.com/***``)."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or "?"
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "***"
    return f"{parts.scheme or '?'}://{host}{port}/***"


@dataclass(frozen=True, slots=True)
class Alert:
    """One threshold reached by one scope in one period: what a webhook receives."""

    threshold: Threshold
    scope: str
    period_key: str
    spent_usd: Decimal
    limit_usd: Decimal
    time: datetime
    forecast_usd: Decimal | None = None
    detail: str = ""

    @property
    def fraction(self) -> Decimal:
        return normalised(self.spent_usd / self.limit_usd) if self.limit_usd > 0 else ZERO

    def message(self) -> str:
        what = {"warn": "reached its warning level",
                "limit": ("reached its limit" if self.spent_usd >= self.limit_usd
                          else "is refusing calls"),
                "forecast": "is on course to pass its limit",
                "runaway": "tripped a runaway rule"}[self.threshold]
        text = (f"spendguard budget {self.scope!r} (period {self.period_key}) {what}: spent "
                f"{format_usd(self.spent_usd)} of {format_usd(self.limit_usd)} "
                f"({self.fraction:.0%})")
        if self.forecast_usd is not None:
            text += f"; forecast at the period's end {format_usd(self.forecast_usd)}"
        return f"{text}. {self.detail}" if self.detail else text

    def payload(self) -> dict[str, Any]:
        """The plain JSON payload (amounts as decimal strings, the time in ISO 8601 UTC)."""
        return {
            "source": "spendguard", "threshold": self.threshold, "scope": self.scope,
            "period": self.period_key, "spent_usd": str(normalised(self.spent_usd)),
            "limit_usd": str(normalised(self.limit_usd)), "fraction": str(self.fraction),
            "forecast_usd": (None if self.forecast_usd is None
                             else str(normalised(self.forecast_usd))),
            "time": self.time.isoformat(), "message": self.message(),
        }

    def slack_payload(self) -> dict[str, Any]:
        """A Slack incoming-webhook body (``text`` plus one section block); Teams workflows
        and Mattermost accept the same ``text`` field."""
        icon = {"warn": ":warning:", "limit": ":no_entry:",
                "forecast": ":chart_with_upwards_trend:", "runaway": ":rotating_light:"}[
                    self.threshold]
        text = f"{icon} {self.message()}"
        return {"text": text,
                "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": text}}]}


class _Retryable(Exception):
    """A delivery failure worth another try (no connection, a timeout, 429 or 5xx)."""


class Webhook:
    """Where a budget's alerts go: an HTTP(S) URL that receives a JSON POST.

    ``format="json"`` posts :meth:`Alert.payload`; ``format="slack"`` posts
    :meth:`Alert.slack_payload`. ``attempts`` tries in all, waiting ``backoff_s``, then twice
    that, ... (at most ``max_backoff_s``) between them; ``sleep`` is how it waits (tests pass
    one that does not). The URL is never shown: ``repr`` and every log line mask it.
    """

    __slots__ = ("_url", "attempts", "backoff_s", "format", "headers", "max_backoff_s",
                 "sleep", "timeout_s")

    def __init__(self, url: str, *, format: Literal["json", "slack"] = "json",
                 timeout_s: float = 5.0, attempts: int = 4, backoff_s: float = 1.0,
                 max_backoff_s: float = 30.0, headers: Mapping[str, str] | None = None,
                 sleep: Callable[[float], None] | None = None) -> None:
        if not isinstance(url, str) or urlsplit(url).scheme not in ("http", "https") \
                or not urlsplit(url).hostname:
            raise BudgetConfigError("alerts: a Webhook needs an http:// or https:// URL, e.g. "
                                    "Webhook('https://hooks.slack.com/services/...', "
                                    "format='slack')", field="alerts")
        if format not in ("json", "slack"):
            raise BudgetConfigError(f"alerts: format={format!r}; use 'json' or 'slack'",
                                    field="alerts")
        if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 1:
            raise BudgetConfigError(f"alerts: attempts={attempts!r} must be a whole number "
                                    f"of at least 1", field="alerts")
        self._url = url
        self.format = format
        self.timeout_s = float(timeout_s)
        self.attempts = attempts
        self.backoff_s = float(backoff_s)
        self.max_backoff_s = float(max_backoff_s)
        self.headers = dict(headers or {})
        self.sleep = sleep

    def __repr__(self) -> str:
        return f"Webhook({mask_url(self._url)!r}, format={self.format!r})"

    def send(self, alert: Alert) -> bool:
        """Post ``alert``, retrying; True when the receiver answered 2xx. Never raises."""
        body = json.dumps(alert.slack_payload() if self.format == "slack" else alert.payload(),
                          ensure_ascii=False).encode()
        retrying = tenacity.Retrying(
            stop=tenacity.stop_after_attempt(self.attempts),
            wait=tenacity.wait_exponential(multiplier=self.backoff_s, max=self.max_backoff_s),
            retry=tenacity.retry_if_exception_type(_Retryable), reraise=True,
            sleep=self.sleep if self.sleep is not None else tenacity.nap.sleep,
            before_sleep=self._log_retry)
        try:
            retrying(self._post, body)
        except Exception as exc:
            log.warning("spendguard: alert %s for %r (period %s) was not delivered to %s: %s",
                        alert.threshold, alert.scope, alert.period_key, mask_url(self._url),
                        exc if isinstance(exc, _Retryable | _Refused) else type(exc).__name__)
            return False
        log.info("spendguard: alert %s for %r (period %s) delivered to %s", alert.threshold,
                 alert.scope, alert.period_key, mask_url(self._url))
        return True

    def _post(self, body: bytes) -> None:
        request = urllib.request.Request(
            self._url, data=body, method="POST",
            headers={"Content-Type": "application/json", "User-Agent": "spendguard-alerts",
                     **self.headers})
        where = mask_url(self._url)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as answer:
                answer.read()
        except urllib.error.HTTPError as exc:
            exc.close()
            if exc.code == 429 or exc.code >= 500:
                raise _Retryable(f"{where} answered HTTP {exc.code}") from None
            raise _Refused(f"{where} answered HTTP {exc.code}") from None
        except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
            reason = getattr(exc, "reason", exc)
            raise _Retryable(f"{where} could not be reached ({type(reason).__name__})") from None

    def _log_retry(self, state: tenacity.RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome is not None else None
        log.info("spendguard: alert delivery try %d failed (%s); retrying", state.attempt_number,
                 exc)


class _Refused(Exception):
    """The receiver answered 4xx (other than 429): another try would be refused too."""


def check_webhooks(value: object) -> tuple[Webhook, ...]:
    """``alerts=`` as a tuple of webhooks (None or [] for none)."""
    if value is None:
        return ()
    hooks = (value,) if isinstance(value, Webhook) else value
    if isinstance(hooks, Sequence) and not isinstance(hooks, str) \
            and all(isinstance(h, Webhook) for h in hooks):
        return tuple(hooks)
    raise BudgetConfigError(f"alerts: expected a spendguard.Webhook or a list of them, got "
                            f"{type(value).__name__}; write "
                            f"alerts=spendguard.Webhook(url, format='slack')", field="alerts")


def forecast_usd(spent_usd: Decimal, period_key: str, now: datetime) -> Decimal | None:
    """What a calendar period will have spent at its end at the pace so far: spent divided by
    the elapsed share of the period; None for all time and rolling windows, and before
    :data:`FORECAST_FROM` of the period has passed (too little to go on)."""
    try:
        if len(period_key) == 7:
            start = datetime.strptime(period_key, "%Y-%m").replace(tzinfo=UTC)
            end = (start + timedelta(days=32)).replace(day=1)
        elif len(period_key) == 10:
            start = datetime.strptime(period_key, "%Y-%m-%d").replace(tzinfo=UTC)
            end = start + timedelta(days=1)
        else:
            return None
    except ValueError:
        return None
    share = Decimal((as_utc(now) - start).total_seconds()) / Decimal((end - start).total_seconds())
    if share < FORECAST_FROM or share >= 1:
        return None
    return normalised(spent_usd / share)


