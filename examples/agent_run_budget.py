"""An agent loop capped by a per-run budget: it warns at 80 % and stops at 100 %.

Each run gets its own child budget under the project's monthly one; the refused call is never
sent. ``spendguard.loop(budget=run)`` stops before a step whose worst case (what the client
will reserve) the run cannot cover, ends the loop cleanly if a call is refused anyway (it is
entered with ``with``), and stops when the loop finds nothing new.

    .venv/bin/python examples/agent_run_budget.py
"""

from __future__ import annotations

import _client

import spendguard


def main() -> None:
    print(f"calls go to: {_client.where()}")
    project = spendguard.Budget("5", scope="project:research", period="monthly",
                                ledger=_client.ledger_url())
    run = project.child("run:2026-11-30-a", limit_usd="0.05",
                        on_warn=lambda event: print(f"  WARNING {event.message()}"))
    client = _client.openai_client(budget=project)
    history = [{"role": "system", "content": "You are a research agent."}]
    with run, spendguard.loop(budget=run, max_steps=50) as guard:
        for step in guard:
            history.append({"role": "user", "content": f"Step {step.index}: go on."})
            reply = client.chat.completions.create(model="gpt-4o", messages=history,
                                                   max_tokens=400)
            text = reply.choices[0].message.content or ""
            history.append({"role": "assistant", "content": text})
            print(f"step {step.index}: run spent ${run.spent:.4f} of $0.05")
    print(f"loop guard stopped the run ({guard.stop_reason}): {guard.stop_detail}")
    print(f"run total ${run.spent:.4f}; project total ${project.spent:.4f}")


if __name__ == "__main__":
    main()
