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

from typing import Protocol, cast, runtime_checkable

from .._arguments import shown, type_named
from ..errors import ConfigError
from ..events import BatchStream, EventStream
from ..messages import Message, Request, RequestOptions

__all__ = ["BatchingModelClient", "ModelClient", "create_message", "keeps_thinking"]


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


async def create_message(
    client: ModelClient, request: Request, options: RequestOptions | None
) -> Message:
    """``client.create(request, options)``, held to the protocol: what a client of your own
    returns that is not a :class:`~rxturn.messages.Message` (``None``, a str, a dict) is a
    :class:`~rxturn.errors.ConfigError` naming it, here, rather than an ``AttributeError``
    wherever the reply is first read. The engine's non-streaming path and the rescue call it.

    Raises:
        ConfigError: ``create`` returned something that is not a ``Message``.
    """
    message = await client.create(request, options)
    if not isinstance(message, Message):  # pyright: ignore[reportUnnecessaryIsInstance]
        what = "None" if message is None else type_named(message)
        raise ConfigError(f"the client's create() returned {what}, not a Message")
    return message


def keeps_thinking(client: object, options: RequestOptions) -> bool:
    """Whether a reply to this request keeps its thinking in the message (and so sends it back).

    ``options.keep_thinking`` decides when it is set. Otherwise thinking is kept exactly when
    the request enables it — a ``thinking`` budget, or a ``reasoning_effort`` other than
    ``"none"``, or the same asked through ``extra_body`` (a ``thinking`` object not
    ``disabled``, Anthropic's ``adaptive`` included; a ``reasoning`` object whose effort is not
    ``"none"``) — and the client wants it back: its ``replays_thinking`` attribute (true for
    Anthropic, whose API rejects a tool-use continuation that lost its thinking block, and for
    the OpenAI Responses API, whose reasoning items carry the model's state between calls;
    false for chat completions and Ollama, which take no thinking back). A client without the
    attribute (your own) keeps it. The engine seeds its fold with this, and the clients'
    non-streaming parsers (the rescue) follow it, so both paths build the same message.

    Raises:
        ConfigError: ``keep_thinking`` is neither ``None`` nor a bool.

    Examples:
        >>> keeps_thinking(object(), RequestOptions(thinking=2048))
        True
        >>> keeps_thinking(object(), RequestOptions())
        False
    """
    keep = options.keep_thinking
    if keep is not None:
        if not isinstance(keep, bool):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigError(
                f"RequestOptions.keep_thinking must be a bool or None, got {shown(keep, 100)}"
            )
        return keep
    if (
        options.thinking is None
        and options.reasoning_effort in (None, "none")
        and not _extra_body_enables_thinking(options.extra_body)
    ):
        return False
    return bool(getattr(client, "replays_thinking", True))


def _extra_body_enables_thinking(extra: object) -> bool:
    """Whether ``extra_body`` (merged into the body last, so its fields win) enables thinking:
    Anthropic's ``thinking`` of any type but ``disabled`` (``enabled`` with a budget, or
    ``adaptive``, which has no ``RequestOptions`` field), or the Responses ``reasoning`` object
    with an effort other than ``none`` (the documented way to ask for reasoning summaries)."""
    if not extra or not isinstance(extra, dict):
        return False
    fields = cast("dict[str, object]", extra)
    thinking = fields.get("thinking")
    if isinstance(thinking, dict) and cast("dict[str, object]", thinking).get("type") not in (
        None,
        "disabled",
    ):
        return True
    reasoning = fields.get("reasoning")
    return isinstance(reasoning, dict) and cast("dict[str, object]", reasoning).get(
        "effort"
    ) not in ("none",)
