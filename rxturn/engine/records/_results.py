"""What a turn and a run produce, the session they live in, and the attempt facts a turn notes."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from typing import Any, Literal, cast

import msgspec

from ...cost import Cost
from ...errors import ConfigError
from ...events import Fallback, HandlerEvent
from ...messages import Message, MessageList, StopReason, Usage, as_message
from .audit import AttemptRecord, AuditTrail, Run

__all__ = [
    "AttemptStats",
    "RunResult",
    "Session",
    "TextStreamer",
    "TurnMode",
    "TurnResult",
    "checked_prompt",
    "checked_transients",
    "sum_usage",
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
    """The outcome of :meth:`TurnEngine.run`: every turn, the final reply, and the run's totals.

    ``usage`` and ``billed_usage`` are the sums over the run's turns (``None`` when no turn
    reported any), ``attempt_log`` the turns' attempt logs one after the other, ``model`` the
    model that served the last turn; ``text``, ``message`` and ``stop_reason`` are the last
    turn's. ``hit_max_turns``: the model was still calling tools when the run reached the
    engine's ``max_turns`` (the run ends there, without an error; ``stop_reason`` is then
    ``tool_call``).
    """

    turns: tuple[TurnResult, ...]
    hit_max_turns: bool = False

    @property
    def usage(self) -> Usage | None:
        """What the run's kept replies cost: the sum of its turns' ``usage``."""
        return sum_usage(turn.usage for turn in self.turns)

    @property
    def billed_usage(self) -> Usage | None:
        """What the provider billed for every attempt of every turn of the run."""
        return sum_usage(turn.billed_usage for turn in self.turns)

    @property
    def attempt_log(self) -> tuple[AttemptRecord, ...]:
        """Every attempt of the run, turn by turn, in order."""
        return tuple(record for turn in self.turns for record in turn.attempt_log)

    @property
    def model(self) -> str:
        """The model that served the run's last turn."""
        return self.turns[-1].model

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


def sum_usage(usages: Iterable[Usage | None]) -> Usage | None:
    """The field-by-field sum of the reported usages (``None`` when none was reported)."""
    reported = [usage for usage in usages if usage is not None]
    if not reported:
        return None
    if len(reported) == 1:
        return reported[0]
    fields: dict[str, Any] = {name: _sum_field(reported, name) for name in Usage.__struct_fields__}
    return Usage(**fields)


def _sum_field(usages: list[Usage], name: str) -> object:
    """One field summed: numbers add up, ``None`` (not reported) is skipped."""
    values: list[object] = [getattr(usage, name) for usage in usages]
    numbers = [value for value in values if isinstance(value, int | float)]
    if not numbers:
        return None if all(value is None for value in values) else values[-1]
    return sum(numbers)


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
    """What the handler stream reveals about a turn's attempts beyond their records: whether
    the non-streaming rescue served (a ``Fallback``).

    The turn's :class:`~rxturn.engine.failover._legs.TurnLegs` is one (it is the turn's attempt log,
    which is one): no object of its own per turn.
    """

    __slots__ = ("rescued",)

    def __init__(self) -> None:
        self.rescued = False

    def note(self, event: HandlerEvent) -> None:
        if isinstance(event, Fallback):
            self.rescued = True

    #: the stats are the turn router's ``on_control`` callback themselves (no bound method is
    #: kept alive for each turn in flight)
    __call__ = note


def checked_prompt(prompt: object, method: str) -> str | Message:
    """``prompt`` as a ``str`` or a :class:`Message` (an SDK-style dict converted), else a
    ConfigError naming it."""
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, Message | dict):
        return as_message(cast(object, prompt), f"{method}(prompt)")
    raise ConfigError(f"{method}(prompt) takes a str or a Message, got {type(prompt).__name__}")


def checked_transients(transient: object) -> tuple[Message, ...]:
    """``transient`` as a tuple of messages, or a ConfigError that says what was passed."""
    kind = type(transient)
    if kind is tuple and not transient:  # the default: nothing to check
        return ()
    hint = "; to send a prompt, use run(prompt) or add it to the history first"
    if isinstance(transient, str | bytes | Message):
        raise ConfigError(
            f"turn(transient=...) takes a sequence of Message, got {kind.__name__}" + hint
        )
    try:
        items: tuple[object, ...] = tuple(transient)  # pyright: ignore[reportArgumentType]
    except TypeError:
        raise ConfigError(
            f"turn(transient=...) takes a sequence of Message, got {kind.__name__}"
        ) from None
    messages = [as_message(item, f"turn(transient=...)[{i}]") for i, item in enumerate(items)]
    return tuple(messages)
