"""The client seam: what the stream handler and the engine need from a provider client.

A client turns a :class:`~rxturn.messages.Request` into provider traffic. ``stream`` is
**cold**: every subscription makes exactly one HTTP request, events are pushed as bytes arrive,
and disposing the subscription closes the response. ``create`` is the non-streaming call.
Errors are always :class:`~rxturn.errors.RxturnError` subclasses (mapped at the transport edge).

A client may also offer ``stream_batches(request, options)`` (:class:`BatchingModelClient`): the
same attempt as one list of events per network chunk (:data:`~rxturn.events.EventBatch`). The
stream handler subscribes it when it exists — a long reply then costs one Rx emission per chunk,
not per event — and falls back to ``stream`` otherwise, so a client of your own needs only the
methods of :class:`ModelClient`. rxturn's HTTP clients have both.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from ..events import BatchStream, EventStream
from ..messages import Message, Request, RequestOptions

__all__ = ["BatchingModelClient", "ModelClient"]


@runtime_checkable
class ModelClient(Protocol):
    """A provider client: Anthropic, OpenAI-compatible, Ollama, or your own."""

    @property
    def model(self) -> str:
        """The model used when ``RequestOptions.model`` does not override it."""
        ...

    @property
    def base_url(self) -> str:
        """Where requests go; the proactive limiter keeps one bucket per base URL."""
        ...

    def stream(self, request: Request, options: RequestOptions | None = None) -> EventStream:
        """A cold Observable of one streaming attempt."""
        ...

    async def create(self, request: Request, options: RequestOptions | None = None) -> Message:
        """One non-streaming request; the whole reply (id, model, stop reason, usage)."""
        ...


@runtime_checkable
class BatchingModelClient(ModelClient, Protocol):
    """A :class:`ModelClient` that also streams a network chunk at a time (the hot path)."""

    def stream_batches(
        self, request: Request, options: RequestOptions | None = None
    ) -> BatchStream:
        """:meth:`stream` as one :data:`~rxturn.events.EventBatch` per network chunk: the same
        request, events, errors and disposal; chunks that complete no event emit nothing."""
        ...
