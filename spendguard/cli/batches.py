"""``spendguard batches``: batch jobs kept in the ledger — list, show, resume, results, cancel.

``resume`` and ``cancel`` talk to the provider with the official SDK, reading the API key from
``OPENAI_API_KEY`` / ``ANTHROPIC_API_KEY`` / ``GEMINI_API_KEY`` (and ``--base-url`` for a proxy
or the emulator).
``resume`` collects: it settles each request and writes each result not yet collected as one
JSON line, acknowledging it only once the line is written; it never makes ordinary calls (the
deadline fallback is for the program that asked). ``results`` writes every result of a job
again, batch responses downloaded again from the provider, and changes nothing.
"""

from __future__ import annotations

import json
from typing import IO, Any

import click

from spendguard._budget.ledger import open_ledger
from spendguard._budget.ledger.base import Ledger
from spendguard._core.errors import SpendguardError
from spendguard._core.money import format_usd
from spendguard._core.private_files import open_private
from spendguard._core.terminal import printable
from spendguard._providers import adapter_for
from spendguard._strategies.batch import (
    BatchJob,
    BatchResult,
    batch_jobs,
    batch_results,
    cancel_batch,
    reopen_batches,
)
from spendguard._strategies.batch.polling import Polling
from spendguard._strategies.batch.results import response_json
from spendguard.cli.conventions import SuggestingGroup, emit_json

__all__ = ["batches"]

class _PrivateAppend(click.File):
    """A file results are appended to, made 0600 if new (results say what was asked)."""

    def __init__(self) -> None:
        super().__init__("a")

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Any:
        if value == "-" or hasattr(value, "write"):
            return super().convert(value, param, ctx)
        try:
            opened = open_private(value, "a")
        except OSError as exc:
            self.fail(f"cannot write {value}: {exc.strerror or exc}", param, ctx)
        if ctx is not None:
            ctx.call_on_close(opened.close)
        return opened


_LEDGER = click.option("--ledger", default=None, metavar="URL",
                       help="Ledger URL or path (default: spendguard's default ledger).")
_BASE_URL = click.option("--base-url", default=None,
                         help="API base URL (a proxy, or `spendguard emulate`).")


def _client(provider: str, base_url: str | None) -> Any:
    try:  # the SDK of the job's provider only is imported
        return adapter_for(provider).sdk_client(base_url)
    except Exception as exc:  # the SDKs raise their own error for a missing key
        raise click.ClickException(f"cannot build a {provider} client: {exc}") from exc


_ID_WIDTH = 24  # sgb_ and 20 hex digits
_HEADER = (f"{'JOB':<{_ID_WIDTH}}  {'PROVIDER':<9} {'STATE':<9} {'STATUS':<11} "
           f"{'REQS':>6}  {'COST':>11}    {'WORST CASE':>11}  OUTCOMES")


def _summary(job: BatchJob) -> str:
    done = ", ".join(f"{n} {state}" for state, n in sorted(job.outcomes.items()))
    return (f"{job.id:<{_ID_WIDTH}}  {job.provider:<9} {job.state:<9} "
            f"{job.provider_status or '-':<11} {job.request_count:>6}  "
            f"{format_usd(job.cost_usd):>11} of "
            f"{format_usd(job.worst_usd):>11}  {done}")


@click.group(cls=SuggestingGroup)
def batches() -> None:
    """Batch jobs submitted by spendguard.batch() or client.deferred, kept in the ledger."""


@batches.command("list")
@_LEDGER
@click.option("--active", is_flag=True, help="Only jobs still running or not yet collected.")
@click.option("--json", "as_json", is_flag=True, help="The jobs as a JSON list.")
def list_jobs(ledger: str | None, active: bool, as_json: bool) -> None:
    """List batch jobs, newest first: state, requests, cost so far of the worst case held."""
    jobs = batch_jobs(ledger=_read_only(ledger), active=active)
    if as_json:
        emit_json([{k: v for k, v in job.as_dict().items() if k != "requests"}
                   for job in jobs])
        return
    if not jobs:
        click.echo("spendguard: no batch jobs" + (" still active" if active else ""), err=True)
    if jobs:
        click.echo(_HEADER)
    for job in jobs:
        click.echo(_summary(job))


@batches.command()
@click.argument("job_id")
@_LEDGER
@click.option("--json", "as_json", is_flag=True, help="The job and its requests as JSON.")
def show(job_id: str, ledger: str | None, as_json: bool) -> None:
    """Show one job and each of its requests (state, route, cost; never prompts)."""
    job = _load(job_id, _read_only(ledger))
    if as_json:
        emit_json(job.as_dict())
        return
    click.echo(_summary(job))
    click.echo(f"  endpoint {job.endpoint}, provider batch {job.provider_batch_id or '-'}, "
               f"created {job.created_at:%Y-%m-%d %H:%M:%S} UTC"
               + (f", deadline {job.deadline:%Y-%m-%d %H:%M:%S} UTC" if job.deadline else "")
               + (" (falls back)" if job.fallback else ""))
    if job.note:
        click.echo(f"  note: {printable(job.note)}")  # a provider's words: never obeyed
    for request in job.requests:
        mark = "" if request.collected or request.state == "pending" else "  (not collected)"
        click.echo(f"  {printable(request.custom_id):<24} {printable(request.model):<22} "
                   f"{request.state:<10} "
                   f"{request.route:<8} {format_usd(request.cost_usd):>11}{mark}")


def _read_only(ledger: str | None) -> Ledger:
    """The ledger opened for reading: a missing one is an error, nothing is written."""
    return open_ledger(ledger, read_only=True)


def _load(job_id: str, ledger: str | Ledger | None) -> BatchJob:
    try:
        return BatchJob.load(job_id, ledger=ledger)
    except SpendguardError as exc:
        raise click.ClickException(str(exc)) from exc


def _line(result: BatchResult) -> str:
    response = response_json(result.response) if result.response is not None else None
    return json.dumps({"job_id": result.job_id, "custom_id": result.custom_id,
                       "index": result.index, "status": result.status, "route": result.route,
                       "model": result.model, "cost_usd": str(result.cost_usd),
                       "response": response, "error": result.error})


@batches.command()
@click.argument("job_id", required=False)
@_LEDGER
@_BASE_URL
@click.option("--wait/--no-wait", default=True, show_default=True,
              help="Poll until the jobs end, or look once.")
@click.option("--timeout", type=click.FloatRange(min=0), default=None,
              help="Stop waiting after this many seconds.")
@click.option("--output", "-o", type=_PrivateAppend(), default="-",
              help="Append results here as JSON lines (default: standard output).")
@click.option("--take-over", is_flag=True,
              help="Resume jobs another running process owns.")
@click.option("--json", "as_json", is_flag=True,
              help="The closing summary as JSON on stderr (results are JSON lines anyway).")
def resume(job_id: str | None, ledger: str | None, base_url: str | None, wait: bool,
           timeout: float | None, output: IO[str], take_over: bool, as_json: bool) -> None:
    """Resume unfinished jobs (all, or JOB_ID): poll, settle, write uncollected results.

    Each result is acknowledged once its line is written, so it is written once across
    processes and runs (twice at most if this command is killed between writing a line and
    acknowledging it); progress goes to stderr.
    """
    providers = ([_load(job_id, ledger).provider] if job_id else
                 sorted({job.provider for job in batch_jobs(ledger=ledger, active=True)}))
    written, limit_s = 0, timeout if wait else 0.0
    for provider in providers:
        try:
            run = reopen_batches(_client(provider, base_url), job_id=job_id, ledger=ledger,
                                 polling=Polling(), fallback=False, take_over=take_over)
            for result in run.each(limit_s, partial=True):  # acknowledged on advancing
                output.write(_line(result) + "\n")
                output.flush()
                written += 1
        except SpendguardError as exc:
            raise click.ClickException(str(exc)) from exc
    if as_json:
        emit_json({"collected": written, "providers": providers}, err=True)
        return
    click.echo(f"spendguard: {written} result(s) collected", err=True)
    if not providers:
        click.echo("spendguard: no active batch jobs", err=True)


@batches.command()
@click.argument("job_id")
@_LEDGER
@_BASE_URL
@click.option("--output", "-o", type=_PrivateAppend(), default="-",
              help="Append results here as JSON lines (default: standard output).")
@click.option("--json", "as_json", is_flag=True,
              help="The closing summary as JSON on stderr (results are JSON lines anyway).")
def results(job_id: str, ledger: str | None, base_url: str | None, output: IO[str],
            as_json: bool) -> None:
    """Write every result of JOB_ID again, downloading batch responses from the provider.

    Acknowledged or not; nothing is settled, acknowledged or changed. Providers keep batch
    output for weeks (OpenAI 30 days, Anthropic 29 days); after that only what the ledger
    kept (keep_bodies=True) comes back.
    """
    provider = _load(job_id, ledger).provider
    try:
        found = batch_results(_client(provider, base_url), job_id, ledger=ledger)
    except SpendguardError as exc:
        raise click.ClickException(str(exc)) from exc
    for result in found:
        output.write(_line(result) + "\n")
    output.flush()
    if as_json:
        emit_json({"job_id": job_id, "results": len(found)}, err=True)
        return
    click.echo(f"spendguard: {len(found)} result(s) of {job_id}", err=True)


@batches.command()
@click.argument("job_id")
@_LEDGER
@_BASE_URL
@click.option("--json", "as_json", is_flag=True, help="The cancelled job as JSON.")
def cancel(job_id: str, ledger: str | None, base_url: str | None, as_json: bool) -> None:
    """Cancel a job: unfinished requests are released; finished ones are kept (resume them)."""
    provider = _load(job_id, ledger).provider
    try:
        job = cancel_batch(_client(provider, base_url), job_id, ledger=ledger)
    except SpendguardError as exc:
        raise click.ClickException(str(exc)) from exc
    if as_json:
        emit_json({k: v for k, v in job.as_dict().items() if k != "requests"})
    else:
        click.echo(_summary(job))
    if job.state == "submitted":
        click.echo(f"spendguard: {provider} is stopping the batch; `spendguard batches resume "
                   f"{job_id}` settles it and collects what it finished", err=True)
