"""The sync and async shells: carry out a core's actions, feed each reply back, nothing else.

Every decision lives in the generators of :mod:`.steps`; a shell only calls the provider
operation an action names (:class:`~.wire.BatchAPI`, through the caller's SDK client) and
hands the result, or the exception, back to the generator. The two differ by ``await`` alone.
"""

from __future__ import annotations

from typing import Any, TypeVar

from spendguard.batching.actions import Action, Steps
from spendguard.batching.context import ClientContext

__all__ = ["adrive", "drive"]

T = TypeVar("T")


class _Reply:
    """What the last action gave back: a value, or the exception it raised."""

    def __init__(self, value: Any = None, error: Exception | None = None) -> None:
        self.value = value
        self.error = error

    def resume(self, steps: Steps[Any]) -> Action:
        """The next action of ``steps`` (``StopIteration`` carries its result when done)."""
        return steps.send(self.value) if self.error is None else steps.throw(self.error)


def drive(steps: Steps[T], context: ClientContext) -> T:
    """Run ``steps`` to its end through the context's sync client."""
    reply = _Reply()
    try:
        while True:
            try:
                action = reply.resume(steps)
            except StopIteration as done:
                return done.value  # type: ignore[no-any-return]
            try:
                method = getattr(context.api, action.operation)
                reply = _Reply(method(context.client, *action.arguments()))
            except Exception as exc:  # the core decides what a failed call means
                reply = _Reply(error=exc)
    finally:
        steps.close()


async def adrive(steps: Steps[T], context: ClientContext) -> T:
    """The async twin of :func:`drive`: the same loop, each call awaited."""
    reply = _Reply()
    try:
        while True:
            try:
                action = reply.resume(steps)
            except StopIteration as done:
                return done.value  # type: ignore[no-any-return]
            try:
                method = getattr(context.api, "a" + action.operation)
                reply = _Reply(await method(context.client, *action.arguments()))
            except Exception as exc:
                reply = _Reply(error=exc)
    finally:
        steps.close()
