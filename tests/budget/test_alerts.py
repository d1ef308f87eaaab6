"""Alerts delivered to webhooks: thresholds posted off the call path, retried, sent once."""

from __future__ import annotations

import gc
import json
import logging
import subprocess
import sys
import textwrap
import threading
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

import spendguard
from spendguard.testing import Emulator, ManualClock
from tests.finance_helpers import book
from tests.ledger_helpers import FakeClock
from tests.paths import REPO

SECRET = "T0000/B0000/s3cr3tT0k3n"


class Receiver:
    """A webhook receiver on 127.0.0.1: answers with ``statuses`` in turn (then 200)."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.statuses: list[int] = []
        self.hold = threading.Event()
        self.hold.set()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                receiver.hold.wait(10)
                body = self.rfile.read(int(self.headers["Content-Length"]))
                status = receiver.statuses.pop(0) if receiver.statuses else 200
                if status == 200:
                    receiver.bodies.append(json.loads(body))
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/services/{SECRET}"
        self.thread = threading.Thread(target=self.server.serve_forever,
                                       kwargs={"poll_interval": 0.02}, daemon=True)
        self.thread.start()

    def thresholds(self) -> list[str]:
        return [body.get("threshold", body.get("text", "")) for body in self.bodies]


@pytest.fixture(name="receiver")
def fixture_receiver() -> Iterator[Receiver]:
    receiver = Receiver()
    yield receiver
    spendguard.flush_alerts(10)
    gc.collect()  # the test's budgets go, and with them the alerts' event subscription
    receiver.hold.set()
    receiver.server.shutdown()
    receiver.server.server_close()


def _no_sleep(_seconds: float) -> None:
    pass


def _budget(receiver: Receiver, limit: str = "1", **options: Any) -> spendguard.Budget:
    hook = spendguard.Webhook(receiver.url, format=options.pop("format", "json"),
                              sleep=options.pop("sleep", _no_sleep))
    options.setdefault("on_warn", lambda _event: None)
    return spendguard.Budget(limit, ledger=f"memory://{uuid.uuid4().hex}",
                             scope=f"team:{uuid.uuid4().hex[:8]}", alerts=hook, **options)


def _spend(budget: spendguard.Budget, usd: str) -> None:
    book(budget, "gpt-4o-mini", {"input": 10}, actual_usd=usd, worst_usd=usd)


def test_the_warning_level_and_the_limit_are_each_posted_once_as_plain_json(
        receiver: Receiver) -> None:
    budget = _budget(receiver, "10", warn_at=0.5)
    _spend(budget, "6")
    assert spendguard.flush_alerts(10)
    assert receiver.thresholds() == ["warn"]
    _spend(budget, "4")
    assert spendguard.flush_alerts(10)
    spendguard.check_alerts(budget)  # checked again: nothing new to send
    assert receiver.thresholds() == ["warn", "limit"]
    limit = receiver.bodies[1]
    assert limit["scope"] == budget.scope and limit["period"] == "all"
    assert limit["spent_usd"] == "10" and limit["limit_usd"] == "10"
    assert limit["source"] == "spendguard" and "reached its limit" in limit["message"]


def test_a_budget_that_starts_refusing_posts_its_limit_alert(receiver: Receiver) -> None:
    budget = _budget(receiver, "1", warn_at=None)
    _spend(budget, "0.5")
    with pytest.raises(spendguard.BudgetExceeded):
        book(budget, "gpt-4o-mini", {"input": 10}, actual_usd="0.1", worst_usd="0.9")
    assert spendguard.flush_alerts(10)
    [body] = receiver.bodies
    assert body["threshold"] == "limit" and body["spent_usd"] == "0.5"
    assert "is refusing calls" in body["message"]


def test_a_guarded_call_does_not_wait_for_the_webhook(receiver: Receiver) -> None:
    emulator = Emulator(clock=ManualClock())
    budget = _budget(receiver, "0.000001", warn_at=None, enforce=False)
    client = spendguard.wrap(emulator.openai_client(max_retries=0), budget)
    receiver.hold.clear()  # the receiver answers nothing until told
    with pytest.warns(spendguard.BudgetWarning, match="would have refused"):
        client.chat.completions.create(model="gpt-4o-mini", max_tokens=5,
                                       messages=[{"role": "user", "content": "hi"}])
    assert receiver.bodies == []  # the call returned while the post was still waiting
    receiver.hold.set()
    assert spendguard.flush_alerts(10)
    assert receiver.thresholds() == ["limit"]


def test_a_delivery_answered_with_500s_is_retried_with_backoff(receiver: Receiver) -> None:
    slept: list[float] = []
    receiver.statuses = [500, 503]
    budget = _budget(receiver, "1", sleep=slept.append)
    _spend(budget, "1")
    assert spendguard.flush_alerts(10)
    assert receiver.thresholds() == ["limit"]
    assert slept == [1.0, 2.0]


def test_a_receiver_that_keeps_failing_is_given_up_on_and_not_sent_again(
        receiver: Receiver, caplog: pytest.LogCaptureFixture) -> None:
    slept: list[float] = []
    receiver.statuses = [500] * 4
    budget = _budget(receiver, "1", sleep=slept.append)
    with caplog.at_level(logging.DEBUG, logger="spendguard"):
        _spend(budget, "1")
        assert spendguard.flush_alerts(10)
        spendguard.check_alerts(budget)
    assert receiver.bodies == [] and receiver.statuses == []  # four tries, then no more
    assert len(slept) == 3
    assert "was not delivered" in caplog.text and "HTTP 500" in caplog.text


def test_the_webhook_url_is_never_logged_nor_shown(receiver: Receiver,
                                                   caplog: pytest.LogCaptureFixture) -> None:
    receiver.statuses = [500, 404]
    budget = _budget(receiver, "1")
    with caplog.at_level(logging.DEBUG):
        _spend(budget, "1")
        assert spendguard.flush_alerts(10)
    shown = caplog.text + repr(budget.alerts) + str(budget.alerts[0])
    assert "HTTP 404" in caplog.text and "127.0.0.1" in shown
    assert "s3cr3t" not in shown and "/services/" not in shown


def test_the_slack_format_posts_text_and_a_section_block(receiver: Receiver) -> None:
    budget = _budget(receiver, "1", format="slack")
    _spend(budget, "1")
    assert spendguard.flush_alerts(10)
    [body] = receiver.bodies
    assert set(body) == {"text", "blocks"}
    assert budget.scope in body["text"] and "$1.00 of $1.00" in body["text"]
    assert body["blocks"] == [{"type": "section",
                               "text": {"type": "mrkdwn", "text": body["text"]}}]


def test_a_forecast_breach_is_posted_before_the_limit_is_reached(receiver: Receiver) -> None:
    clock = FakeClock(datetime(2026, 12, 16, tzinfo=UTC))  # half of December gone
    budget = _budget(receiver, "10", period="monthly", clock=clock, warn_at=0.9)
    _spend(budget, "6")
    assert spendguard.flush_alerts(10)
    [body] = receiver.bodies
    assert body["threshold"] == "forecast" and body["period"] == "2026-12"
    assert 11 < float(body["forecast_usd"]) < 13  # $6 in 15 of 31 days: about $12.40


def test_a_runaway_trip_is_posted(receiver: Receiver) -> None:
    clock, emulator = FakeClock(), Emulator(clock=ManualClock())
    budget = _budget(receiver, "10", clock=clock, warn_at=None,
                     runaway=spendguard.RunawayRules(max_repeats=2))
    client = spendguard.wrap(emulator.openai_client(max_retries=0), budget)
    for _ in range(2):
        client.chat.completions.create(model="gpt-4o-mini", max_tokens=5,
                                       messages=[{"role": "user", "content": "again"}])
    with pytest.raises(spendguard.RunawayRefused):
        client.chat.completions.create(model="gpt-4o-mini", max_tokens=5,
                                       messages=[{"role": "user", "content": "again"}])
    assert spendguard.flush_alerts(10)
    [body] = receiver.bodies
    assert body["threshold"] == "runaway" and "max_repeats" in body["message"]


_CHECK = textwrap.dedent("""
    import sys
    import spendguard
    budget = spendguard.Budget("10", ledger=sys.argv[1], scope="team:shared",
                               alerts=spendguard.Webhook(sys.argv[2]))
    sys.stdin.readline()
    spendguard.check_alerts(budget)
""")


def test_two_processes_sharing_a_sqlite_ledger_send_each_alert_once(
        receiver: Receiver, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    book(spendguard.Budget("10", ledger=url, scope="team:shared", warn_at=None), "gpt-4o-mini",
         {"input": 10}, actual_usd="9", worst_usd="9")
    processes = [subprocess.Popen([sys.executable, "-c", _CHECK, url, receiver.url],
                                  cwd=REPO, env={"PYTHONPATH": str(REPO), "PATH": ""},
                                  stdin=subprocess.PIPE, text=True) for _ in range(2)]
    for process in processes:
        assert process.stdin is not None
        process.stdin.write("go\n")
        process.stdin.flush()
    for process in processes:
        process.communicate(timeout=60)
        assert process.returncode == 0
    assert receiver.thresholds() == ["warn"]


def test_alerts_are_claimed_once_per_scope_period_and_threshold_on_every_backend(
        ledger: spendguard.Budget) -> None:
    now = datetime(2026, 12, 6, tzinfo=UTC)
    claim = ledger.claim_alert  # type: ignore[attr-defined]
    assert claim("team:a", "2026-12", "warn", now) is True
    assert claim("team:a", "2026-12", "warn", now) is False
    assert claim("team:a", "2026-12", "limit", now) is True
    assert claim("team:a", "2027-01", "warn", now) is True
    assert claim("team:b", "2026-12", "warn", now) is True


def test_a_bad_alerts_setting_names_the_field() -> None:
    with pytest.raises(spendguard.BudgetConfigError, match="alerts") as bad:
        spendguard.Budget("1", ledger="memory://", alerts="https://example.com/hook")  # type: ignore[arg-type]
    assert bad.value.field == "alerts"
    with pytest.raises(spendguard.BudgetConfigError, match="'json' or 'slack'"):
        spendguard.Webhook("https://example.com/hook", format="teams")  # type: ignore[arg-type]
    with pytest.raises(spendguard.BudgetConfigError, match="http"):
        spendguard.Webhook("ftp://example.com/hook")
