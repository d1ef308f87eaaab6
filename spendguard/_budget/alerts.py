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
import logging
import queue
import threading
import weakref

from spendguard._budget.events import CallEvent, Stage, subscribe, unsubscribe
from spendguard._budget.webhooks import (
    FORECAST_FROM,
    Alert,
    Budget,
    Threshold,
    Webhook,
    check_webhooks,
    forecast_usd,
    mask_url,
    set_watcher,
    watch,
)
from spendguard._core.periods import as_utc, warning_key

__all__ = ["FORECAST_FROM", "Alert", "Budget", "Threshold", "Webhook", "check_alerts",
           "check_webhooks", "flush_alerts", "forecast_usd", "mask_url", "watch"]

log = logging.getLogger("spendguard.alerts")

QUEUE_SIZE = 1000
"""Checks waiting for the worker at most; past it a check is dropped (and redone next call)."""


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
set_watcher(_dispatcher.adopt)
atexit.register(flush_alerts, 5.0)
