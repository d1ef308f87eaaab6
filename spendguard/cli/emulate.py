"""``spendguard emulate``: the offline provider emulator on a loopback port."""

from __future__ import annotations

import threading

import click

from spendguard._core.errors import ConfigError
from spendguard.cli.conventions import emit_json
from spendguard.testing import Emulator, serve

__all__ = ["emulate"]

BANNER = "spendguard emulator — not a real provider (offline, deterministic, no API key used)"


def _wait_for_interrupt() -> None:
    threading.Event().wait()


@click.command()
@click.option("--port", type=click.IntRange(0, 65535), default=0, show_default=True,
              help="Port to listen on (0: any free port).")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to bind; loopback only unless --allow-remote.")
@click.option("--latency-ms", type=click.FloatRange(min=0), default=0.0, show_default=True,
              help="Delay before each response, in milliseconds.")
@click.option("--seed", type=int, default=0, show_default=True,
              help="Seed for ids, reply lengths and random faults.")
@click.option("--reply-tokens", type=click.IntRange(min=0), default=None,
              help="Length of every default reply (default: 16-64, derived from the prompt).")
@click.option("--batch-completion-s", type=click.FloatRange(min=0), default=60.0,
              show_default=True, help="How long an emulated batch takes to complete.")
@click.option("--error-rate", type=click.FloatRange(0, 1), default=0.0, show_default=True,
              help="Fraction of generation requests answered 429 or 500 (seeded).")
@click.option("--allow-remote", is_flag=True, help="Allow binding a non-loopback address.")
@click.option("--json", "as_json", is_flag=True, help="Print the base URLs as one JSON line.")
def emulate(*, port: int, host: str, latency_ms: float, seed: int, reply_tokens: int | None,
            batch_completion_s: float, error_rate: float, allow_remote: bool,
            as_json: bool) -> None:
    """Run the OpenAI / Anthropic emulator over HTTP until interrupted (Ctrl+C).

    Point an SDK at it with base_url (printed below) and any API key; the key is never
    stored or echoed. Replies are labelled "[spendguard emulator]".
    """
    emulator = Emulator(latency_s=latency_ms / 1000, seed=seed, reply_tokens=reply_tokens,
                        batch_completion_s=batch_completion_s, error_rate=error_rate)
    try:
        server = serve(emulator, host, port, allow_remote=allow_remote)
    except ConfigError as exc:
        raise click.UsageError(f"{exc} (on the command line: --allow-remote)") from exc
    try:
        if as_json:
            emit_json({"emulator": "spendguard", "real_provider": False,
                       "openai_base_url": server.openai_base_url,
                       "anthropic_base_url": server.anthropic_base_url})
        else:
            click.echo(BANNER)
            click.echo(f"  OpenAI SDK:    base_url={server.openai_base_url}")
            click.echo(f"  Anthropic SDK: base_url={server.anthropic_base_url}")
            click.echo(f"  or: export OPENAI_BASE_URL={server.openai_base_url} "
                       f"ANTHROPIC_BASE_URL={server.anthropic_base_url} "
                       "OPENAI_API_KEY=emulated ANTHROPIC_API_KEY=emulated")
            click.echo("Press Ctrl+C to stop.")
        _wait_for_interrupt()
    except KeyboardInterrupt:
        pass
    finally:
        server.close()
