"""``spendguard ledger``: look after the ledger itself — check its books, copy it elsewhere."""

from __future__ import annotations

from datetime import UTC, datetime

import click

from spendguard._core.errors import SpendguardError
from spendguard.cli.conventions import SuggestingGroup, emit_json
from spendguard.cli.export import moment_callback
from spendguard.cli.progress import Progress

__all__ = ["ledger"]

_LEDGER_HELP = ("Ledger URL (sqlite:///..., redis://..., postgresql://..., memory://name); "
                "default: $SPENDGUARD_LEDGER, else the SQLite file in spendguard's data "
                "directory.")
_JSON = click.option("--json", "as_json", is_flag=True, help="Print JSON for machines.")


@click.group(cls=SuggestingGroup)
def ledger() -> None:
    """Check the ledger's books, recover abandoned calls, copy it for long-term records."""


@ledger.command()
@click.option("--ledger", "ledger_url", metavar="URL", help=_LEDGER_HELP)
@_JSON
def verify(ledger_url: str | None, as_json: bool) -> None:
    """Replay the ledger's events and compare them with its running totals.

    Exits 1 when any total disagrees with its events (each difference is printed).
    """
    from spendguard._budget.ledger import open_ledger  # noqa: PLC0415 - keeps --help fast

    opened = open_ledger(ledger_url, read_only=True)
    with Progress("replaying the events", "events", quiet=as_json) as progress:
        problems = opened.verify(progress=progress)
    if as_json:
        emit_json({"ledger": opened.url, "ok": not problems, "problems": problems})
    else:
        for problem in problems:
            click.echo(problem)
    if problems:
        raise SystemExit(1)
    if not as_json:
        click.echo(f"{opened.url}: the totals agree with the events")


@ledger.command()
@click.option("--ledger", "ledger_url", metavar="URL", help=_LEDGER_HELP)
@_JSON
def recover(ledger_url: str | None, as_json: bool) -> None:
    """Charge reservations whose time ran out (their process died) at their worst case.

    spendguard does this by itself on the next reservation; this does it now. A ledger that
    does not exist is an error: there is nothing to recover, and none is created.
    """
    from spendguard._budget.ledger import open_ledger  # noqa: PLC0415

    open_ledger(ledger_url, read_only=True)  # "no ledger at ..." rather than a new empty one
    opened = open_ledger(ledger_url)
    # Opening a SQLite ledger already recovers what has expired: those count too.
    recovered = [*getattr(opened, "recovered_at_open", ()),
                 *opened.recover_expired(datetime.now(UTC))]
    if as_json:
        emit_json({"ledger": opened.url, "recovered": len(recovered), "call_ids": recovered})
        return
    click.echo(f"{opened.url}: {len(recovered)} abandoned call(s) charged at their worst case")
    for call_id in recovered:
        click.echo(f"  recovered call {call_id}")


@ledger.command()
@click.argument("destination", metavar="DEST_URL")
@click.option("--ledger", "ledger_url", metavar="URL", help=_LEDGER_HELP)
@click.option("--since", callback=moment_callback(False), metavar="WHEN",
              help="Only calls from this UTC month, day or time on: 2026-05, 2026-05-21, "
                   "2026-05-21T10:00:00Z.")
@click.option("--until", callback=moment_callback(True), metavar="WHEN",
              help="Only calls before this UTC time; a month or day is included whole.")
@_JSON
def drain(destination: str, ledger_url: str | None, since: datetime | None,
          until: datetime | None, as_json: bool) -> None:
    """Copy finished calls into DEST_URL (sqlite:///... or postgresql://...), each once.

    Running it again copies only what is new, so it can run from cron.
    """
    from spendguard._budget.ledger import resolve_ledger_url  # noqa: PLC0415
    from spendguard._budget.ledger.drain import drain as drain_ledger  # noqa: PLC0415

    try:
        result = drain_ledger(resolve_ledger_url(ledger_url), destination,
                              since=since, until=until)
    except SpendguardError as exc:
        raise click.UsageError(str(exc)) from None
    if as_json:
        emit_json({"read": result.read, "written": result.written})
        return
    click.echo(f"read {result.read} record(s), wrote {result.written} new")


@ledger.command()
@click.option("--ledger", "ledger_url", metavar="URL",
              help="The Redis ledger to rebuild (redis://..., redis+sentinel://..., "
                   "redis+cluster://...); default: $SPENDGUARD_LEDGER.")
@click.option("--from", "source", metavar="COPY",
              help="The durable copy to rebuild it from: a SQLite ledger or backup "
                   "(sqlite:///...) or the postgresql://... database 'ledger drain' fills.")
@click.option("--empty", is_flag=True, help="Copy nothing: accept the lost data and start "
                                            "from $0 on purpose.")
@_JSON
def reseed(ledger_url: str | None, source: str | None, empty: bool, as_json: bool) -> None:
    """Rebuild a Redis ledger that lost its data (restarted empty, flushed, failed over
    behind) from a durable copy, so the processes that refuse it carry on.

    Each finished call of the copy is written back once (calls already there are kept);
    the ledger is then stamped as reseeded, which running processes accept at their next
    connection. Calls finished after the copy's last drain are not in it.
    """
    from spendguard._budget.ledger import resolve_ledger_url  # noqa: PLC0415
    from spendguard._budget.ledger.redis.options import SCHEMES  # noqa: PLC0415
    from spendguard._budget.ledger.redis.reseed import reseed as reseed_ledger  # noqa: PLC0415
    from spendguard._core.terminal import masked_url  # noqa: PLC0415

    try:
        url = resolve_ledger_url(ledger_url)
        if url.partition("://")[0].lower() not in SCHEMES:
            raise click.UsageError(f"reseed rebuilds a Redis ledger; {masked_url(url)} is "
                                   f"not one (write --ledger redis://host:6379/0)")
        result = reseed_ledger(url, source, empty=empty)
    except SpendguardError as exc:
        raise click.UsageError(str(exc)) from None
    if as_json:
        emit_json({"read": result.read, "written": result.written,
                   "generation": result.generation})
        return
    what = "started empty" if empty else (f"read {result.read} record(s) from the copy, "
                                          f"wrote {result.written} new")
    click.echo(f"reseeded: {what}; new generation {result.generation[:8]}")
