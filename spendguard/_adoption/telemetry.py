"""OpenTelemetry spans and metrics for every guarded call (extra ``spendguard-llm[otel]``).

Off until :func:`enable` is called (``spendguard run`` calls it when ``SPENDGUARD_OTEL=1``):
being explicit keeps the call path free of any check while telemetry is not wanted, and
never surprises an application that configured OpenTelemetry for something else.

Each call attempt (SDK retries included) yields one CLIENT span named
``"{gen_ai.operation.name} {gen_ai.request.model}"`` with the GenAI semantic-convention
attributes (names as spelled in opentelemetry-semantic-conventions 0.66b2,
``gen_ai_attributes.py`` and ``gen_ai_metrics.py``) and spendguard's own ``spendguard.*``
ones. When another instrumentation already opened a GenAI span around the call (the current
span carries ``gen_ai.operation.name``), that span is enriched instead of a second one made.
A refusal is a span with error status and a ``spendguard.refused`` event; warnings
(``spendguard.budget_warning``, ``spendguard.would_refuse``) are events on the call's span.
Money attributes are floats of USD (the ledger keeps the exact Decimal). No prompt text and
no key ever reach a span: call events carry neither.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from spendguard._budget.events import CallEvent, Stage, subscribe, unsubscribe
from spendguard._core.errors import ConfigError
from spendguard._costing.endpoints import Endpoint

__all__ = ["disable", "enable", "enabled"]

# The OpenTelemetry GenAI semantic conventions' gen_ai.operation.name of each endpoint.
_OPERATIONS: dict[str, str] = {Endpoint.CHAT: "chat", Endpoint.MESSAGES: "chat",
                               Endpoint.RESPONSES: "chat", Endpoint.EMBEDDINGS: "embeddings"}
_INPUT_KINDS = ("input", "cache_read")


@dataclass(slots=True)
class _Open:
    span: Any
    owned: bool  # False: another instrumentation's span, enriched but not ended by us
    started_s: float


class _Telemetry:
    """The subscriber: call events in, spans and metrics out."""

    def __init__(self, tracer_provider: Any = None, meter_provider: Any = None) -> None:
        from opentelemetry import metrics, trace  # noqa: PLC0415 - the otel extra, on demand

        # The installed distribution's version (the package's own __init__ is the public
        # surface, above this layer).
        __version__ = _package_version()

        self._trace = trace
        self.tracer = trace.get_tracer("spendguard", __version__,
                                       tracer_provider=tracer_provider)
        meter = metrics.get_meter("spendguard", __version__, meter_provider=meter_provider)
        self.token_usage = meter.create_histogram(
            "gen_ai.client.token.usage", unit="{token}",
            description="Tokens used per call, by gen_ai.token.type")
        self.duration = meter.create_histogram(
            "gen_ai.client.operation.duration", unit="s",
            description="Time from sending a call to its end")
        self.cost = meter.create_counter(
            "spendguard.cost", unit="USD", description="What guarded calls cost")
        self.call_cost = meter.create_histogram(
            "spendguard.call.cost", unit="USD", description="What each guarded call cost")
        self.refusals = meter.create_counter(
            "spendguard.refusals", unit="{call}", description="Calls refused before sending")
        self._open: dict[str, _Open] = {}
        self._early: dict[str, list[tuple[str, dict[str, str]]]] = {}
        self._lock = threading.Lock()

    def __call__(self, event: CallEvent) -> None:
        if event.stage is Stage.RESERVED and event.call_id is not None:
            started = self._start(event)
            with self._lock:
                self._open[event.call_id] = started
                early = self._early.pop(event.call_id, [])
            for name, detail in early:
                started.span.add_event(name, detail)
        elif event.stage is Stage.REFUSED:
            self._refused(event)
        elif event.stage in (Stage.WARNED, Stage.WOULD_REFUSE):
            name = ("spendguard.would_refuse" if event.stage is Stage.WOULD_REFUSE
                    else "spendguard.budget_warning")
            detail = {"spendguard.scope": event.scope or "", "message": event.message or ""}
            with self._lock:
                opened = None if event.call_id is None else self._open.get(event.call_id)
                if opened is None and event.call_id is not None:
                    # would_refuse comes while the call is being reserved, before "reserved"
                    self._early.setdefault(event.call_id, []).append((name, detail))
            if opened is not None:
                opened.span.add_event(name, detail)
        elif event.stage in (Stage.SETTLED, Stage.RELEASED) and event.call_id is not None:
            with self._lock:
                ending = self._open.pop(event.call_id, None)
            if ending is not None:
                self._finish(ending, event)

    # -- spans --------------------------------------------------------------------------

    def _start(self, event: CallEvent) -> _Open:
        current = self._trace.get_current_span()
        attributes = getattr(current, "attributes", None) or {}
        if current.is_recording() and "gen_ai.operation.name" in attributes:
            span, owned = current, False
        else:
            span = self.tracer.start_span(
                f"{_operation(event)} {event.model}", kind=self._trace.SpanKind.CLIENT)
            owned = True
        span.set_attributes(_request_attributes(event))
        return _Open(span, owned, time.perf_counter())

    def _refused(self, event: CallEvent) -> None:
        current = self._trace.get_current_span()
        attributes = getattr(current, "attributes", None) or {}
        owned = not (current.is_recording() and "gen_ai.operation.name" in attributes)
        span = (self.tracer.start_span(f"{_operation(event)} {event.model}",
                                       kind=self._trace.SpanKind.CLIENT)
                if owned else current)
        span.set_attributes({**_request_attributes(event), "spendguard.status": "refused",
                             "error.type": "BudgetExceeded"})
        span.add_event("spendguard.refused", {"spendguard.scope": event.scope or "",
                                              "message": event.message or ""})
        span.set_status(self._trace.Status(self._trace.StatusCode.ERROR,
                                           event.message or "refused"))
        self.refusals.add(1, _metric_attributes(event))
        if owned:
            span.end()

    def _finish(self, opened: _Open, event: CallEvent) -> None:
        span = opened.span
        attributes: dict[str, Any] = {"spendguard.status": event.status or ""}
        remaining = _remaining_usd(event)
        if remaining is not None:
            attributes["spendguard.budget.remaining_usd"] = float(remaining)
        labels = _metric_attributes(event)
        if event.stage is Stage.SETTLED:
            input_tokens = sum(n for kind, n in event.tokens.items()
                               if kind in _INPUT_KINDS or kind.startswith("cache_write"))
            output_tokens = event.tokens.get("output", 0)
            cache_write = sum(n for kind, n in event.tokens.items()
                              if kind.startswith("cache_write"))
            attributes.update({
                "gen_ai.response.model": event.response_model or event.model,
                "gen_ai.usage.input_tokens": input_tokens,
                "gen_ai.usage.output_tokens": output_tokens,
                "gen_ai.usage.cache_read.input_tokens": event.tokens.get("cache_read", 0),
                "gen_ai.usage.cache_creation.input_tokens": cache_write,
                "spendguard.actual_usd": float(event.actual_usd or Decimal(0)),
                "spendguard.usage_estimated": event.usage_estimated,
                "spendguard.price_table.version": event.table_version or "",
            })
            if event.tokens.get("reasoning"):
                attributes["gen_ai.usage.reasoning.output_tokens"] = event.tokens["reasoning"]
            if event.request_id:
                attributes["spendguard.request_id"] = event.request_id
            self.token_usage.record(input_tokens, {**labels, "gen_ai.token.type": "input"})
            self.token_usage.record(output_tokens, {**labels, "gen_ai.token.type": "output"})
            usd = float(event.actual_usd or Decimal(0))
            self.cost.add(usd, labels)
            self.call_cost.record(usd, labels)
        self.duration.record(time.perf_counter() - opened.started_s, labels)
        span.set_attributes(attributes)
        if opened.owned:
            span.end()


def _operation(event: CallEvent) -> str:
    return _OPERATIONS.get(event.endpoint, event.endpoint or "chat")


def _request_attributes(event: CallEvent) -> dict[str, Any]:
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": _operation(event),
        "gen_ai.provider.name": event.provider,
        "gen_ai.system": event.provider,  # the older name, still read by many backends
        "gen_ai.request.model": event.model,
        "spendguard.estimated_usd": float(event.worst_usd or Decimal(0)),
        "spendguard.scope": event.scopes[-1] if event.scopes else "",
        "spendguard.scopes": list(event.scopes),
        "spendguard.attempt": event.attempt,
    }
    if event.estimated_input_tokens is not None:
        attributes["spendguard.estimated_input_tokens"] = event.estimated_input_tokens
    if event.call_id is not None:
        attributes["spendguard.call_id"] = event.call_id
    return attributes


def _metric_attributes(event: CallEvent) -> dict[str, str]:
    # The innermost scope only: a call counted once per scope would be summed twice.
    return {"gen_ai.operation.name": _operation(event), "gen_ai.provider.name": event.provider,
            "gen_ai.request.model": event.model,
            "spendguard.scope": event.scopes[-1] if event.scopes else ""}


def _remaining_usd(event: CallEvent) -> Decimal | None:
    enforcing = [b for b in event.budgets if b.enforce]
    if not enforcing:
        return None
    try:
        return min(b.remaining for b in enforcing)
    except Exception:  # a ledger read failing must not cost the span
        return None


_lock = threading.Lock()
_active: _Telemetry | None = None


def enable(*, tracer_provider: Any = None, meter_provider: Any = None) -> None:
    """Emit spans and metrics for every guarded call from now on.

    Uses the global OpenTelemetry providers unless others are given. Calling it again
    replaces the providers. Needs ``pip install 'spendguard-llm[otel]'``.
    """
    global _active  # noqa: PLW0603 - one telemetry subscriber per process
    try:
        telemetry = _Telemetry(tracer_provider, meter_provider)
    except ImportError as exc:
        raise ConfigError("telemetry: opentelemetry-api is not installed; install it with "
                          "`pip install 'spendguard-llm[otel]'`") from exc
    with _lock:
        if _active is not None:
            unsubscribe(_active)
        _active = telemetry
        subscribe(telemetry)


def disable() -> None:
    """Stop emitting spans and metrics (does nothing when not enabled)."""
    global _active  # noqa: PLW0603
    with _lock:
        if _active is not None:
            unsubscribe(_active)
            _active = None


def enabled() -> bool:
    """Whether :func:`enable` is in effect."""
    return _active is not None


def _package_version() -> str:
    from importlib.metadata import PackageNotFoundError, version  # noqa: PLC0415

    try:
        return version("spendguard-llm")
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "0+unknown"
