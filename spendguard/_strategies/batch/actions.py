"""What the batching core asks the provider for, as plain data (the sans-I/O vocabulary).

The decisions about a job (:mod:`.steps`) are generators: each yields one action, the shell
(:mod:`.shells`) carries it out through the caller's SDK client, sync or async, and sends the
reply back in (or throws the exception in at the ``yield``). An action names the
:class:`~.wire.BatchAPI` operation it stands for; its fields are that operation's arguments
after the client, in order. The pattern is the one of https://sans-io.readthedocs.io/.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, ClassVar, TypeVar

from spendguard._strategies.batch.wire import Snapshot

__all__ = ["Action", "Cancel", "FallBack", "Fetch", "Find", "Poll", "Steps", "Submit"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Action:
    """One provider operation for a shell to carry out."""

    operation: ClassVar[str]
    """The :class:`~.wire.BatchAPI` method (its async twin is ``"a" + operation``)."""

    def arguments(self) -> tuple[Any, ...]:
        """The operation's arguments after the client (the fields, in order)."""
        return tuple(getattr(self, f.name) for f in fields(self))


@dataclass(frozen=True, slots=True)
class Find(Action):
    """Look for the batch a crashed submission of job ``job_id`` created."""

    operation: ClassVar[str] = "find"
    job_id: str


@dataclass(frozen=True, slots=True)
class Submit(Action):
    """Send the job's pending requests as one provider batch."""

    operation: ClassVar[str] = "submit"
    job_id: str
    endpoint: str
    requests: Sequence[tuple[str, Mapping[str, Any]]]
    headers: Mapping[str, str]


@dataclass(frozen=True, slots=True)
class Poll(Action):
    """Read a provider batch's status and counts."""

    operation: ClassVar[str] = "retrieve"
    batch_id: str


@dataclass(frozen=True, slots=True)
class Cancel(Action):
    """Ask the provider to stop a batch."""

    operation: ClassVar[str] = "cancel"
    batch_id: str


@dataclass(frozen=True, slots=True)
class Fetch(Action):
    """Download an ended batch's result lines."""

    operation: ClassVar[str] = "results"
    snapshot: Snapshot


@dataclass(frozen=True, slots=True)
class FallBack(Action):
    """Send one request as an ordinary call (full price, through the client's guard)."""

    operation: ClassVar[str] = "call"
    endpoint: str
    body: Mapping[str, Any]


Steps = Generator[Action, Any, T]
"""Decisions that yield actions, receive each one's reply and end with a ``T`` (done)."""
