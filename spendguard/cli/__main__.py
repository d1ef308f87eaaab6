"""``python -m spendguard.cli``: the ``spendguard`` command."""

from spendguard.cli import run

run()
