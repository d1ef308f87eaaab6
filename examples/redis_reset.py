"""A Redis that loses its data is caught, not read as $0 spent — then rebuilt from a drained copy.

A team budget on a Redis ledger makes a few guarded calls, and the records are drained to a
SQLite file (as a cron job would). Then the ledger's keys vanish, as when Redis restarts
without persistence or is flushed: the next call is refused with ``LedgerReset``, which says
what happened and how to fix it. ``spendguard ledger reseed --from`` the drained copy rebuilds
the ledger, and the same budget carries on from what was really spent.

    .venv/bin/python examples/redis_reset.py

Uses ``$SPENDGUARD_REDIS_URL`` if set, else the Redis on 127.0.0.1:6379, under a key prefix
of its own that it deletes at the end. Without a reachable Redis it says how to start one.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import uuid

import _client
import redis

import spendguard
from spendguard import drain_ledger


def call(client: object) -> None:
    client.chat.completions.create(  # type: ignore[attr-defined]
        model="gpt-4o-mini", max_tokens=300,
        messages=[{"role": "user", "content": "Summarise this ticket in one line."}])


def main() -> None:
    print(f"calls go to: {_client.where()}")
    base = os.environ.get("SPENDGUARD_REDIS_URL", "redis://127.0.0.1:6379/0")
    prefix = f"spendguard-example:{uuid.uuid4().hex[:8]}:"
    url = f"{base}{'&' if '?' in base else '?'}prefix={prefix}&timeout=1"
    team = spendguard.Budget("1", scope="team:support", period="monthly", ledger=url,
                             warn_at=None)
    try:
        team.remaining  # noqa: B018 - reach Redis once: a missing server is said plainly
    except spendguard.LedgerUnavailable:
        print(f"no Redis at {base}: start one with `redis-server --port 6379` or set "
              f"SPENDGUARD_REDIS_URL")
        return
    server = redis.Redis.from_url(base)
    try:
        client = _client.openai_client(budget=team)
        for _ in range(3):
            call(client)
        spent = team.spent
        print(f"team:support spent ${spent:.6f} in 3 calls")
        copy = f"sqlite:///{tempfile.mkdtemp(prefix='spendguard-copy-')}/copy.db"
        print(f"drained {drain_ledger(url, copy).written} records into the durable copy")

        server.delete(*server.scan_iter(match=f"{prefix}*"))  # Redis lost its data
        try:
            call(client)
        except spendguard.LedgerReset as exc:
            print(f"refused, nothing sent: {str(exc).split(' (seen before')[0]}")

        reseed = subprocess.run(  # the `spendguard` command, run by this interpreter
            [sys.executable, "-c", "from spendguard.cli import main; main()", "ledger",
             "reseed", "--ledger", url, "--from", copy],
            capture_output=True, text=True, check=True, timeout=120)
        print(f"spendguard ledger reseed: {reseed.stdout.strip()}")
        call(client)
        print(f"team:support spent ${team.spent:.6f} after one more call "
              f"(restored ${spent:.6f}, never $0)")
    finally:
        keys = list(server.scan_iter(match=f"{prefix}*"))
        if keys:
            server.delete(*keys)
        server.close()


if __name__ == "__main__":
    main()
