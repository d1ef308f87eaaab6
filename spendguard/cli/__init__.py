"""The ``spendguard`` command: noun groups and verbs, each a few lines over the library.

Subcommands are imported only when run, so ``spendguard --help`` stays fast. A spendguard
error (a bad ledger URL, an unreachable Redis, a broken price file) or an OS error (an
unwritable ``--out``) ends any command with one line on stderr and exit status 1, never a
traceback; ``SPENDGUARD_DEBUG=1`` shows the traceback instead.
"""

from __future__ import annotations

import importlib
import os
from typing import Any

import click

# command name -> "module:attribute" of a click command or group
_COMMANDS: dict[str, str] = {
    "demo": "spendguard.cli.demo:demo",
    "ledger": "spendguard.cli.ledger:ledger",
    "emulate": "spendguard.cli.emulate:emulate",
    "prices": "spendguard.cli.prices:prices",
    "size": "spendguard.cli.size:size",
    "breakeven": "spendguard.cli.breakeven:breakeven",
    "estimate": "spendguard.cli.estimate:estimate",
    "export": "spendguard.cli.export:export",
    "report": "spendguard.cli.report:report",
    "reconcile": "spendguard.cli.reconcile:reconcile",
    "batches": "spendguard.cli.batches:batches",
    "run": "spendguard.cli.run:run",
    "gateway": "spendguard.cli.gateway:gateway",
}


class _LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *_COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = _COMMANDS.get(cmd_name)
        if target is None:
            return super().get_command(ctx, cmd_name)
        module_name, _, attribute = target.partition(":")
        command: Any = getattr(importlib.import_module(module_name), attribute)
        if not isinstance(command, click.Command):  # pragma: no cover - a wiring bug
            raise TypeError(f"{target} is not a click command")
        return command

    def invoke(self, ctx: click.Context) -> Any:
        from spendguard._core.errors import SpendguardError  # noqa: PLC0415 - keeps --help fast

        try:
            return super().invoke(ctx)
        except (SpendguardError, OSError) as exc:
            if os.environ.get("SPENDGUARD_DEBUG"):
                raise
            raise click.ClickException(_one_line(exc)) from None


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.filename is not None:
        return f"cannot use {exc.filename}: {exc.strerror or exc}"
    return " ".join(str(exc).split()) or type(exc).__name__


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="spendguard-llm", prog_name="spendguard")
def main() -> None:
    """Keep LLM spending on budget: guarded clients, a spend ledger, plans and sizing."""
