"""Metering a streamed response: usage read from its events as they pass, settled once.

Events are server-sent events, or AWS event-stream frames for Bedrock (a :class:`Framing`).

The transport tees every chunk of a streamed body through a :class:`StreamMeter` and calls
:meth:`StreamMeter.finish` when the stream ends (completely, early, broken, or garbage
collected). The charge for a stream cut short follows :mod:`spendguard._guard.settling`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Protocol

from spendguard._core.errors import SpendguardError
from spendguard._costing.tokens import count_tokens
from spendguard._costing.usage import Usage
from spendguard._guard.settling import STREAM_TAIL_TOKENS, stream_output_tokens, text_token_bound
from spendguard._guard.sse import ContentDecoder, SSEDecoder
from spendguard._providers import StreamReader

if TYPE_CHECKING:  # pragma: no cover
    from spendguard._guard.metering import Attempt

__all__ = ["Framing", "StreamMeter"]


class Framing(Protocol):
    """Splits a streamed body into ``(event name, data)`` pairs: SSE or event-stream frames."""

    def feed(self, chunk: bytes) -> Iterator[tuple[str | None, dict[str, Any] | None]]: ...
    def flush(self) -> Iterator[tuple[str | None, dict[str, Any] | None]]: ...


class StreamMeter:
    """Reads usage from a streamed body as it flows; settles once when it ends.

    Neither ``feed`` nor ``finish`` ever raises: the caller's stream is the provider's, and a
    finalizer that raises would only print "Exception ignored".
    """

    def __init__(self, attempt: Attempt, decoder: ContentDecoder, reader: StreamReader,
                 framing: Framing | None = None) -> None:
        self.attempt = attempt
        self._decoder = decoder
        self._sse: Framing = framing or SSEDecoder()
        self._reader = reader
        self._unreadable: BaseException | None = None

    def feed(self, chunk: bytes) -> None:
        if self._unreadable is not None:
            return  # the stream already proved unreadable; keep passing bytes, stop reading
        try:
            for name, data in self._sse.feed(self._decoder.decode(chunk)):
                if data is not None:
                    self._reader.feed(name, data)
        except Exception as exc:  # reading must never break the caller's stream
            self._unreadable = exc

    def finish(self, *, error: BaseException | None = None) -> None:
        """The stream closed: completely, early (the caller stopped), or broken."""
        if self.attempt.finished:
            return
        try:
            self._finish(error)
        except Exception as exc:
            self.attempt.settle_unreadable(exc)

    def _finish(self, error: BaseException | None) -> None:
        if self._unreadable is None:
            try:
                for name, data in self._sse.feed(self._decoder.flush()):
                    if data is not None:
                        self._reader.feed(name, data)
                for name, data in self._sse.flush():
                    if data is not None:
                        self._reader.feed(name, data)
            except Exception as exc:
                self._unreadable = exc
        if self._unreadable is not None:
            self.attempt.settle_unreadable(self._unreadable, read=self._received_usage())
            return
        usage = self._reader.usage()
        if usage is not None and self._reader.complete:
            self.attempt.settle(usage, model=self._reader.model)
            return
        if self._reader.complete:
            # Finished, but the request did not ask for usage in the stream.
            self.attempt.settle(self._estimated_usage(usage, cut=False), model=self._reader.model)
            return
        status = "stream_broken" if error is not None else "stream_abandoned"
        note = (f"{status.replace('_', ' ')}: output received plus up to {STREAM_TAIL_TOKENS} "
                "tokens the provider may have generated after the disconnect")
        self.attempt.settle(self._estimated_usage(usage, cut=True), status=status,
                            model=self._reader.model, note=note)

    def _received_usage(self) -> Usage | None:
        try:
            return self._estimated_usage(self._reader.usage(), cut=False)
        except Exception:
            return None

    def _estimated_usage(self, reported: Usage | None, *, cut: bool) -> Usage:
        # No final usage arrived (cut short, or the request did not ask for it): the input is
        # what was counted before sending (or reported at the start); the output is counted
        # from the text received, plus the tail the provider may have generated after a cut.
        call = self.attempt.call
        output = 0
        text = self._reader.output_text()
        if text:
            try:  # a host's model may count as another (its price's tokenizer_model)
                output = int(count_tokens(self.attempt.guard.table.get(call.model)
                                          .tokenizer_model, text=text))
            except SpendguardError:
                output = text_token_bound(text)  # a priced model with no known tokenizer
        output = max(output, self._reader.output_events)
        if reported is not None:
            output = max(output, reported.output_tokens)
        if cut:
            output = stream_output_tokens(output, self.attempt.estimate.output_tokens_worst)
        if reported is not None:
            return Usage(input_tokens=reported.input_tokens,
                         cache_read_tokens=reported.cache_read_tokens,
                         cache_write_tokens=dict(reported.cache_write_tokens),
                         output_tokens=output, speed=reported.speed,
                         inference_geo=reported.inference_geo,
                         service_tier=reported.service_tier, estimated=True)
        return Usage(input_tokens=int(self.attempt.estimate.input_tokens), output_tokens=output,
                     speed=call.speed, inference_geo=call.inference_geo, estimated=True)
