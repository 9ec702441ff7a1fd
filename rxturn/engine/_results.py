"""What a turn and a run produce, the session they live in, and the attempt facts a turn notes."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from typing import Literal

import msgspec

from ..cost import Cost
from ..errors import ConfigError
from ..events import AttemptReset, Fallback, HandlerEvent
from ..messages import Message, StopReason, Usage
from .audit import AttemptRecord, AuditTrail, Run

__all__ = [
    "AttemptStats",
    "RunResult",
    "Session",
    "TextStreamer",
    "TurnMode",
    "TurnResult",
    "checked_transients",
]

TurnMode = Literal["streaming", "non_streaming"]
TextStreamer = Callable[[str], object]

_session_ids = itertools.count(1)


class TurnResult(msgspec.Struct, frozen=True, kw_only=True):
    """What one served turn produced.

    ``stop_reason`` is the engine's verdict: ``end_turn`` with tool calls present counts as
    ``tool_call`` (the only reason that continues an agent loop). ``model`` is the model that
    served (after routing and failover); ``usage`` what the reply cost, ``billed_usage`` what
    every attempt of the turn was billed, itemised in ``attempt_log``; ``cost`` that in USD (the
    ``rxturn[cost]`` extra; ``None`` without it).
    """

    turn: int
    message: Message
    stop_reason: StopReason
    usage: Usage | None
    model: str
    attempts: int = 1
    rescued: bool = False
    discarded_usage: Usage | None = None
    attempt_log: tuple[AttemptRecord, ...] = ()
    billed_usage: Usage | None = None
    cost: Cost | None = None

    @property
    def text(self) -> str:
        return self.message.text


class RunResult(msgspec.Struct, frozen=True, kw_only=True):
    """The outcome of :meth:`TurnEngine.run`: every turn, and the final reply."""

    turns: tuple[TurnResult, ...]
    hit_max_turns: bool = False

    @property
    def message(self) -> Message:
        return self.turns[-1].message

    @property
    def text(self) -> str:
        return self.turns[-1].message.text

    @property
    def stop_reason(self) -> StopReason:
        return self.turns[-1].stop_reason

    @property
    def cost(self) -> Cost | None:
        """What every turn of the run cost, summed (``None`` without the ``rxturn[cost]``
        extra)."""
        costs = [turn.cost for turn in self.turns if turn.cost is not None]
        if not costs:
            return None
        total = costs[0]
        for cost in costs[1:]:
            total = total + cost
        return total


class Session:
    """The conversation (``history``) and the audit trail (``runs``) of one engine."""

    def __init__(self, history: Iterable[Message] = ()) -> None:
        self.id = f"session-{next(_session_ids)}"
        self.history: list[Message] = list(history)
        self.audit = AuditTrail()

    @property
    def runs(self) -> list[Run]:
        """The audit trail: one :class:`~.audit.Run` of :class:`~.audit.Turn` records each."""
        return self.audit.runs

    def __repr__(self) -> str:
        return f"Session({self.id!r}, messages={len(self.history)}, runs={len(self.runs)})"


class AttemptStats:
    """Facts the handler stream reveals about attempts: resets, rescue, discarded usage."""

    __slots__ = ("attempts", "discarded_usage", "rescued")

    def __init__(self) -> None:
        self.attempts = 1
        self.rescued = False
        #: usage of the attempts reset away, summed (``None`` while none reported any)
        self.discarded_usage: Usage | None = None

    def note(self, event: HandlerEvent) -> None:
        if isinstance(event, AttemptReset):
            self.attempts += 1
            usage = event.usage
            if usage is not None:
                seen = self.discarded_usage
                self.discarded_usage = usage if seen is None else seen + usage
        elif isinstance(event, Fallback):
            self.rescued = True


def checked_transients(transient: object) -> tuple[Message, ...]:
    """``transient`` as a tuple of messages, or a ConfigError that says what was passed."""
    hint = "; to send a prompt, use run(prompt) or add it to the history first"
    if isinstance(transient, str | bytes | Message):
        raise ConfigError(
            f"turn(transient=...) takes a sequence of Message, got {type(transient).__name__}"
            + hint
        )
    try:
        items: tuple[object, ...] = tuple(transient)  # type: ignore[call-overload]
    except TypeError:
        raise ConfigError(
            f"turn(transient=...) takes a sequence of Message, got {type(transient).__name__}"
        ) from None
    messages: list[Message] = []
    for item in items:
        if not isinstance(item, Message):
            raise ConfigError(
                f"turn(transient=...) takes Message objects, got a {type(item).__name__} "
                f"among them{hint}"
            )
        messages.append(item)
    return tuple(messages)
