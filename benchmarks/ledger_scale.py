"""Reading a large ledger: time and peak memory of each read command on a SQLite ledger of
``--records`` finished calls (1,000,000 by default), against a plain ``sqlite3`` aggregation
of the same file as the floor.

Usage::

    .venv/bin/python benchmarks/ledger_scale.py [--records 1000000] [--keep FILE] [--quick]

The ledger is built through its own bulk write path, the one ``spendguard ledger drain`` uses
(each record becomes a closed call with its reserve and close events and its totals, in
transactions of 5,000), from records made here: 46 scopes (a project and 45 per-user child
budgets, monthly periods) over 60 days, four models of two providers, a caller's tag and
spendguard's own ``spendguard.call_id`` on every call, costs priced by spendguard's price
table. Then each command runs as its own process, its output thrown away (``report`` as
text, ``--json`` and ``--html``; ``export`` as CSV, JSON Lines, FOCUS and FOCUS per day;
``ledger verify``), and the floor is one ``SELECT ... sum() ... GROUP BY`` over the calls
table (model and UTC day) by the ``sqlite3`` module in a process of its own.

Per command: wall time, CPU time (user + system) and peak memory as the maximum resident set,
read with ``getrusage(RUSAGE_CHILDREN)`` by a small Python process whose only child is the
command, so each figure is that command's own even with ``--jobs N`` running several at once.
On a shared machine the wall time says as much about the other jobs as about the command;
CPU time much less, so "CPU s per million records" (the CPU time scaled to a million) and
"CPU x floor" (over the floor's CPU time) are the figures to compare across runs.
``--quick`` builds 2,000 records.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

from harness import markdown_table

from spendguard import Usage, cost, open_ledger
from spendguard._budget.ledger.base import SpendRecord
from spendguard._budget.ledger.drain import _insert
from spendguard._budget.ledger.engine import TransactionalLedger

_MODELS = [("openai", "gpt-4o-mini", "chat"), ("openai", "gpt-4o", "chat"),
           ("anthropic", "claude-sonnet-4-5", "messages"),
           ("anthropic", "claude-haiku-4-5", "messages")]
_USERS = 45
_DAYS = 60
_FEATURES = ("search", "summary", "chat", "triage", "draft")
_START = datetime(2026, 10, 1, tzinfo=UTC)
_BATCH = 5_000
_FLOOR_SQL = ("SELECT model, substr(time, 1, 10) AS day, count(*), sum(CAST(actual_usd AS REAL)) "
              "FROM calls WHERE state != 'open' GROUP BY model, day")


def _profiles() -> list[tuple[tuple[str, str, str], dict[str, int], Decimal, Decimal]]:
    """Each model with three token shapes, priced once: (model, tokens, worst, actual)."""
    shapes = [(1200, 0, 300), (400, 3000, 150), (6000, 0, 900)]
    profiles = []
    for provider, model, endpoint in _MODELS:
        for fresh, cached, output in shapes:
            usage = Usage(input_tokens=fresh, cache_read_tokens=cached, output_tokens=output)
            worst = Usage(input_tokens=fresh + cached, output_tokens=output * 4)
            at = _START.date()
            tokens = {"input": fresh, "output": output} | ({"cache_read": cached}
                                                           if cached else {})
            profiles.append(((provider, model, endpoint), tokens,
                             cost(model, worst, at=at).total,
                             cost(model, usage, at=at).total))
    return profiles


def _records(count: int) -> Iterator[SpendRecord]:
    """``count`` finished calls, oldest first, spread evenly over the days."""
    profiles = _profiles()
    step_us = _DAYS * 86_400_000_000 // max(count, 1)
    for n in range(count):
        moment = _START + timedelta(microseconds=n * step_us)
        (provider, model, endpoint), tokens, worst, actual = profiles[n % len(profiles)]
        user = f"project:acme/user:u{n % _USERS:02d}"
        call_id = f"{int(moment.timestamp() * 1_000_000):013x}{n:019x}"
        month = f"{moment.year:04d}-{moment.month:02d}"
        yield SpendRecord(
            id=call_id, time=moment, scopes=("project:acme", user),
            tags={"feature": _FEATURES[n % len(_FEATURES)], "spendguard.call_id": call_id[-16:]},
            provider=provider, model=model, endpoint=endpoint, tokens=tokens,
            estimated_usd=worst, actual_usd=actual, usage_estimated=False,
            table_version="bench", latency_s=0.8, request_id=f"req_{n}", attempt=1,
            status="ok", period_keys=(month, month),
            limits_usd=(Decimal("250000"), Decimal("6000")))


def build(path: Path, count: int) -> float:
    """Write ``count`` records into a new SQLite ledger at ``path``; seconds taken."""
    started = time.perf_counter()
    ledger = open_ledger(f"sqlite:///{path}")
    assert isinstance(ledger, TransactionalLedger)
    batch: list[SpendRecord] = []
    for record in _records(count):
        batch.append(record)
        if len(batch) == _BATCH:
            _write(ledger, batch)
            batch = []
    _write(ledger, batch)
    ledger.close()
    return time.perf_counter() - started


def _write(ledger: TransactionalLedger, batch: list[SpendRecord]) -> None:
    with ledger._transaction() as tx:  # the drain's bulk path: one transaction per batch
        for record in batch:
            _insert(tx, record)


def _own_peak(command: list[str], env: dict[str, str]) -> tuple[float, float, float, int]:
    """Run ``command`` as the only child of a fresh Python process, so the children's peak
    resident set and CPU time that process sees are this command's own: (wall seconds, CPU
    seconds, peak MB, exit status)."""
    probe = ("import resource, subprocess, sys, time\n"
             "t = time.perf_counter()\n"
             "r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL,"
             " stderr=subprocess.DEVNULL)\n"
             "u = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
             "print(time.perf_counter() - t, u.ru_utime + u.ru_stime, u.ru_maxrss,"
             " r.returncode)\n")
    out = subprocess.run([sys.executable, "-c", probe, *command], capture_output=True,
                         text=True, env=env, check=True).stdout.split()
    return float(out[0]), float(out[1]), int(out[2]) / 1024, int(out[3])


def commands(path: Path, out: Path) -> list[tuple[str, list[str]]]:
    cli = [sys.executable, "-m", "spendguard"]
    ledger = ["--ledger", f"sqlite:///{path}"]
    return [
        ("ledger verify", [*cli, "ledger", "verify", *ledger]),
        ("report", [*cli, "report", *ledger]),
        ("report --json", [*cli, "report", *ledger, "--json"]),
        ("report --html", [*cli, "report", *ledger, "--html", str(out / "report.html")]),
        ("export focus --aggregate day", [*cli, "export", *ledger, "--format", "focus",
                                          "--aggregate", "day", "-o",
                                          str(out / "focus-daily.csv")]),
        ("export csv", [*cli, "export", *ledger, "-o", str(out / "spend.csv")]),
        ("export jsonl", [*cli, "export", *ledger, "--format", "jsonl", "-o",
                          str(out / "spend.jsonl")]),
        ("export focus", [*cli, "export", *ledger, "--format", "focus", "-o",
                          str(out / "focus.csv")]),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000,
                        help="finished calls in the ledger (default 1,000,000)")
    parser.add_argument("--keep", type=Path, help="build the ledger at this path and keep it "
                                                  "(reused as it is when it exists)")
    parser.add_argument("--build-only", action="store_true",
                        help="build the ledger (with --keep) and measure nothing")
    parser.add_argument("--jobs", type=int, default=1,
                        help="commands run at once (default 1); each is still measured alone "
                             "in a process of its own, but wall times then share the CPUs")
    parser.add_argument("--quick", action="store_true", help="a smoke run: 2,000 records")
    args = parser.parse_args(argv)
    count = 2_000 if args.quick else args.records
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(Path(__file__).resolve().parents[1]),
                                                      env.get("PYTHONPATH")]))
    with tempfile.TemporaryDirectory(prefix="spendguard-scale-") as folder:
        out = Path(folder)
        path = args.keep or out / "ledger.db"
        built = 0.0
        if path.exists():  # a kept ledger: its own size counts
            count = sqlite3.connect(path).execute("SELECT count(*) FROM calls").fetchone()[0]
        else:
            built = build(path, count)
        size_mb = path.stat().st_size / 1_000_000
        if args.build_only:
            print(f"built {count:,} records ({size_mb:,.0f} MB) in {built:.0f} s")
            return 0
        floor = _own_peak([sys.executable, "-c",
                           f"import sqlite3; sqlite3.connect({str(path)!r})"
                           f".execute({_FLOOR_SQL!r}).fetchall()"], env)
        per_million = 1_000_000 / count

        def row(name: str, measured: tuple[float, float, float, int], floor_cpu: float
                ) -> list[str]:
            wall, cpu, peak_mb, status = measured
            return [name, f"{wall:.1f}", f"{cpu:.1f}", f"{cpu * per_million:.1f}",
                    f"{peak_mb:.0f}", f"{cpu / floor_cpu:.1f}",
                    "ok" if status == 0 else f"exit {status}"]

        def one(name: str, command: list[str]) -> list[str]:
            done = row(name, _own_peak(command, env), floor[1])
            print(" | ".join(done), file=sys.stderr, flush=True)  # a long run's, as it goes
            return done

        with ThreadPoolExecutor(max_workers=max(args.jobs, 1)) as pool:
            rows = list(pool.map(lambda named: one(*named), commands(path, out)))
        rows.append(row("floor: sqlite3 sum() GROUP BY model, day", floor, floor[1]))
    made = (f"built in {built:.0f} s ({count / built:,.0f} records/s through the drain's bulk "
            f"path)" if built else "kept from an earlier run")
    print(f"ledger: {count:,} records, {size_mb:,.0f} MB SQLite file, {made}\n")
    print(markdown_table(["command", "wall s", "CPU s", "CPU s per million records",
                          "peak MB", "CPU x floor", "status"], rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
