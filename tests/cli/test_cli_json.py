"""Every command speaks JSON with ``--json``; exit statuses are usable from cron and CI."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

import spendguard
from spendguard import BatchLimits, Polling
from spendguard._budget.ledger import CallInfo
from spendguard._budget.reservations import reserve_call
from spendguard._strategies.batch.polling import Round, poll_until
from spendguard._strategies.batch.wait_progress import StderrProgress, WaitProgress
from spendguard.cli import main
from spendguard.testing import EmulatorServer, ManualClock, serve
from tests.batching_helpers import World, chat
from tests.reconcile_helpers import openai_files, openai_ledger


def _invoke(*args: str) -> click.testing.Result:
    return CliRunner().invoke(main, list(args))


def _leaf_commands(group: click.Group = main, ctx: click.Context | None = None,
                   prefix: str = "") -> Iterator[tuple[str, click.Command]]:
    ctx = ctx or click.Context(main)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None
        if isinstance(command, click.Group):  # verbs, and nested groups' verbs
            yield from _leaf_commands(command, click.Context(command, parent=ctx),
                                      f"{prefix}{name} ")
        if not isinstance(command, click.Group) or command.invoke_without_command:
            yield f"{prefix}{name}", command


@pytest.mark.parametrize(("name", "command"), list(_leaf_commands()),
                         ids=[name for name, _ in _leaf_commands()])
def test_every_command_has_a_json_option(name: str, command: click.Command) -> None:
    assert "--json" in {opt for param in command.params for opt in param.opts}, name


def _spent(url: str) -> None:
    budget = spendguard.Budget("10", ledger=url, scope="team")
    reserve_call(budget, Decimal("0.5"), call=CallInfo("openai", "gpt-4o-mini", "chat")
                 ).settle(actual_usd=Decimal("0.25"), tokens={"input": 10, "output": 5},
                          usage_estimated=False, table_version="t", latency_s=0.1)


def test_ledger_verify_json_says_the_books_agree(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'l.db'}"
    _spent(url)
    result = _invoke("ledger", "verify", "--ledger", url, "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == {"ledger": url, "ok": True, "problems": []}


def test_ledger_recover_json_lists_the_charged_calls(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'l.db'}"
    past = datetime.now(UTC) - timedelta(days=1)
    budget = spendguard.Budget("10", ledger=url, scope="team", clock=lambda: past)
    reservation = reserve_call(budget, Decimal("0.5"),
                               call=CallInfo("openai", "gpt-4o-mini", "chat"))
    result = _invoke("ledger", "recover", "--ledger", url, "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["recovered"] == 1 and data["call_ids"] == [reservation.id]


def test_ledger_drain_json_counts_what_it_copied(tmp_path: Path) -> None:
    source, archive = f"sqlite:///{tmp_path / 'a.db'}", f"sqlite:///{tmp_path / 'b.db'}"
    _spent(source)
    first = _invoke("ledger", "drain", archive, "--ledger", source, "--json")
    again = _invoke("ledger", "drain", archive, "--ledger", source, "--json")
    assert json.loads(first.output) == {"read": 1, "written": 1}
    assert json.loads(again.output) == {"read": 1, "written": 0}


def test_export_json_summary_goes_to_stdout_with_an_output_file(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'l.db'}"
    _spent(url)
    out = tmp_path / "spend.csv"
    result = _invoke("export", "--ledger", url, "-o", str(out), "--json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["rows"] >= 1 and summary["total_usd"] == "0.25"
    assert summary["path"] == str(out) and out.is_file()


def test_demo_json_prints_only_what_it_made(tmp_path: Path) -> None:
    result = _invoke("demo", "--out", str(tmp_path), "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["dir"] == str(tmp_path) and data["requests"] > 0


def test_reconcile_exits_1_while_a_difference_waits_and_0_once_accepted(
        tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    openai_ledger(url)
    files = [str(f) for f in openai_files(tmp_path)]
    waiting = _invoke("reconcile", *files, "--provider", "openai", "--ledger", url, "--json")
    assert waiting.exit_code == 1
    assert json.loads(waiting.output)["unresolved"] == 1
    accepted = _invoke("reconcile", *files, "--provider", "openai", "--ledger", url, "--accept")
    assert accepted.exit_code == 0, accepted.output
    again = _invoke("reconcile", *files, "--provider", "openai", "--ledger", url, "--json")
    assert again.exit_code == 0 and json.loads(again.output)["unresolved"] == 0


@pytest.fixture
def world(tmp_path: Path) -> World:
    return World(ledger=f"sqlite:///{tmp_path / 'ledger.db'}", scope="project:cli")


@pytest.fixture
def server(world: World, monkeypatch: pytest.MonkeyPatch) -> Iterator[EmulatorServer]:
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    with serve(world.emulator) as running:
        yield running


def test_batches_cancel_json_gives_the_job(world: World, server: EmulatorServer) -> None:
    run = spendguard.batch([chat(f"q{i}") for i in range(3)], client=world.openai(),
                           polling=world.polling)
    ledger = world.budget.ledger.url
    result = _invoke("batches", "cancel", run.job_ids[0], "--ledger", ledger,
                     "--base-url", server.openai_base_url, "--json")
    assert result.exit_code == 0, result.output
    job = json.loads(result.stdout)
    assert job["id"] == run.job_ids[0] and job["state"] == "ended"
    assert world.budget.reserved == 0


def test_batches_list_has_a_header_row(world: World) -> None:
    spendguard.batch([chat("q")], client=world.openai(), polling=world.polling)
    result = _invoke("batches", "list", "--ledger", world.budget.ledger.url)
    header, row = result.stdout.splitlines()
    assert header.split()[:4] == ["JOB", "PROVIDER", "STATE", "STATUS"]
    assert row.startswith("sgb_") and row.index("openai") == header.index("PROVIDER")


def test_a_wait_over_many_jobs_prints_one_short_line_a_look() -> None:
    world = World(emulator_options={"batch_completion_s": 30})
    limits = BatchLimits(openai_max_requests=1)
    run = spendguard.batch([chat(f"q{i}") for i in range(12)], client=world.openai(),
                           polling=world.polling, limits=limits)
    assert len(run.job_ids) == 12
    run.results()
    first = world.progress[0]
    assert "(+11 more running)" in first and first.count("sgb_") == 1
    assert "0/12 jobs and 0/12 requests done, 0s elapsed; next check in 10s" in first
    assert all(len(line) < 200 for line in world.progress)
    assert "elapsed" in world.progress[-1]


def test_a_terminal_gets_a_bar_redrawn_in_place() -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    screen = Terminal()
    clock = ManualClock()
    looks = iter([Round(done=False, status="batch job a: in_progress", jobs_total=2,
                        requests_done=5, requests_total=20),
                  Round(done=False, status="batch job a: in_progress", jobs_done=1,
                        jobs_total=2, requests_done=10, requests_total=20),
                  Round(done=True)])
    polling = Polling.manual(clock, progress=StderrProgress(screen))
    assert poll_until(lambda: next(looks), polling, until_s=None)
    drawn = screen.getvalue()
    assert drawn.count("\r") == 2 and drawn.endswith("\n") and "\n" not in drawn[:-1]
    assert "batch [######..................] 0/2 jobs · 5/20 requests · 0s elapsed" in drawn
    assert "1/2 jobs · 10/20 requests · 10s elapsed · next check in 20s" in drawn


def test_wait_progress_reads_as_a_sentence() -> None:
    progress = WaitProgress(status="batch job a (openai b1): in_progress, 120/500 done",
                            jobs_done=1, jobs_total=3, requests_done=120, requests_total=500,
                            elapsed_s=310, next_poll_s=40)
    assert progress.line() == (
        "spendguard: batch job a (openai b1): in_progress, 120/500 done; 1/3 jobs and 120/500"
        " requests done, 5m 10s elapsed; next check in 40s")
