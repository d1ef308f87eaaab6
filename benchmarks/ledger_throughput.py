"""Ledger throughput: reservations per second (reserve + settle) on memory, SQLite, Redis and
PostgreSQL.

Usage::

    .venv/bin/python benchmarks/ledger_throughput.py [--calls 2000] [--processes 1 8]
        [--redis redis://127.0.0.1:6379/0] [--postgres postgresql://root@127.0.0.1:5432/test]
        [--backends memory sqlite redis postgres] [--quick]

Every process opens the ledger itself, waits at a barrier so all start together, then makes
``--calls`` reservations on one shared scope (a limit far above what they spend, so none is
refused), settling each at once — the ledger's whole work for one guarded call. The figure is
the calls of all processes divided by the wall time from the barrier to the last finish; the
per-call time is its inverse, next to SQLite's. A memory ledger is private to each process
(nothing is shared), so its 8-process row is 8 independent ledgers. Redis keys go under a
fresh prefix, deleted afterwards; a PostgreSQL ledger goes in a fresh schema, dropped
afterwards. PostgreSQL's server CPU is not measured (one server process per connection), so
its "Redis CPU" column stays empty.

On a shared machine the wall-clock rate says as much about the other jobs as about the
ledger, so two CPU figures per call come with it: the workers' own CPU time (from the barrier
on, so imports and connecting are not counted) and, for Redis, the server's (``INFO cpu``,
exact when nothing else uses that server). Their sum is what one call costs the machine: on
``C`` idle cores the ledger can make about ``C / (client + server)`` calls a second, and one
Redis server (one core) at most ``1 / server``.

For SQLite it also counts what a pair costs on any machine: the statements the ledger runs
(its connection's trace callback) and the pages its commits append to the ``-wal`` file (the
file's growth from an emptied WAL, with automatic checkpoints off while it counts). Two more
SQLite figures, each in one process:

- the floor: the same writes (the totals row held and charged, the call's row inserted and
  closed, two ``BEGIN IMMEDIATE`` … ``COMMIT``) replayed with plain values on a bare
  ``sqlite3`` connection to a ledger file with the same schema and settings, next to the
  ledger's own pair: what SQLite itself costs, and what spendguard adds around it;
- a pair at a call's pace: one reserve + settle each millisecond (a provider's reply takes
  longer), timed one by one: median, p99, p99.9 and the longest, which show whether a
  checkpoint (the WAL copied back, and its fsyncs) lands inside a call.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import queue
import sqlite3
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from spendguard._budget.ledger import CallInfo, ScopeClaim, Settlement, open_ledger
from spendguard._budget.ledger.fields import CLOSING

CALL = CallInfo(provider="openai", model="gpt-4o-mini", endpoint="chat", attempt=1,
                estimated_input_tokens=1200, estimated_output_tokens=500, input_exact=True)
CLAIMS = [ScopeClaim("bench", "all", Decimal("1000000000"), Decimal("800000000"))]
WORST, ACTUAL = Decimal("0.000480"), Decimal("0.000213")


def _worker(url: str, calls: int, ready: Any, go: Any, cpu: Any) -> None:
    ledger = open_ledger(url)
    ledger.totals("bench", "all")  # connect and migrate before the clock starts
    ready.put(os.getpid())
    go.wait()
    started = time.process_time()
    for _ in range(calls):
        _pair(ledger)
    cpu.put(time.process_time() - started)
    ledger.close()


def measure(url: str, processes: int, calls: int) -> float:
    """Reservations (reserve + settle) per second of ``processes`` processes on ``url``."""
    return measure_cpu([url] * processes, calls)[0]


def measure_cpu(urls: list[str], calls: int) -> tuple[float, float]:
    """Calls a second of one process per URL in ``urls``, and their CPU µs per call."""
    context = multiprocessing.get_context("spawn")
    ready, go, cpu = context.Queue(), context.Event(), context.Queue()
    workers = [context.Process(target=_worker, args=(url, calls, ready, go, cpu))
               for url in urls]
    for worker in workers:
        worker.start()
    try:
        _all_ready(workers, ready)
    except BaseException:
        for worker in workers:
            worker.kill()
        raise
    go.set()  # every worker connected: they start together, and so does the clock
    started = time.perf_counter()
    for worker in workers:
        worker.join()
        if worker.exitcode != 0:
            raise SystemExit(f"a worker failed (exit code {worker.exitcode})")
    elapsed = time.perf_counter() - started
    cpu_s = sum(cpu.get(timeout=60) for _ in workers)
    return len(urls) * calls / elapsed, cpu_s / (len(urls) * calls) * 1e6


def _all_ready(workers: list[Any], ready: Any) -> None:
    """Wait until every worker has connected; fail at once if one exits before it has (a
    barrier would wait for it forever)."""
    waiting = len(workers)
    while waiting:
        try:
            ready.get(timeout=0.5)
            waiting -= 1
        except queue.Empty:
            for worker in workers:
                if worker.exitcode is not None:
                    raise SystemExit(f"a worker exited before the run began (exit code "
                                     f"{worker.exitcode}); its error is above") from None


def server_cpu_s(redis_url: str) -> float:
    """CPU seconds the Redis server at ``redis_url`` has used since it started."""
    import redis

    client = redis.Redis.from_url(redis_url)
    try:
        info: Any = client.info("cpu")
        return float(info["used_cpu_sys"]) + float(info["used_cpu_user"])
    finally:
        client.close()


def _drop(redis_url: str, prefix: str) -> None:
    import redis

    client = redis.Redis.from_url(redis_url)
    keys = list(client.scan_iter(match=f"{prefix}*", count=1000))
    if keys:
        client.delete(*keys)
    client.close()


Row = tuple[str, int, float, float, float | None]

_COUNTED_PAIRS = 200


def sqlite_work(path: Path) -> tuple[float, float, int, dict[str, float]]:
    """Statements and WAL pages per reserve + settle pair on a SQLite ledger at ``path``, the
    file's page size, and the pages per pair by the table or index they belong to (empty
    where this SQLite has no ``dbstat`` table): counts, not timings, so they are the same on
    a busy machine."""
    ledger: Any = open_ledger(f"sqlite:///{path}")
    for _ in range(20):  # the first pairs write the scope's row and the index roots
        _pair(ledger)
    with sqlite3.connect(path) as db:  # empty the WAL: what follows is this run's pages only
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        page_size = db.execute("PRAGMA page_size").fetchone()[0]
    statements = 0

    def counted(_sql: str) -> None:
        nonlocal statements
        statements += 1

    connection = ledger._connection()  # this thread's: the one every pair below runs on
    # A checkpoint would restart the WAL from its top and hide the pages written before it.
    connection.execute("PRAGMA wal_autocheckpoint=0")
    connection.set_trace_callback(counted)
    for _ in range(_COUNTED_PAIRS):
        _pair(ledger)
    connection.set_trace_callback(None)
    wal = path.with_name(path.name + "-wal").read_bytes()
    ledger.close()
    frames = (len(wal) - 32) / (24 + page_size)  # the WAL header, then (header + page) each
    return (statements / _COUNTED_PAIRS, frames / _COUNTED_PAIRS, page_size,
            _pages_by_owner(path, wal, page_size))


def _pages_by_owner(path: Path, wal: bytes, page_size: int) -> dict[str, float]:
    """The WAL's frames per pair by what their page holds (a table, an index, or page 1,
    whose header holds the file's page count and so changes whenever the file grows)."""
    # Each frame: a 24-byte header whose first 4 bytes are the page number (big-endian).
    numbers = [int.from_bytes(wal[at:at + 4], "big")
               for at in range(32, len(wal) - 23, 24 + page_size)]
    try:
        with sqlite3.connect(path) as db:
            owners = dict(db.execute("SELECT pageno, name FROM dbstat"))
    except sqlite3.OperationalError:  # SQLite built without the dbstat table
        return {}
    owners[1] = "page 1"
    counted: dict[str, int] = {}
    for number in numbers:
        owner = owners.get(number, "freed")
        counted[owner] = counted.get(owner, 0) + 1
    return {owner: count / _COUNTED_PAIRS
            for owner, count in sorted(counted.items(), key=lambda item: -item[1])}


_FLOOR_PAIRS = 3000
_PACED_PAIRS = 3000
_PACE_S = 0.001


def sqlite_floor(path: Path, pairs: int = _FLOOR_PAIRS) -> tuple[float, float]:
    """µs per pair of the ledger at ``path``, and of the same writes on a bare connection."""
    ledger: Any = open_ledger(f"sqlite:///{path}")
    for _ in range(200):
        _pair(ledger)
    started = time.perf_counter()
    for _ in range(pairs):
        _pair(ledger)
    ledger_us = (time.perf_counter() - started) / pairs * 1e6
    ledger.close()
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute(f"PRAGMA wal_autocheckpoint={4 * 1024 * 1024 // 1024}")  # 4 MiB of 1 KiB pages
    names = [row[1] for row in db.execute("PRAGMA table_info(calls)")]
    opened = list(db.execute("SELECT rowid, * FROM calls ORDER BY rowid DESC LIMIT 1").fetchone())
    closing = [field.name for field in CLOSING]  # what the ledger's close writes
    run = db.cursor().execute
    insert = (f"INSERT INTO calls (rowid, {', '.join(names)}) "
              f"VALUES ({', '.join('?' * (len(names) + 1))})")
    close = f"UPDATE calls SET {', '.join(f'{c} = ?' for c in closing)} WHERE rowid = ?"
    closed_values = [opened[1 + names.index(c)] for c in closing]
    opened[1 + names.index("state")] = "open"
    key = opened[0]

    def bare_pair() -> None:
        nonlocal key
        key += 1
        opened[0], opened[1] = key, f"{key:032x}"
        run("BEGIN IMMEDIATE")
        run("UPDATE totals SET reserved_usd = ?, calls = calls + 1 WHERE scope = ? AND "
            "period_key = ?", ("0.000480", "bench", "all"))
        run(insert, opened)
        run("COMMIT")
        run("BEGIN IMMEDIATE")
        run(close, (*closed_values, key))
        run("UPDATE totals SET spent_usd = ?, reserved_usd = ? WHERE scope = ? AND "
            "period_key = ?", ("0.000213", "0", "bench", "all"))
        run("COMMIT")

    for _ in range(200):
        bare_pair()
    started = time.perf_counter()
    for _ in range(pairs):
        bare_pair()
    bare_us = (time.perf_counter() - started) / pairs * 1e6
    db.close()
    return ledger_us, bare_us


def sqlite_paced(path: Path, pairs: int = _PACED_PAIRS) -> list[float]:
    """µs of each of ``pairs`` reserve + settle pairs made ``_PACE_S`` apart, sorted."""
    ledger: Any = open_ledger(f"sqlite:///{path}")
    spent = []
    for _ in range(pairs):
        started = time.perf_counter()
        _pair(ledger)
        spent.append((time.perf_counter() - started) * 1e6)
        time.sleep(_PACE_S)  # the provider's reply, which a real call waits for
    ledger.close()
    return sorted(spent)


def _pair(ledger: Any) -> None:
    now = datetime.now(UTC)
    reservation_id = ledger.reserve(CLAIMS, WORST, CALL, time=now,
                                    expires_at=now + timedelta(minutes=15), tags={})
    ledger.settle(reservation_id, Settlement(now, ACTUAL, {"input": 1200, "output": 210},
                                             False, "bench", 0.0))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=2000, help="calls per process")
    parser.add_argument("--processes", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--postgres", default="postgresql://root@127.0.0.1:5432/test")
    parser.add_argument("--backends", nargs="+",
                        default=["memory", "sqlite", "redis", "postgres"])
    parser.add_argument("--quick", action="store_true", help="500 calls per process")
    parser.add_argument("--sqlite-pairs", type=int, default=_FLOOR_PAIRS,
                        help="pairs for the SQLite floor and the paced pairs")
    options = parser.parse_args()
    calls = 500 if options.quick else options.calls
    pairs = 300 if options.quick else options.sqlite_pairs
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as directory:
        for backend in options.backends:
            for processes in options.processes:
                rows.append(_row(backend, processes, calls, options, Path(directory)))
        work = floor = paced = None
        if "sqlite" in options.backends:
            work = sqlite_work(Path(directory) / "counted.db")
            floor = sqlite_floor(Path(directory) / "floor.db", pairs)
            paced = sqlite_paced(Path(directory) / "paced.db", pairs)
    print_rows(rows)
    print(f"({calls} calls per process; each call = reserve + settle; 'vs SQLite' is "
          f"time per call relative to SQLite with as many processes; memory is per-process; "
          f"CPU is µs per call, the workers' and the Redis server's; PostgreSQL's server "
          f"CPU is not measured)")
    if floor is not None and paced is not None:
        ledger_us, bare_us = floor
        print(f"SQLite, one process, µs per reserve + settle pair: the ledger {ledger_us:,.0f}, "
              f"the same writes on a bare connection {bare_us:,.0f} (SQLite's floor; "
              f"{ledger_us / bare_us:.1f}x)")
        print(f"SQLite, a pair every {_PACE_S * 1e3:g} ms ({len(paced):,} pairs), µs: median "
              f"{paced[len(paced) // 2]:,.0f}, p99 {paced[int(len(paced) * 0.99)]:,.0f}, "
              f"p99.9 {paced[int(len(paced) * 0.999)]:,.0f}, longest {paced[-1]:,.0f}")
    if work is not None:
        statements, pages, page_size, owners = work
        print(f"SQLite, per reserve + settle pair (counts, the same on any machine): "
              f"{statements:.1f} statements, {pages:.1f} WAL pages of {page_size:,} bytes")
        if owners:
            print("SQLite, WAL pages per pair by what they hold: " + ", ".join(
                f"{owner} {count:.2f}" for owner, count in owners.items()))


def _row(backend: str, processes: int, calls: int, options: argparse.Namespace,
         directory: Path) -> Row:
    redis_url, postgres_url = options.redis, options.postgres
    prefix = f"sgbench:{uuid.uuid4().hex[:8]}:"
    schema = f"sgbench_{uuid.uuid4().hex[:12]}"
    separator = "&" if "?" in postgres_url else "?"
    url = {"memory": "memory://bench",
           "sqlite": f"sqlite:///{directory / f'{uuid.uuid4().hex}.db'}",
           "redis": f"{redis_url}?prefix={prefix}",
           "postgres": f"{postgres_url}{separator}schema={schema}"}[backend]
    if backend == "postgres":
        open_ledger(url).close()  # the schema made once, before the workers race to it
    server_before = server_cpu_s(redis_url) if backend == "redis" else 0.0
    server_us = None
    try:
        rate, client_us = measure_cpu([url] * processes, calls)
        if backend == "redis":  # read before the run's keys are deleted: that is not its work
            server_us = ((server_cpu_s(redis_url) - server_before) / (processes * calls)
                         * 1e6)
    finally:
        if backend == "redis":
            _drop(redis_url, prefix)
        if backend == "postgres":
            _drop_schema(postgres_url, schema)
    return backend, processes, rate, client_us, server_us


def _drop_schema(postgres_url: str, schema: str) -> None:
    import psycopg

    with psycopg.connect(postgres_url, autocommit=True) as db:
        db.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def print_rows(rows: list[Row]) -> None:
    sqlite = {processes: rate for backend, processes, rate, *_ in rows if backend == "sqlite"}
    print(f"{'backend':<8} {'processes':>9} {'reservations/s':>15} {'µs per call':>12} "
          f"{'vs SQLite':>10} {'client CPU':>11} {'Redis CPU':>10}")
    for backend, processes, rate, client_us, server_us in rows:
        versus = f"{sqlite[processes] / rate:.2f}x" if processes in sqlite else "-"
        server = "-" if server_us is None else f"{server_us:,.1f}"
        print(f"{backend:<8} {processes:>9} {rate:>15,.0f} {1e6 / rate:>12,.1f} {versus:>10} "
              f"{client_us:>11,.1f} {server:>10}")


if __name__ == "__main__":
    main()
