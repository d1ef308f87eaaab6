"""The inside of ``spendguard run``: what each Python process of the program does at start-up.

``spendguard run`` puts a ``sitecustomize`` on ``PYTHONPATH`` and its settings in the
``SPENDGUARD_RUN`` environment variable (JSON); every Python process it starts — the program
and any Python subprocess it spawns — calls :func:`boot` before the program's first import:
the budget is built, :func:`spendguard.install` is made active, and a :class:`RunTally` counts
this process's call events. At exit the tally is written as ``<pid>.json`` into the run's
summary folder, which the ``spendguard run`` command adds up and prints.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import threading
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from spendguard._budget.events import CallEvent, Stage, subscribe
from spendguard._core.money import ZERO
from spendguard._core.private_files import write_private_text

__all__ = ["ENV_VAR", "GUARDED_HEADER", "RunSettings", "RunTally", "boot"]

ENV_VAR = "SPENDGUARD_RUN"
GUARDED_HEADER = "x-spendguard-guarded"
"""Marks a request a Python process of the run already guarded, for the run's gateway: with
the run's secret token it is forwarded without being charged twice."""


@dataclass(frozen=True, slots=True)
class RunSettings:
    """What ``spendguard run`` was asked for, as every process of the run reads it."""

    summary_dir: str
    limit_usd: str | None = None
    scope: str | None = None
    period: str | None = None
    ledger: str | None = None
    observe: bool = False
    gateway_url: str | None = None
    """The run's gateway (for programs that are not Python), when one runs."""
    gateway_token: str | None = None
    """The secret of :data:`GUARDED_HEADER` for this run's gateway."""

    def to_env(self) -> str:
        return json.dumps({"summary_dir": self.summary_dir, "limit_usd": self.limit_usd,
                           "scope": self.scope, "period": self.period, "ledger": self.ledger,
                           "observe": self.observe, "gateway_url": self.gateway_url,
                           "gateway_token": self.gateway_token})

    @classmethod
    def from_env(cls, text: str) -> RunSettings:
        data = json.loads(text)
        return cls(str(data["summary_dir"]), data.get("limit_usd"), data.get("scope"),
                   data.get("period"), data.get("ledger"), bool(data.get("observe")),
                   data.get("gateway_url"), data.get("gateway_token"))

    def budget(self) -> Any:
        """The run's budget (a :class:`~spendguard.Budget`), or None when no limit was given."""
        if self.limit_usd is None:
            return None
        from spendguard._budget.budget import Budget  # noqa: PLC0415 - only when there is a limit

        return Budget(self.limit_usd, scope=self.scope, period=self.period,
                      ledger=self.ledger, enforce=not self.observe)


@dataclass
class RunTally:
    """One process's call events, added up: calls, tokens, money, refusals, warnings."""

    calls: int = 0
    released: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: Decimal = ZERO
    refusals: int = 0
    refused_usd: Decimal = ZERO
    warnings: int = 0
    would_refuse: int = 0
    would_refuse_usd: Decimal = ZERO
    _would_refuse_ids: set[str] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, event: CallEvent) -> None:
        with self._lock:
            if event.stage is Stage.SETTLED:
                self.calls += 1
                self.cost_usd += event.actual_usd or ZERO
                self.input_tokens += sum(n for kind, n in event.tokens.items()
                                         if kind == "input" or kind.startswith("cache_"))
                self.output_tokens += event.tokens.get("output", 0)
                if event.call_id in self._would_refuse_ids:
                    self.would_refuse_usd += event.actual_usd or ZERO
            elif event.stage is Stage.RELEASED:
                self.released += 1
            elif event.stage is Stage.REFUSED:
                self.refusals += 1
                self.refused_usd += event.worst_usd or ZERO
            elif event.stage is Stage.WARNED:
                self.warnings += 1
            elif event.stage is Stage.WOULD_REFUSE and event.call_id not in (
                    self._would_refuse_ids):
                self.would_refuse += 1
                if event.call_id is not None:
                    self._would_refuse_ids.add(event.call_id)

    def reset(self) -> None:
        """Forget every count (a forked process starts its own tally)."""
        self._lock = threading.Lock()  # the parent's may have been held while forking
        fresh = RunTally()
        for name in ("calls", "released", "input_tokens", "output_tokens", "cost_usd",
                     "refusals", "refused_usd", "warnings", "would_refuse",
                     "would_refuse_usd"):
            setattr(self, name, getattr(fresh, name))
        self._would_refuse_ids = set()

    def as_dict(self) -> dict[str, Any]:
        with self._lock:
            return {"calls": self.calls, "released": self.released,
                    "input_tokens": self.input_tokens, "output_tokens": self.output_tokens,
                    "cost_usd": str(self.cost_usd), "refusals": self.refusals,
                    "refused_usd": str(self.refused_usd), "warnings": self.warnings,
                    "would_refuse": self.would_refuse,
                    "would_refuse_usd": str(self.would_refuse_usd)}

    def write(self, folder: str | os.PathLike[str]) -> None:
        """Save this process's tally as ``<folder>/<pid>.json`` (written whole, then renamed)."""
        target = Path(folder) / f"{os.getpid()}.json"
        partial = target.with_suffix(".part")
        write_private_text(partial, json.dumps(self.as_dict()))
        partial.replace(target)


def boot(environ: dict[str, str] | None = None) -> RunTally | None:
    """Make this process part of a ``spendguard run``: install the guard, count its calls.

    Does nothing (returns None) outside a run.
    """
    text = (os.environ if environ is None else environ).get(ENV_VAR)
    if not text:
        return None
    settings = RunSettings.from_env(text)
    from spendguard._adoption.install import install  # noqa: PLC0415 - only inside a run

    install(budget=settings.budget())
    if settings.gateway_url and settings.gateway_token:
        from spendguard._guard.transport import mark_guarded  # noqa: PLC0415

        # This process's clients are guarded here; the run's gateway must not charge them again.
        mark_guarded(settings.gateway_url, GUARDED_HEADER, settings.gateway_token)
    if (os.environ if environ is None else environ).get("SPENDGUARD_OTEL") == "1":
        from spendguard._adoption.telemetry import enable  # noqa: PLC0415 - the otel extra, on demand

        enable()  # the program's own OpenTelemetry set-up (or the global no-op) receives it
    tally = RunTally()
    subscribe(tally)
    # A forked child starts with a copy of the parent's counts: it must count only its own.
    os.register_at_fork(after_in_child=tally.reset)
    atexit.register(_save, tally, settings.summary_dir)
    return tally


def _save(tally: RunTally, folder: str) -> None:
    # The run's folder may be gone (the command was killed): then nothing is left to tell.
    with contextlib.suppress(OSError):
        tally.write(folder)
