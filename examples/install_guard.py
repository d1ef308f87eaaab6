"""Guard code you don't control: spendguard.install() guards every client built afterwards.

Rolled out the recommended way: first in observe mode (nothing refused, what enforcing would
have refused is recorded and reported), then enforced.

    .venv/bin/python examples/install_guard.py
"""

from __future__ import annotations

import warnings

import openai

import spendguard
from spendguard.testing import Emulator, serve


def third_party_summarise(base_url: str, texts: list[str]) -> int:
    """Stands in for a library that builds its own plain client: no spendguard in here."""
    client = openai.OpenAI(api_key="emulated", base_url=base_url, max_retries=0)
    done = 0
    for text in texts:
        client.chat.completions.create(model="gpt-5.5", max_tokens=200,
                                       messages=[{"role": "user", "content": f"Summarise: {text}"}])
        done += 1
    return done


def main() -> None:
    texts = [f"report {n}: quarterly numbers, risks and plans" for n in range(8)]
    ledger = "memory://install-example"
    with serve(Emulator(seed=1, reply_tokens=150)) as server:
        print(f"calls go to: the spendguard emulator at {server.openai_base_url}")

        # Step 1, observe: the same limit, nothing refused, every would-be refusal recorded.
        spendguard.install(budget=spendguard.Budget("0.01", scope="team:reports",
                                                    ledger=ledger, enforce=False))
        with warnings.catch_warnings(record=True):
            print(f"observe mode: {third_party_summarise(server.openai_base_url, texts)} "
                  "of 8 calls sent")
        report = spendguard.report_spend(ledger, scope="team:reports")
        for would in report.would_refuse:
            print(f"  enforcing would have refused {would.calls} calls "
                  f"(${would.spent_usd:.4f} of ${report.total_usd:.4f})")

        # Step 2, enforce: the next client the library builds is refused before sending.
        spendguard.install(budget=spendguard.Budget("0.01", scope="team:reports-enforced",
                                                    ledger=ledger))
        try:
            third_party_summarise(server.openai_base_url, texts)
        except spendguard.BudgetExceeded as refused:
            print(f"enforced: refused before sending, ${refused.remaining_usd:.4f} left")
        spendguard.uninstall()  # clients built from here on are plain again


if __name__ == "__main__":
    main()
