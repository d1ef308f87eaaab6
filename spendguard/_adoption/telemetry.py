"""OpenTelemetry spans and metrics for every guarded call (extra ``spendguard-llm[otel]``).

Off until :func:`enable` is called (``spendguard run`` calls it when ``SPENDGUARD_OTEL=1``):
being explicit keeps the call path free of any check while telemetry is not wanted, and
never surprises an application that configured OpenTelemetry for something else.

Each call attempt (SDK retries included) yields one CLIENT span named
``"{gen_ai.operation.name} {gen_ai.request.model}"`` with the GenAI semantic conventions'
attributes and values (names as spelled in opentelemetry-semantic-conventions 0.66b2; the
provider name and the model as the caller wrote it come from :mod:`spendguard._guard.facts`)
and spendguard's own ``spendguard.*`` ones. When another instrumentation already opened a
GenAI inference span around the call, that span is enriched instead of a second one made, and
none of its attributes is changed: ours go only where theirs are missing, and a disagreeing
reading goes beside theirs under ``spendguard.*``. Its token and duration histograms are then
left to it (``genai_metrics="auto"``), so no call is counted twice. A refusal is a span with
error status and a ``spendguard.refused`` event; a failed attempt carries ``error.type``;
warnings are events on the call's span. Money attributes are floats of USD (the ledger keeps
the exact Decimal). No prompt text and no key ever reach a span: call events carry neither.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Literal

from spendguard._budget.events import CallEvent, Stage, subscribe, unsubscribe
from spendguard._core.errors import ConfigError
from spendguard._costing.endpoints import Endpoint
from spendguard._providers import otel_provider_name

__all__ = ["disable", "enable", "enabled"]

GenAIMetrics = Literal["auto", "always", "never"]

# The OpenTelemetry GenAI semantic conventions' gen_ai.operation.name of each endpoint.
_OPERATIONS: dict[str, str] = {member.value: member.otel_operation for member in Endpoint}
_INFERENCE_OPERATIONS = frozenset({"chat", "text_completion", "embeddings", "generate_content"})
_INPUT_KINDS = ("input", "cache_read")
# The conventions' advice for the two GenAI client histograms (gen-ai-metrics.md).
TOKEN_BUCKETS = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304,
                 16777216, 67108864)
DURATION_BUCKETS_S = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24,
                      20.48, 40.96, 81.92)
# USD per call spans a fraction of a cent to tens of dollars: powers of ten and halves.
COST_BUCKETS_USD = (0.00001, 0.00005, 0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1,
                    5, 10, 50)


@dataclass(slots=True)
class _Open:
    span: Any
    owned: bool  # False: another instrumentation's span, enriched but not ended by us
    started_s: float


class _Telemetry:
    """The subscriber: call events in, spans and metrics out."""

    def __init__(self, tracer_provider: Any = None, meter_provider: Any = None, *,
                 genai_metrics: GenAIMetrics = "auto", estimated_usage: bool = False,
                 cost_attributes: bool = False) -> None:
        from opentelemetry import metrics, trace  # noqa: PLC0415 - the otel extra, on demand

        # The installed distribution's version (the package's own __init__ is the public
        # surface, above this layer).
        __version__ = _package_version()

        self._trace = trace
        self.genai_metrics = genai_metrics
        self.estimated_usage = estimated_usage
        self.cost_attributes = cost_attributes
        self.tracer = trace.get_tracer("spendguard", __version__,
                                       tracer_provider=tracer_provider)
        meter = metrics.get_meter("spendguard", __version__, meter_provider=meter_provider)
        self.token_usage = meter.create_histogram(
            "gen_ai.client.token.usage", unit="{token}",
            description="Number of input and output tokens used",
            explicit_bucket_boundaries_advisory=TOKEN_BUCKETS)
        self.duration = meter.create_histogram(
            "gen_ai.client.operation.duration", unit="s",
            description="GenAI operation duration",
            explicit_bucket_boundaries_advisory=DURATION_BUCKETS_S)
        self.cost = meter.create_counter(
            "spendguard.cost", unit="USD", description="What guarded calls cost")
        self.call_cost = meter.create_histogram(
            "spendguard.call.cost", unit="USD", description="What each guarded call cost",
            explicit_bucket_boundaries_advisory=COST_BUCKETS_USD)
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

    def _genai_span(self) -> Any | None:
        """The current span when another instrumentation opened a GenAI span around us."""
        current = self._trace.get_current_span()
        attributes = getattr(current, "attributes", None) or {}
        # An inference span (not an agent's or a tool's, which hold many calls).
        return current if current.is_recording() and attributes.get(
            "gen_ai.operation.name") in _INFERENCE_OPERATIONS else None

    def _start(self, event: CallEvent) -> _Open:
        theirs = self._genai_span()
        if theirs is None:
            span = self.tracer.start_span(_span_name(event), kind=self._trace.SpanKind.CLIENT)
        else:
            span = theirs
        _apply(span, _request_attributes(event, owned=theirs is None), owned=theirs is None)
        return _Open(span, theirs is None, time.perf_counter())

    def _refused(self, event: CallEvent) -> None:
        theirs = self._genai_span()
        span = theirs if theirs is not None else self.tracer.start_span(
            _span_name(event), kind=self._trace.SpanKind.CLIENT)
        attributes = {**_request_attributes(event, owned=theirs is None),
                      "spendguard.status": "refused", "error.type": "BudgetExceeded"}
        _apply(span, attributes, owned=theirs is None)
        span.add_event("spendguard.refused", {"spendguard.scope": event.scope or "",
                                              "message": event.message or ""})
        if theirs is None:  # their span's status is theirs to set
            span.set_status(self._trace.Status(self._trace.StatusCode.ERROR,
                                               event.message or "refused"))
            span.end()
        self.refusals.add(1, _metric_attributes(event))

    def _finish(self, opened: _Open, event: CallEvent) -> None:
        span = opened.span
        attributes: dict[str, Any] = {"spendguard.status": event.status or ""}
        remaining = _remaining_usd(event)
        if remaining is not None:
            attributes["spendguard.budget.remaining_usd"] = float(remaining)
        labels = _metric_attributes(event)
        # Another instrumentation's span around the call: it reports tokens and durations
        # for this call already, and a sum over both would count the call twice.
        genai_metrics = self.genai_metrics == "always" or (
            self.genai_metrics == "auto" and opened.owned)
        error_type = None
        if event.stage is Stage.SETTLED:
            reported = not event.usage_estimated or self.estimated_usage
            input_tokens, output_tokens = self._usage(event, attributes, reported=reported)
            usd = float(event.actual_usd or Decimal(0))
            attributes["spendguard.actual_usd"] = usd
            attributes["spendguard.price_table.version"] = event.table_version or ""
            if self.cost_attributes:  # the draft cost attributes of the GenAI conventions
                attributes.update({"gen_ai.usage.cost.amount": usd,
                                   "gen_ai.usage.cost.currency": "USD",
                                   "gen_ai.usage.cost.source": "local"})
            if genai_metrics and reported:
                self.token_usage.record(input_tokens, {**labels, "gen_ai.token.type": "input"})
                self.token_usage.record(output_tokens,
                                        {**labels, "gen_ai.token.type": "output"})
            self.cost.add(usd, labels)
            self.call_cost.record(usd, labels)
        else:  # released: the attempt failed and was not billed
            error_type = _error_type(event.message)
            attributes["error.type"] = error_type
        if genai_metrics:
            extra = {} if error_type is None else {"error.type": error_type}
            self.duration.record(time.perf_counter() - opened.started_s, {**labels, **extra})
        _apply(span, attributes, owned=opened.owned)
        if opened.owned:
            if error_type is not None:
                span.set_status(self._trace.Status(self._trace.StatusCode.ERROR, error_type))
            span.end()

    def _usage(self, event: CallEvent, attributes: dict[str, Any], *,
               reported: bool) -> tuple[int, int]:
        """Token counts onto ``attributes``: the conventions' names for usage the provider
        reported (or estimated usage the user opted into), ``spendguard.*`` otherwise."""
        tokens = event.tokens
        cache_write = sum(n for kind, n in tokens.items() if kind.startswith("cache_write"))
        input_tokens = sum(n for kind, n in tokens.items() if kind in _INPUT_KINDS) + \
            cache_write
        output_tokens = tokens.get("output", 0)
        attributes["spendguard.usage_estimated"] = event.usage_estimated
        if not reported:
            attributes["spendguard.usage.estimated_input_tokens"] = input_tokens
            attributes["spendguard.usage.estimated_output_tokens"] = output_tokens
            return input_tokens, output_tokens
        attributes.update({
            "gen_ai.usage.input_tokens": input_tokens,
            "gen_ai.usage.output_tokens": output_tokens,
            "gen_ai.usage.cache_read.input_tokens": tokens.get("cache_read", 0),
            "gen_ai.usage.cache_creation.input_tokens": cache_write,
        })
        if tokens.get("reasoning"):
            attributes["gen_ai.usage.reasoning.output_tokens"] = tokens["reasoning"]
        if event.response_model:
            attributes["gen_ai.response.model"] = event.response_model
        if event.response_id:
            attributes["gen_ai.response.id"] = event.response_id
        if event.finish_reasons:
            attributes["gen_ai.response.finish_reasons"] = list(event.finish_reasons)
        if event.request_id:
            attributes["spendguard.request_id"] = event.request_id
        return input_tokens, output_tokens


def _apply(span: Any, attributes: Mapping[str, Any], *, owned: bool) -> None:
    """Set ``attributes`` on a span; on another instrumentation's span, never change theirs.

    A GenAI attribute they set already is kept; when ours differs it is recorded as
    ``spendguard.<name without gen_ai.>`` beside it, so both readings survive.
    """
    if owned:
        span.set_attributes(attributes)
        return
    theirs = getattr(span, "attributes", None) or {}
    missing: dict[str, Any] = {}
    for name, value in attributes.items():
        if name.startswith("spendguard.") or name not in theirs:
            missing[name] = value
        elif _differs(theirs[name], value):
            missing["spendguard." + name.removeprefix("gen_ai.")] = value
    span.set_attributes(missing)


def _differs(theirs: Any, ours: Any) -> bool:
    if isinstance(theirs, list | tuple) and isinstance(ours, list | tuple):
        return list(theirs) != list(ours)
    return bool(theirs != ours)


def _operation(event: CallEvent) -> str:
    return _OPERATIONS.get(event.endpoint, event.endpoint or "chat")


def _provider_name(event: CallEvent) -> str:
    if event.facts is not None:
        return event.facts.provider_name
    # A call refused before any request was built has no facts: the conventions' name still.
    return otel_provider_name(event.provider)


def _request_model(event: CallEvent) -> str:
    return event.facts.request_model if event.facts is not None else event.model


def _span_name(event: CallEvent) -> str:
    return f"{_operation(event)} {_request_model(event)}"


def _error_type(message: str | None) -> str:
    """``error.type`` of a failed attempt: the HTTP status, or the exception's class name."""
    reason = (message or "").strip()
    if reason.startswith("http "):
        return reason.removeprefix("http ").strip() or "_OTHER"
    return reason or "_OTHER"


def _request_attributes(event: CallEvent, *, owned: bool) -> dict[str, Any]:
    provider = _provider_name(event)
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": _operation(event),
        "gen_ai.provider.name": provider,
        "gen_ai.request.model": _request_model(event),
        "spendguard.pricing.model": event.model,
        "spendguard.estimated_usd": float(event.worst_usd or Decimal(0)),
        "spendguard.scope": event.scopes[-1] if event.scopes else "",
        "spendguard.scopes": list(event.scopes),
        "spendguard.attempt": event.attempt,
    }
    if owned:
        attributes["gen_ai.system"] = provider  # the older name, still read by many backends
    facts = event.facts
    if facts is not None:
        optional = {"server.address": facts.server_address, "server.port": facts.server_port,
                    "gen_ai.request.max_tokens": facts.max_tokens,
                    "gen_ai.request.temperature": facts.temperature}
        attributes.update({name: value for name, value in optional.items()
                           if value is not None})
    if event.estimated_input_tokens is not None:
        attributes["spendguard.estimated_input_tokens"] = event.estimated_input_tokens
    if event.call_id is not None:
        attributes["spendguard.call_id"] = event.call_id
    return attributes


def _metric_attributes(event: CallEvent) -> dict[str, str]:
    # The innermost scope only: a call counted once per scope would be summed twice.
    return {"gen_ai.operation.name": _operation(event),
            "gen_ai.provider.name": _provider_name(event),
            "gen_ai.request.model": _request_model(event),
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


def enable(*, tracer_provider: Any = None, meter_provider: Any = None,
           genai_metrics: GenAIMetrics = "auto", estimated_usage: bool = False,
           cost_attributes: bool = False) -> None:
    """Emit spans and metrics for every guarded call from now on.

    Uses the global OpenTelemetry providers unless others are given. Calling it again
    replaces the providers and options. Needs ``pip install 'spendguard-llm[otel]'``.

    ``genai_metrics``: the conventions' ``gen_ai.client.token.usage`` and
    ``gen_ai.client.operation.duration`` histograms. ``"auto"`` (default) records them only
    for calls no other instrumentation wraps in a GenAI span (one that does emits the same
    instruments for that call); ``"always"`` or ``"never"`` decide for every call.
    spendguard's own cost and refusal metrics are always on. ``estimated_usage``: report
    usage spendguard estimated (a stream cut before its usage arrived) under the
    conventions' ``gen_ai.usage.*`` names too; off, it stays under ``spendguard.usage.*``.
    ``cost_attributes``: also set ``gen_ai.usage.cost.amount`` / ``.currency`` /
    ``.source`` (``local``), the shape a draft of the conventions proposes.
    """
    global _active  # noqa: PLW0603 - one telemetry subscriber per process
    if genai_metrics not in ("auto", "always", "never"):
        raise ConfigError(f"telemetry: genai_metrics={genai_metrics!r}; use 'auto', 'always' "
                          "or 'never'")
    try:
        telemetry = _Telemetry(tracer_provider, meter_provider, genai_metrics=genai_metrics,
                               estimated_usage=estimated_usage,
                               cost_attributes=cost_attributes)
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
