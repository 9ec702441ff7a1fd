"""Provider-neutral stream events: what every decoder emits and every operator consumes.

One reply is always this sequence (docs/behaviour.md §1)::

    MessageStart → (PartStart → Delta* → PartStop)* → MessageDelta → MessageStop

Lanes are addressed by ``index``; several may be open at once (OpenAI parallel tool calls).
A decoder may also send a usage-only ``MessageDelta`` (no stop reason) early, as soon as the
provider reports usage (Anthropic's ``message_start``): the input tokens are billed from then
on, even if the attempt fails. The last ``MessageDelta`` has the final say.
``MessageStop`` is the only "reply complete" signal: a decoder never synthesizes it on failure,
so its absence marks a truncated stream. ``Ping`` is a keep-alive that nobody needs to see.

On top of those, the stream handler emits two control items (:data:`HandlerEvent`):

- :class:`AttemptReset` before attempts 2, 3, … — discard everything from the failed attempt;
- :class:`Fallback` when the non-streaming rescue saved the turn — adopt its message wholesale.

Provider events flow through the handler unwrapped (a ``HandlerEvent`` is a ``StreamEvent`` or
one of the two control items), so the hot path allocates nothing per event beyond the decoder's
own Struct.

Batches. A network chunk usually holds many events (a fast model, a loopback server, a replayed
file), and pushing each one through every Rx layer costs more than decoding it. So the engine's
own path carries an :data:`EventBatch` — the events one chunk decoded to, in order, never empty
— as one item, and folds it with :func:`rxturn.fold.fold_batch`. The per-event Observables
(``client.stream``, ``StreamHandler.stream_turn``, ``replay``, ``engine.events``) are the same
events one by one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, TypeAlias

import msgspec

from ._arguments import described
from .errors import ConfigError
from .messages import Message, StopReason, Usage

if TYPE_CHECKING:  # reactivex stays unloaded: ``import rxturn.wire`` must not pull it in
    from reactivex import Observable

__all__ = [
    "AttemptReset",
    "BatchStream",
    "Delta",
    "DeltaKind",
    "EventBatch",
    "EventStream",
    "Fallback",
    "HandlerBatchStream",
    "HandlerEvent",
    "HandlerStream",
    "MessageDelta",
    "MessageStart",
    "MessageStop",
    "PartKind",
    "PartStart",
    "PartStop",
    "Ping",
    "StreamEvent",
]

#: What a lane carries. ``thinking`` enters the message only when the fold keeps thinking;
#: ``refusal`` is the text with which a model refused (OpenAI), kept apart from the reply text.
PartKind = Literal["text", "thinking", "tool_call", "refusal"]
#: What a delta carries: text, thinking, or a fragment of a tool call's JSON arguments; and, for
#: a thinking lane, ``signature`` (the lane's whole signature, replacing any earlier one) or
#: ``redacted_thinking`` (the opaque data of a redacted block). Those two and ``refusal`` reach
#: the fold only: observers route ``text`` and ``thinking`` and ignore the rest.
DeltaKind = Literal["text", "thinking", "tool_json", "refusal", "signature", "redacted_thinking"]


class MessageStart(msgspec.Struct, frozen=True, gc=False, tag="message_start"):
    """First event of a reply."""

    id: str = ""
    model: str = ""


class PartStart(msgspec.Struct, frozen=True, gc=False, tag="part_start"):
    """A lane opens. Tool lanes latch their call ``id`` and ``name`` here; a thinking lane may
    carry the provider's item ``id`` (OpenAI Responses reasoning items)."""

    index: int
    kind: PartKind = "text"
    id: str = ""
    name: str = ""


class Delta(msgspec.Struct, frozen=True, gc=False, tag="delta"):
    """A fragment for lane ``index``: text, thinking, tool-call JSON, or a thinking lane's
    signature / redacted data (``kind``)."""

    index: int
    text: str
    kind: DeltaKind = "text"


class PartStop(msgspec.Struct, frozen=True, gc=False, tag="part_stop"):
    """A lane closes: the oldest open lane with ``index``, or the oldest open lane if ``None``."""

    index: int | None = None


class MessageDelta(msgspec.Struct, frozen=True, gc=False, tag="message_delta"):
    """Stop reason and usage near the end of a reply.

    ``stop_reason`` is the canonical spelling when the decoder recognised the provider's value,
    else the provider's raw string (which the fold ignores, keeping the previous reason).
    ``usage`` replaces any earlier usage, even when ``None``.
    """

    stop_reason: str | None = None
    usage: Usage | None = None


class MessageStop(msgspec.Struct, frozen=True, gc=False, tag="message_stop"):
    """The reply is complete. The only terminal signal."""


class Ping(msgspec.Struct, frozen=True, gc=False, tag="ping"):
    """Keep-alive; ignored everywhere."""


StreamEvent = MessageStart | PartStart | Delta | PartStop | MessageDelta | MessageStop | Ping


class AttemptReset(msgspec.Struct, frozen=True, tag="attempt_reset"):
    """Attempt ``attempt`` (2, 3, …) starts; everything from the failed one must be discarded.

    Attributes:
        attempt: the number of the attempt about to start (first attempt is 1).
        reason: why the previous attempt failed (its error message).
        error_type: the class name of that error.
        usage: tokens the failed attempt reported before failing (billed but discarded), if any.
        events: events the failed attempt delivered.
    """

    attempt: int
    reason: str
    error_type: str = ""
    usage: Usage | None = None
    events: int = 0


class Fallback(msgspec.Struct, frozen=True, tag="fallback"):
    """The non-streaming rescue produced a complete reply; always the last item of a turn."""

    message: Message

    def __post_init__(self) -> None:
        # (built once per rescue; the fold reads message.id, .content... without a check)
        if type(self.message) is not Message:
            raise ConfigError(f"Fallback.message must be a Message, got {described(self.message)}")

    @property
    def stop_reason(self) -> StopReason:
        return self.message.stop_reason or StopReason.END_TURN

    @property
    def usage(self) -> Usage | None:
        return self.message.usage


HandlerEvent = StreamEvent | AttemptReset | Fallback

#: The events one network chunk (or 64 KiB of a replayed file) decoded to, in stream order; never
#: empty. A plain ``list`` so that producing one costs nothing: the decoder's own output. Treat it
#: as read-only — every subscriber of a batched stream gets the same list.
EventBatch = list[StreamEvent]

# -- the Observables that flow, named once ------------------------------------------------------
# Written as strings so that this module never imports reactivex at run time; in annotations
# (``from __future__ import annotations``) they read as the Observable types they name.

#: One streaming attempt, event by event (``client.stream``, ``replay``).
EventStream: TypeAlias = "Observable[StreamEvent]"
#: One streaming attempt, a network chunk at a time (``client.stream_batches``, ``replay_batches``).
BatchStream: TypeAlias = "Observable[EventBatch]"
#: A handled turn, item by item (``StreamHandler.stream_turn``, ``engine.events``).
HandlerStream: TypeAlias = "Observable[HandlerEvent]"
#: A handled turn in batches (``StreamHandler.stream_turn_batches``): event batches, and
#: ``AttemptReset`` / ``Fallback`` alone as ``[item]``.
HandlerBatchStream: TypeAlias = "Observable[list[HandlerEvent]]"
