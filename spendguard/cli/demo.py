"""``spendguard demo``."""

from __future__ import annotations

from pathlib import Path

import click

from spendguard.cli.conventions import emit_json


def _quiet(_line: str = "") -> None:
    """Swallow the demo's narration when only its JSON summary is wanted."""


@click.command()
@click.option("--ledger", "ledger_url", metavar="URL",
              help="Ledger to record the demo's calls in (default: a fresh SQLite file in a "
                   "temporary folder, so your real ledger is untouched).")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path),
              help="Folder for the demo's ledger and export files (default: a temporary one).")
@click.option("--json", "as_json", is_flag=True,
              help="Print only what the demo made (ledger, folder, requests, export) as JSON.")
def demo(ledger_url: str | None, out_dir: Path | None, as_json: bool) -> None:
    """Show spendguard's whole job in seconds, offline, against the provider emulator."""
    from spendguard.cli.demo_story import run_demo  # noqa: PLC0415 - keeps `spendguard --help` fast

    shown = run_demo(ledger_url=ledger_url, out_dir=out_dir,
                     echo=_quiet if as_json else click.echo)
    if as_json:
        emit_json(shown)
