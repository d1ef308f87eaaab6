"""Alerts delivered: a budget's thresholds sent to webhooks, off the call path, once.

A budget built with ``alerts=Webhook(url)`` (or a list of them) sends an :class:`Alert` when its
scope, in its current period:

- ``warn``: has spent ``warn_at`` of its limit;
- ``limit``: has spent its whole limit (100 %), or refused a call that its limit could not
  take (an enforced budget usually refuses before its spend reaches 100 %);
- ``forecast``: is on course to pass its limit by the period's end (calendar periods only; the
  method is :func:`forecast_usd`'s);
- ``runaway``: tripped a runaway rule.

How it stays off the call path: the call-event subscriber only puts the budget on a bounded
queue (never blocking; when the queue is full the check is dropped, and the next call's check
finds the same threshold still unsent). One daemon worker thread reads the scope's totals from
the ledger, decides which thresholds are reached, claims each in the ledger
(``claim_alert``: atomic, shared by every process using the ledger, so one alert per scope,
period and threshold however many processes cross it) and posts it, retrying with
exponential backoff (tenacity) on a connection failure, a timeout, 429 or a 5xx answer.

A claim is made before the post: delivery is at most once. An alert whose every retry failed
is logged (with the URL masked), not re-sent. A webhook URL is a secret (Slack's carries the
token in its path): it appears in no log line, message or repr, only ``scheme://host/***``.
"""

from __future__ import annotations

import atexit
import json
import logging
import queue
import threading
import urllib.error
import urllib.request
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

import tenacity

from spendguard._budget.events import CallEvent, Stage, subscribe, unsubscribe
from spendguard._core.errors import BudgetConfigError
from spendguard._core.money import ZERO, format_usd, normalised
from spendguard._core.periods import as_utc, warning_key

if TYPE_CHECKING:
    from spendguard._budget.budget import Budget

__all__ = ["Alert", "Threshold", "Webhook", "check_alerts", "check_webhooks", "flush_alerts",
           "forecast_usd", "mask_url", "watch"]

log = logging.getLogger("spendguard.alerts")

Threshold = Literal["warn", "limit", "forecast", "runaway"]
QUEUE_SIZE = 1000
"""Checks waiting for the worker at most; past it a check is dropped (and redone next call)."""
FORECAST_FROM = Decimal("0.1")
"""The share of a period that must have passed before a forecast alert may fire."""


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


def watch(budget: Budget) -> None:
    """Hear ``budget``'s call events from now until it is garbage (the subscription to call
    events lasts while a budget with alerts is alive, so it costs nothing otherwise)."""
    _dispatcher.adopt(budget)


def check_alerts(budget: Budget, *, wait: bool = True, timeout_s: float = 30.0) -> None:
    """Check ``budget``'s thresholds now and send what is due (also done after every call).

    With ``wait`` it returns once the worker has delivered (or given up on) them.
    """
    _dispatcher.put(("check", budget, ""))
    if wait:
        flush_alerts(timeout_s)


def flush_alerts(timeout_s: float = 30.0) -> bool:
    """Wait until every queued alert was delivered or given up on; False on timeout."""
    return _dispatcher.flush(timeout_s)


class _Dispatcher:
    """The process's one alert worker: a bounded queue and a daemon thread."""

    def __init__(self) -> None:
        self._queue: queue.Queue[tuple[str, Budget, str]] = queue.Queue(QUEUE_SIZE)
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._unfinished = 0
        self._thread: threading.Thread | None = None
        self._pending: set[int] = set()  # budgets with a check queued (one each is enough)
        self._claimed: set[tuple[str, str, str, str]] = set()  # for ledgers without claims
        self._dropped = False
        self._watched = 0

    def adopt(self, budget: Budget) -> None:
        with self._lock:
            self._watched += 1
            if self._watched == 1:
                subscribe(_on_event)
        weakref.finalize(budget, self._forget)

    def _forget(self) -> None:
        with self._lock:
            self._watched -= 1
            if self._watched == 0:
                unsubscribe(_on_event)

    def start(self) -> None:
        with self._lock:
            if self._thread is not None and self._thread.is_alive():
                return
            self._thread = threading.Thread(target=self._run, name="spendguard-alerts",
                                            daemon=True)
            self._thread.start()

    def put(self, item: tuple[str, Budget, str]) -> None:
        self.start()
        kind, budget, _ = item
        with self._lock:
            if kind == "check" and id(budget) in self._pending:
                return
            try:
                self._queue.put_nowait(item)
            except queue.Full:
                if not self._dropped:
                    self._dropped = True
                    log.warning("spendguard: the alert queue is full (%d); checks are dropped "
                                "until it drains", QUEUE_SIZE)
                return
            self._unfinished += 1
            if kind == "check":
                self._pending.add(id(budget))

    def flush(self, timeout_s: float) -> bool:
        with self._idle:
            return self._idle.wait_for(lambda: self._unfinished == 0, timeout=timeout_s)

    def _run(self) -> None:
        while True:
            kind, budget, detail = self._queue.get()
            try:
                if kind == "check":
                    with self._lock:
                        self._pending.discard(id(budget))
                    self._check(budget)
                elif kind == "refused":
                    self._check(budget, refused=True)
                else:
                    self._runaway(budget, detail)
            except Exception:
                log.warning("spendguard: checking the alerts of %r failed", budget.scope,
                            exc_info=True)
            finally:
                del budget  # not kept alive by this idle thread (see adopt)
                with self._idle:
                    self._unfinished -= 1
                    self._dropped = False
                    self._idle.notify_all()

    def _check(self, budget: Budget, *, refused: bool = False) -> None:
        limit = budget.limit_usd
        if limit <= 0:
            return
        now = as_utc(budget.now())
        key = budget.period_key
        spent = budget.totals().spent_usd
        due: list[Alert] = []
        warn = budget._warn_usd
        if warn is not None and spent >= warn and spent < limit:
            due.append(Alert("warn", budget.scope, key, spent, limit, now))
        if spent >= limit or refused:
            due.append(Alert("limit", budget.scope, key, spent, limit, now))
        forecast = forecast_usd(spent, key, now)
        if forecast is not None and forecast > limit and spent < limit:
            due.append(Alert("forecast", budget.scope, key, spent, limit, now, forecast,
                             "Forecast: spent so far divided by the share of the period "
                             "elapsed."))
        for alert in due:
            self._deliver(budget, alert, alert.threshold)

    def _runaway(self, budget: Budget, detail: str) -> None:
        now = as_utc(budget.now())
        spent = budget.totals().spent_usd
        alert = Alert("runaway", budget.scope, budget.period_key, spent, budget.limit_usd, now,
                      detail=detail)
        self._deliver(budget, alert, "runaway")

    def _deliver(self, budget: Budget, alert: Alert, threshold: str) -> None:
        key = warning_key(alert.period_key)
        ledger = budget.ledger
        claim = getattr(ledger, "claim_alert", None)
        if claim is not None:
            fresh = bool(claim(alert.scope, key, threshold, alert.time))
        else:  # a ledger of the user's own: de-duplicated within this process only
            mark = (ledger.url, alert.scope, key, threshold)
            with self._lock:
                fresh = mark not in self._claimed
                self._claimed.add(mark)
        if fresh:
            for hook in budget.alerts:
                hook.send(alert)


def _on_event(event: CallEvent) -> None:
    """Queue a check for every alerted budget a finished or refused call touched."""
    if event.stage is Stage.WARNED and event.status == "runaway":
        for budget in event.budgets:
            if budget.alerts and budget.scope == event.scope:
                _dispatcher.put(("runaway", budget, event.message or ""))
        return
    if event.stage is Stage.REFUSED and event.status != "runaway":
        for budget in event.budgets:
            if budget.alerts and budget.scope == event.scope:
                _dispatcher.put(("refused", budget, ""))
    if event.stage not in (Stage.SETTLED, Stage.REFUSED, Stage.WOULD_REFUSE):
        return
    for budget in event.budgets:
        if budget.alerts:
            _dispatcher.put(("check", budget, ""))


_dispatcher = _Dispatcher()
atexit.register(flush_alerts, 5.0)
