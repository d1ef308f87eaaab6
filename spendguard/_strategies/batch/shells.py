"""The sync and async shells: carry out a core's actions, feed each reply back, nothing else.

Every decision lives in the generators of :mod:`.steps`; a shell only calls the provider
operation an action names (:class:`~.wire.BatchAPI`, through the caller's SDK client) and
hands the result, or the exception, back to the generator. The two differ by ``await`` alone.
"""

from __future__ import annotations

from contextlib import closing
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from spendguard._strategies.batch.actions import Action, Steps
from spendguard._strategies.batch.context import ClientContext

__all__ = ["adrive", "drive"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class _Done:
    """What the steps ended with (their return value)."""

    value: Any


@dataclass(frozen=True, slots=True)
class _Reply:
    """What the last action gave back: a value, or the exception it raised."""

    value: Any = None
    error: Exception | None = None

    def resume(self, steps: Steps[Any]) -> Action | _Done:
        """The next action of ``steps``, or what it ended with."""
        try:
            return steps.send(self.value) if self.error is None else steps.throw(self.error)
        except StopIteration as done:
            return _Done(done.value)


def drive(steps: Steps[T], context: ClientContext) -> T:
    """Run ``steps`` to its end through the context's sync client."""
    with closing(steps):
        reply = _Reply()
        while not isinstance(action := reply.resume(steps), _Done):
            try:
                method = getattr(context.api, action.operation)
                reply = _Reply(method(context.client, *action.arguments()))
            except Exception as exc:  # the core decides what a failed call means
                reply = _Reply(error=exc)
        return cast(T, action.value)


async def adrive(steps: Steps[T], context: ClientContext) -> T:
    """The async twin of :func:`drive`: the same loop, each call awaited."""
    with closing(steps):
        reply = _Reply()
        while not isinstance(action := reply.resume(steps), _Done):
            try:
                method = getattr(context.api, "a" + action.operation)
                reply = _Reply(await method(context.client, *action.arguments()))
            except Exception as exc:
                reply = _Reply(error=exc)
        return cast(T, action.value)
