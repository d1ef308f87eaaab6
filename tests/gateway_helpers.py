"""Helpers for the gateway tests: the emulator behind a gateway, in-process or as a process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from decimal import Decimal
from pathlib import Path
from typing import Any

import spendguard
from spendguard._budget.events import CallEvent, Stage
from spendguard._gateway.app import Gateway
from spendguard._gateway.config import GatewayConfig
from spendguard._gateway.server import RunningGateway, start
from spendguard._gateway.upstreams import parse_upstream
from spendguard.testing import EmulatorServer

REPO_ROOT = Path(__file__).resolve().parent.parent
USER: Any = [{"role": "user", "content": "Say hello to the gateway."}]


def upstreams_for(server: EmulatorServer) -> tuple[Any, ...]:
    """The default upstreams pointed at the emulator."""
    return (parse_upstream(f"openai={server.openai_base_url}"),
            parse_upstream(f"anthropic={server.anthropic_base_url}"))


def memory_ledger() -> str:
    return f"memory://gateway-{uuid.uuid4().hex[:12]}"


@contextmanager
def gateway_for(server: EmulatorServer, **options: Any) -> Iterator[RunningGateway]:
    """An in-process gateway in front of ``server``, on a free loopback port."""
    options.setdefault("ledger", memory_ledger())
    options.setdefault("scope", f"gw:{uuid.uuid4().hex[:8]}")
    config = GatewayConfig(upstreams=upstreams_for(server), **options)
    with start(Gateway(config), grace_s=1) as running:
        yield running


def records(ledger_url: str, scope: str | None = None) -> list[spendguard.SpendRecord]:
    return list(spendguard.open_ledger(ledger_url).records(scope=scope))


class Settled:
    """Counts settled and released call events in this process; ``wait(n)`` blocks until n."""

    def __init__(self) -> None:
        self.events: list[CallEvent] = []
        self._changed = threading.Condition()

    def __call__(self, event: CallEvent) -> None:
        if event.stage in (Stage.SETTLED, Stage.RELEASED):
            with self._changed:
                self.events.append(event)
                self._changed.notify_all()

    def wait(self, count: int, timeout_s: float = 10.0) -> list[CallEvent]:
        with self._changed:
            self._changed.wait_for(lambda: len(self.events) >= count, timeout_s)
            return list(self.events)


@contextmanager
def settled_events() -> Iterator[Settled]:
    seen = Settled()
    spendguard.subscribe(seen)
    try:
        yield seen
    finally:
        spendguard.unsubscribe(seen)


def gateway_process(*args: str, env: dict[str, str] | None = None,
                    ) -> tuple[subprocess.Popen[str], dict[str, str]]:
    """``spendguard gateway --port 0 --json ARGS`` as a process; returns it with its URLs."""
    child = subprocess.Popen(
        [sys.executable, "-m", "spendguard.cli", "gateway", "--port", "0", "--json", *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO_ROOT,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT), **(env or {})})
    assert child.stdout is not None
    line = child.stdout.readline()
    if not line:
        child.wait(10)
        assert child.stderr is not None
        raise AssertionError(f"the gateway did not start: {child.stderr.read()}")
    return child, json.loads(line)


def worst_usd(refusal_body: dict[str, Any]) -> Decimal:
    return Decimal(refusal_body["error"]["spendguard"]["worst_case_usd"])
