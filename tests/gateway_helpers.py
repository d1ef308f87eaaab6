"""Helpers for the gateway tests: the emulator behind a gateway, in-process or as a process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx2

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
    """The calls the ledger recorded (not the $0 markers refusals leave)."""
    return [record for record in spendguard.open_ledger(ledger_url).records(scope=scope)
            if record.tags.get("spendguard.event") != "refused"]


def held_sleep(gate: threading.Event) -> Callable[[float], None]:
    """An emulator ``sleep`` that waits for ``gate`` instead of a time (tests never sleep)."""
    def sleep(_seconds: float) -> None:
        gate.wait(30)
    return sleep


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


def spawn_gateway(*args: str) -> subprocess.Popen[str]:
    """``spendguard gateway --port 0 --json ARGS`` started as a process (see :func:`urls_of`)."""
    return subprocess.Popen(
        [sys.executable, "-c", "from spendguard.cli import main; main()", "gateway",
         "--port", "0", "--json", *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO_ROOT,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})


def urls_of(child: subprocess.Popen[str]) -> dict[str, str]:
    """The URLs a spawned gateway prints once it listens."""
    assert child.stdout is not None
    line = child.stdout.readline()
    if not line:
        _, err = child.communicate(timeout=10)
        raise AssertionError(f"the gateway did not start: {err}")
    urls: dict[str, str] = json.loads(line)
    return urls


def gateway_process(*args: str) -> tuple[subprocess.Popen[str], dict[str, str]]:
    """A gateway process, once it listens, with its URLs."""
    child = spawn_gateway(*args)
    return child, urls_of(child)


def worst_usd(refusal_body: dict[str, Any]) -> Decimal:
    """The worst case a refusal names (its ``error.spendguard`` member)."""
    return Decimal(refusal_body["error"]["spendguard"]["worst_case_usd"])


def refused_worst_usd(server: EmulatorServer, *, model: str, max_tokens: int) -> Decimal:
    """The worst case of one chat call of ``model``, as a gateway refusing it names it."""
    with gateway_for(server, limit_usd="0.000001") as probe:
        refused = httpx2.post(probe.openai_base_url + "/chat/completions", timeout=30,
                              headers={"authorization": "Bearer k"},
                              json={"model": model, "messages": USER,
                                    "max_tokens": max_tokens})
    assert refused.status_code == 402
    return worst_usd(refused.json())
