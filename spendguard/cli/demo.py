"""``spendguard demo``."""

from __future__ import annotations

from pathlib import Path

import click


@click.command()
@click.option("--ledger", "ledger_url", metavar="URL",
              help="Ledger to record the demo's calls in (default: a fresh SQLite file in a "
                   "temporary folder, so your real ledger is untouched).")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path),
              help="Folder for the demo's ledger and export files (default: a temporary one).")
def demo(ledger_url: str | None, out_dir: Path | None) -> None:
    """Show spendguard's whole job in seconds, offline, against the provider emulator."""
    from spendguard.demo import run_demo  # noqa: PLC0415 - keeps `spendguard --help` fast

    run_demo(ledger_url=ledger_url, out_dir=out_dir, echo=click.echo)
