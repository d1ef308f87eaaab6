"""One budget shared by several processes, and a process killed mid-call."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import spendguard
from tests.paths import REPO

WORKER = textwrap.dedent("""
    import sys
    import httpx2
    import spendguard
    from tests.provider_bodies import chat_completion

    url, limit, calls = sys.argv[1], sys.argv[2], int(sys.argv[3])

    def handler(request):
        return httpx2.Response(200, json=chat_completion(prompt_tokens=9, completion_tokens=50))

    client = spendguard.OpenAI(
        api_key="sk-test", max_retries=0,
        budget=spendguard.Budget(limit, ledger=url, scope="shared"),
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
    )
    sent = 0
    for _ in range(calls):
        try:
            client.chat.completions.create(
                model="gpt-4o-mini", max_tokens=50,
                messages=[{"role": "user", "content": "Say hi"}])
            sent += 1
        except spendguard.BudgetExceeded:
            pass
    print(sent)
""")


def test_four_processes_on_one_budget_never_exceed_it(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    limit = "0.001"  # room for ~25 of the 40 calls (each reserves ~$0.0000314)
    workers = [
        subprocess.Popen([sys.executable, "-c", WORKER, url, limit, "10"],
                         stdout=subprocess.PIPE, text=True, cwd=REPO)
        for _ in range(4)
    ]
    sent = [int(w.communicate(timeout=120)[0].strip()) for w in workers]
    assert all(w.returncode == 0 for w in workers)
    shared = spendguard.Budget(limit, ledger=url, scope="shared")
    assert shared.spent <= Decimal(limit)
    assert shared.reserved == 0
    assert 0 < sum(sent) < 40
    calls = [record for record in spendguard.open_ledger(url).records()
             if record.status != "adjustment"]  # refusals leave $0 markers, not calls
    assert len(calls) == sum(sent)


KILLED_MID_CALL = textwrap.dedent("""
    import os, signal, sys
    import httpx2
    import spendguard

    def handler(request):
        os.kill(os.getpid(), signal.SIGKILL)  # the process dies while the call is in flight

    client = spendguard.OpenAI(
        api_key="sk-test", max_retries=0,
        budget=spendguard.Budget("1", ledger=sys.argv[1], scope="shared"),
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
    )
    client.chat.completions.create(model="gpt-4o-mini", max_tokens=50,
                                   messages=[{"role": "user", "content": "Say hi"}])
""")


def test_a_call_in_flight_when_its_process_is_killed_is_recovered(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    worker = subprocess.run([sys.executable, "-c", KILLED_MID_CALL, url], check=False,
                            cwd=REPO)
    assert worker.returncode == -9
    shared = spendguard.Budget("1", ledger=url, scope="shared")
    held = shared.reserved
    assert held > 0 and shared.spent == 0  # still counted while it may yet be settled
    ledger = spendguard.open_ledger(url)
    [recovered] = ledger.recover_expired(datetime.now(UTC) + timedelta(days=1))
    [record] = ledger.records()
    assert record.id == recovered and record.status == "recovered"
    assert record.actual_usd == held == shared.spent
    assert shared.reserved == 0
    assert ledger.verify() == []
