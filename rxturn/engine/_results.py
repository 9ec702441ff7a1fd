"""What a turn and a run produce, the session they live in, and the attempt facts a turn notes."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from typing import Literal

import msgspec

from .._validate import MessageList, as_message
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
    every attempt of the turn was billed, itemised in ``attempt_log``.
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


class Session:
    """The conversation (``history``) and the audit trail (``runs``) of one engine."""

    def __init__(self, history: Iterable[Message] = ()) -> None:
        self.id = f"session-{next(_session_ids)}"
        self.history: list[Message] = MessageList(history)  # checks what joins it
        self.audit = AuditTrail()

    @property
    def runs(self) -> list[Run]:
        """The audit trail: one :class:`~.audit.Run` of :class:`~.audit.Turn` records each."""
        return self.audit.runs

    def __repr__(self) -> str:
        return f"Session({self.id!r}, messages={len(self.history)}, runs={len(self.runs)})"


class AttemptStats:
    """Facts the handler stream reveals about attempts: resets, rescue, discarded usage."""

    __slots__ = ("attempts", "discarded_in", "discarded_out", "rescued", "saw_discarded")

    def __init__(self) -> None:
        self.attempts = 1
        self.rescued = False
        self.saw_discarded = False
        self.discarded_in = 0
        self.discarded_out = 0

    def note(self, event: HandlerEvent) -> None:
        if isinstance(event, AttemptReset):
            self.attempts += 1
            if event.usage is not None:
                self.saw_discarded = True
                self.discarded_in += event.usage.input_tokens
                self.discarded_out += event.usage.output_tokens
        elif isinstance(event, Fallback):
            self.rescued = True

    @property
    def discarded_usage(self) -> Usage | None:
        if not self.saw_discarded:
            return None
        return Usage(input_tokens=self.discarded_in, output_tokens=self.discarded_out)


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
    messages = [as_message(item, f"turn(transient=...)[{i}]") for i, item in enumerate(items)]
    return tuple(messages)
