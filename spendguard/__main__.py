"""``python -m spendguard``: the ``spendguard`` command."""

from spendguard.cli import run

run()
