"""Failover: after the Sentinels or the cluster promote a replica, every thread's next
operation reaches the new primary; in between, calls are refused (fail closed). The new
primary may still refuse a call (a replica that missed a settle is refused as older, and
``wait_replicas`` waits for a replica to follow it): what is checked is that no thread keeps
dialling the dead primary (the regression: threads that had used the ledger before the
failover dialled the dead address for good).

Each test starts its own servers on free ports (a primary, a replica and a Sentinel tuned to
fail over within about a second, or a cluster with replicas), makes calls from several threads,
kills the primary with SIGKILL under that load, and polls state — never a fixed sleep.
"""

from __future__ import annotations

import threading
import time
from decimal import Decimal
from pathlib import Path

import pytest

from spendguard import Budget, LedgerReset, LedgerUnavailable
from tests.ledger_helpers import spend
from tests.redis_cluster_helpers import (
    HOST,
    _cluster_ok,
    cluster_url,
    kill_server,
    poll,
    requires_redis_cluster_tools,
    sentinel_knows_replica,
    sentinel_primary,
    slot_primary,
    start_cluster,
    start_primary,
    start_replica,
    start_sentinel,
    stop_servers,
)

D = Decimal
pytestmark = [pytest.mark.redis, requires_redis_cluster_tools,
              pytest.mark.xdist_group("redis-failover")]
THREADS = 4


class Load:
    """Threads each making calls (a reserve, a settle and a read) until told to stop,
    recording when each call began and how it ended."""

    def __init__(self, budget: Budget, threads: int) -> None:
        self.budget = budget
        self.stop = threading.Event()
        self.results: list[list[tuple[float, BaseException | None]]] = [
            [] for _ in range(threads)]
        self.threads = [threading.Thread(target=self._run, args=(i,)) for i in range(threads)]

    def _run(self, index: int) -> None:
        while not self.stop.is_set():
            began = time.monotonic()
            try:
                spend(self.budget, "0.01", "0.01")
                self.budget.spent  # noqa: B018 - a read, as guarded clients make
                outcome: BaseException | None = None
            except Exception as exc:  # every failure is recorded and checked
                outcome = exc
            self.results[index].append((began, outcome))
            if outcome is not None:
                self.stop.wait(0.005)  # don't spin on a refusal: the next call comes soon

    def __enter__(self) -> Load:
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=30)

    def each_reached_after(self, moment: float) -> bool:
        return all(any(began >= moment and reached(outcome) for began, outcome in calls)
                   for calls in self.results)

    def failures(self) -> list[BaseException]:
        return [outcome for calls in self.results for _, outcome in calls
                if outcome is not None]

    def dialled_after(self, moment: float, dead: int) -> list[BaseException]:
        """Failures of calls begun after ``moment`` that tried the dead primary's port."""
        return [outcome for calls in self.results for outcome in dialled(calls, moment, dead)]


def dialled(calls: list[tuple[float, BaseException | None]], moment: float,
            dead: int) -> list[BaseException]:
    """The failures among ``calls`` begun after ``moment`` that tried the dead port."""
    return [outcome for began, outcome in list(calls)
            if outcome is not None and began >= moment and f":{dead}" in str(outcome)]


def reached(outcome: BaseException | None) -> bool:
    """Whether a call's outcome shows it reached a primary: it succeeded, or that primary
    refused it — as older than this process saw (it missed a settle the old primary had
    acknowledged: a reset, never absorbed), or because no replica acknowledged its settle
    yet (``wait_replicas``, while the replicas follow the new primary)."""
    return (outcome is None or isinstance(outcome, LedgerReset)
            or "acknowledged" in str(outcome))


class IdleThread:
    """One thread that makes a call when asked and waits, idle, in between."""

    def __init__(self, budget: Budget) -> None:
        self.budget = budget
        self.calls: list[tuple[float, BaseException | None]] = []  # (began, outcome)
        self._asked = threading.Semaphore(0)
        self._done = threading.Semaphore(0)
        self._finished = False
        self._thread = threading.Thread(target=self._run)
        self._thread.start()

    def _run(self) -> None:
        while self._asked.acquire(timeout=30) and not self._finished:
            began = time.monotonic()
            try:
                spend(self.budget, "0.01", "0.01")
                self.budget.spent  # noqa: B018
                outcome: BaseException | None = None
            except Exception as exc:  # recorded and checked
                outcome = exc
            self.calls.append((began, outcome))
            self._done.release()

    def call(self) -> BaseException | None:
        """Make one call on the thread; how it ended."""
        self._asked.release()
        assert self._done.acquire(timeout=30)
        return self.calls[-1][1]

    def finish(self) -> None:
        self._finished = True
        self._asked.release()
        self._thread.join(timeout=30)


def _after_failover(load: Load, idle: IdleThread, *, named: float, within_s: float,
                    dead: int) -> None:
    """Every busy thread, and one idle since before the failover, reach the new primary; no
    call begun ``within_s`` after it was named dials the dead one.

    A call may still be refused for a moment after the new primary is named, never for
    dialling the dead one: on a busy machine a Sentinel that fails over within 200 ms can
    think the new primary down too, and name none until it answers again. So the idle
    thread, like the busy ones, is asked again until it reaches the new primary."""
    poll(lambda: load.each_reached_after(named), "every thread to reach the new primary",
         within_s=20)
    # A thread that last used the ledger before the failover.
    poll(lambda: reached(idle.call()), "the idle thread to reach the new primary",
         within_s=20)
    moment = named + within_s
    assert load.dialled_after(moment, dead) == []
    assert dialled(idle.calls, moment, dead) == [], [str(exc) for _, exc in idle.calls]


def test_after_a_sentinel_failover_every_thread_reaches_the_new_primary(
        tmp_path: Path) -> None:
    primary = start_primary(tmp_path)
    replica = other = sentinel = 0
    try:
        replica, other = start_replica(tmp_path, primary), start_replica(tmp_path, primary)
        sentinel = start_sentinel(tmp_path, primary, "sgfail", down_after_ms=200)
        poll(lambda: all(sentinel_knows_replica(sentinel, "sgfail", port)
                         for port in (replica, other)), "the Sentinel to know the replicas")
        # Settles acknowledged by a replica, so the one promoted most likely has them all.
        # A dead primary refuses connections at once: the timeout only bounds WAIT (half of
        # it), generous for a busy machine.
        url = (f"redis+sentinel://{HOST}:{sentinel}/sgfail/0?prefix=sgtest:&timeout=2"
               f"&wait_replicas=1")
        budget = Budget("1000", scope="team", ledger=url, warn_at=None)
        idle = IdleThread(budget)
        assert reached(idle.call())  # it reaches the first primary, then waits there
        with Load(budget, THREADS) as load:
            poll(lambda: load.each_reached_after(0), "every thread to reach the primary")
            kill_server(primary)
            poll(lambda: sentinel_primary(sentinel, "sgfail") in (replica, other),
                 "the Sentinel to promote a replica", within_s=30)
            named = time.monotonic()
            # The Sentinels' switch is what the client asks about: the next call finds it.
            _after_failover(load, idle, named=named, within_s=0, dead=primary)
        idle.finish()
        assert load.failures() and all(
            isinstance(exc, LedgerUnavailable) for exc in load.failures()), load.failures()
        budget.ledger.close()
    finally:
        stop_servers([port for port in (sentinel, replica, other) if port])


def test_after_a_cluster_failover_every_thread_reaches_the_new_primary(
        tmp_path: Path) -> None:
    ports = start_cluster(tmp_path, replicas=1, node_timeout_ms=300)
    try:
        prefix = "sgfail:"
        owner = slot_primary(ports[0], f"{{{prefix}}}totals")
        budget = Budget("1000", scope="team", ledger=cluster_url(ports, prefix, timeout="0.5"),
                        warn_at=None)
        idle = IdleThread(budget)
        assert reached(idle.call())
        with Load(budget, THREADS) as load:
            poll(lambda: load.each_reached_after(0), "every thread to reach the primary")
            kill_server(owner)
            alive = [port for port in ports if port != owner]
            poll(lambda: slot_primary(alive[0], f"{{{prefix}}}totals") not in (0, owner)
                 and _cluster_ok(alive), "the cluster to promote the replica", within_s=30)
            named = time.monotonic()
            # redis-py renews its slot map at most once a second after an error; then one
            # call's timeouts (0.5 s, twice).
            _after_failover(load, idle, named=named, within_s=2, dead=owner)
        idle.finish()
        assert load.failures() and all(
            isinstance(exc, LedgerUnavailable) for exc in load.failures()), load.failures()
        budget.ledger.close()
    finally:
        stop_servers(ports)
