"""The client seam: what the stream handler and the engine need from a provider client.

A client turns a :class:`~rxturn.messages.Request` into provider traffic. ``stream`` is
**cold**: every subscription makes exactly one HTTP request, events are pushed as bytes arrive,
and disposing the subscription closes the response. ``create`` is the non-streaming call.
Errors are always :class:`~rxturn.errors.RxturnError` subclasses (mapped at the transport edge).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from reactivex import Observable

from ..events import StreamEvent
from ..messages import Message, Request, RequestOptions

__all__ = ["ModelClient"]


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

    def stream(
        self, request: Request, options: RequestOptions | None = None
    ) -> Observable[StreamEvent]:
        """A cold Observable of one streaming attempt."""
        ...

    async def create(self, request: Request, options: RequestOptions | None = None) -> Message:
        """One non-streaming request; the whole reply (id, model, stop reason, usage)."""
        ...
