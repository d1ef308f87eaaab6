"""Budget alerts delivered to webhooks: the warning level and the limit, each sent once.

A tiny HTTP receiver on 127.0.0.1 stands in for Slack and for an incident tool. A budget of
$0.002 posts a plain JSON alert and a Slack-shaped one when it reaches 50 % and then 100 %;
the posts happen on spendguard's alert thread, never inside a call. A second Budget object on
the same ledger (as another process would be) checks the same thresholds and sends nothing:
the ledger remembers what was sent.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import _client

import spendguard

received: list[tuple[str, dict[str, Any]]] = []


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        received.append((self.path, body))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


def main() -> None:
    print(f"calls go to: {_client.where()}")
    server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    hooks = [spendguard.Webhook(f"{base}/incidents/secret-token"),
             spendguard.Webhook(f"{base}/slack/T000/B000/secret", format="slack")]
    print(f"alerts go to: {hooks}")  # the URLs are masked: a webhook URL is a secret

    ledger = _client.ledger_url()
    budget = spendguard.Budget("0.002", scope="team:search", ledger=ledger, warn_at=0.5,
                               on_warn=lambda event: None, alerts=hooks)
    client = _client.openai_client(budget=budget)
    for question in range(1, 40):
        try:
            client.chat.completions.create(
                model="gpt-4o-mini", max_tokens=400,
                messages=[{"role": "user", "content": f"Summarise ticket {question}."}])
        except spendguard.BudgetExceeded:
            print(f"call {question}: refused, ${budget.spent:.4f} of $0.002 spent")
            break
    spendguard.flush_alerts()  # only so that this script prints them before it ends
    for path, body in received:
        if path.startswith("/slack"):
            print(f"slack    <- {body['text']}")
        else:
            print(f"incident <- {body['threshold']}: spent ${body['spent_usd']} of "
                  f"${body['limit_usd']} ({body['period']})")

    before = len(received)
    elsewhere = spendguard.Budget("0.002", scope="team:search", ledger=ledger, warn_at=0.5,
                                  alerts=hooks)
    spendguard.check_alerts(elsewhere)
    print(f"another process checking the same ledger sent {len(received) - before} more")
    server.shutdown()


if __name__ == "__main__":
    main()
