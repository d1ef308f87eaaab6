"""The ``spendguard`` command: noun groups and verbs, each a few lines over the library.

Subcommands are imported only when run, so ``spendguard --help`` stays fast.
"""

from __future__ import annotations

import importlib
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


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="spendguard-llm", prog_name="spendguard")
def main() -> None:
    """Keep LLM spending on budget: guarded clients, a spend ledger, plans and sizing."""
