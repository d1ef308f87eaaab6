"""``spendguard batches list | show | resume | cancel`` against the loopback emulator."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

import spendguard
from spendguard.cli import main
from spendguard.testing import EmulatorServer, serve
from tests.batching_helpers import World, chat, message


@pytest.fixture
def world(tmp_path: Path) -> World:
    return World(ledger=f"sqlite:///{tmp_path / 'ledger.db'}", scope="project:cli")


@pytest.fixture
def server(world: World, monkeypatch: pytest.MonkeyPatch) -> Iterator[EmulatorServer]:
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    with serve(world.emulator) as running:
        yield running


def run_cli(*args: str) -> tuple[str, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output + result.stderr
    return result.stdout, result.stderr


def ledger_url(world: World) -> str:
    return world.budget.ledger.url


def test_list_shows_each_job_and_json_gives_its_fields(world: World) -> None:
    run = spendguard.batch([chat("a"), chat("b")], client=world.openai(), polling=world.polling)
    out, _ = run_cli("batches", "list", "--ledger", ledger_url(world))
    assert run.job_ids[0] in out and "submitted" in out and "2 pending" in out
    (fields,) = json.loads(run_cli("batches", "list", "--ledger", ledger_url(world), "--json")[0])
    assert (fields["id"], fields["request_count"], fields["active"]) == (run.job_ids[0], 2, True)
    run.results()
    assert run_cli("batches", "list", "--ledger", ledger_url(world), "--active")[0] == ""


def test_show_lists_each_request_without_its_prompt(world: World) -> None:
    run = spendguard.batch([chat("secret prompt")], client=world.openai(),
                           polling=world.polling)
    run.results()
    out, _ = run_cli("batches", "show", run.job_ids[0], "--ledger", ledger_url(world))
    assert run.custom_ids()[0] in out and "succeeded" in out and "batch" in out
    assert "secret prompt" not in out
    shown = json.loads(run_cli("batches", "show", run.job_ids[0], "--ledger",
                               ledger_url(world), "--json")[0])
    assert shown["requests"][0]["collected"] is True


def test_resume_writes_each_uncollected_result_once(world: World,
                                                    server: EmulatorServer) -> None:
    spendguard.batch([chat("a")], client=world.openai(), polling=world.polling)
    spendguard.batch([message("b")], client=world.anthropic(), polling=world.polling)
    world.clock.advance(600)
    out, err = run_cli("batches", "resume", "--ledger", ledger_url(world), "--base-url",
                       server.base_url, "--no-wait")
    lines = [json.loads(line) for line in out.splitlines()]
    assert sorted((x["status"], x["route"]) for x in lines) == [("succeeded", "batch")] * 2
    texts = sorted(json.dumps(x["response"]) for x in lines)
    assert "echo: a" in texts[0] + texts[1] and "echo: b" in texts[0] + texts[1]
    assert "2 result(s) collected" in err
    out, err = run_cli("batches", "resume", "--ledger", ledger_url(world), "--base-url",
                       server.base_url, "--no-wait")
    assert out == "" and "no active batch jobs" in err
    assert world.budget.reserved == 0


def test_resume_of_one_job_appends_to_a_file(world: World, server: EmulatorServer,
                                             tmp_path: Path) -> None:
    run = spendguard.batch([chat("a")], client=world.openai(), polling=world.polling)
    world.clock.advance(600)
    target = tmp_path / "results.jsonl"
    run_cli("batches", "resume", run.job_ids[0], "--ledger", ledger_url(world), "--base-url",
            server.openai_base_url, "--no-wait", "--output", str(target))
    (line,) = target.read_text().splitlines()
    assert json.loads(line)["job_id"] == run.job_ids[0]


def test_cancel_releases_the_unfinished_requests(world: World, server: EmulatorServer) -> None:
    run = spendguard.batch([chat(f"q{i}") for i in range(4)], client=world.openai(),
                           polling=world.polling)
    world.clock.advance(50)  # about a third done
    out, _ = run_cli("batches", "cancel", run.job_ids[0], "--ledger", ledger_url(world),
                     "--base-url", server.openai_base_url)
    assert run.job_ids[0] in out and "ended" in out and "cancelled" in out
    assert world.budget.reserved == 0
    statuses = [r.status for r in run.results()]
    assert statuses.count("cancelled") >= 2 and "succeeded" in statuses


def test_an_unknown_job_is_a_clear_error(world: World) -> None:
    result = CliRunner().invoke(main, ["batches", "show", "sgb_nope", "--ledger",
                                       ledger_url(world)])
    assert result.exit_code == 1
    assert "no batch job 'sgb_nope'" in result.output + result.stderr
