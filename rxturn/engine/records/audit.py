"""The audit trail: what every turn was asked, answered and cost (docs/behaviour.md §4.6).

Every turn (served or failed) appends one :class:`Turn` to the current :class:`Run` of an
:class:`AuditTrail` (``session.runs``). The trail holds copies of text and immutable parts only,
never a reference to the conversation list, so compaction — which rewrites the conversation into
a summary — cannot touch it: the trail keeps every turn's original input and output. (A turn that
runs *after* a compaction records the summarised context it actually saw; the trail shows what
each turn saw, which is internally consistent.)

Beside the turn's input, output, tool calls and token counts it records what resilience did to
the turn: the model that served
it, how many streaming attempts it took, whether the non-streaming rescue produced it, its stop
reason, every attempt it made (:class:`AttemptRecord`: model, kind, outcome, usage, start and end
on the engine's clock) and what the provider billed for all of them (``billed_usage``) beside what
the kept reply cost (``input_tokens`` / ``output_tokens``). A turn that fails is recorded too,
with ``error`` set, so that what it was billed is accounted (docs/engine.md).

Serialisation is JSON lines, one object per turn with its ``run_id`` first::

    {"run_id":0,"turn":0,"input":"hi","output":"Hello","tool_calls":[],"input_tokens":5,...}

Tool calls use the part shape of the Message JSON (docs/behaviour.md §6:
``{"type": "tool_call", "id", "name", "input"}``).
A run with no turns has no line, so it does not survive a round trip.
"""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal
from typing import Annotated, Any, Literal, cast

import msgspec

from ..._arguments import described
from ..._validate import mend_text
from ...cost import Cost
from ...errors import ConfigError
from ...messages import StopReason, ToolCallPart, Usage, sum_usage

__all__ = ["AttemptKind", "AttemptRecord", "AuditTrail", "Run", "Turn", "billed"]

_Count = Annotated[int, msgspec.Meta(ge=0)]

#: How an attempt asked: a streaming request, the non-streaming rescue of a streaming turn, or
#: the one request of a turn in ``non_streaming`` mode.
AttemptKind = Literal["stream", "rescue", "create"]


class AttemptRecord(msgspec.Struct, frozen=True, kw_only=True):
    """One request a turn made to a provider, whatever became of it.

    Attributes:
        model: the model asked (after fallback routing and failover).
        kind: ``"stream"``, ``"rescue"`` (the non-streaming rescue) or ``"create"`` (a turn in
            ``non_streaming`` mode).
        outcome: ``"served"`` (its reply is the turn's), ``"cancelled"``, ``"hedge_lost"`` (a
            racer of a hedged first token that another racer beat: docs/engine.md), or the
            class name of the error that ended it (``"RateLimitError"``,
            ``"StreamTimeoutError"``…).
        usage: the tokens the provider reported for it (``None``: it reported none, e.g. it
            failed before its usage arrived). A failed attempt's usage is billed all the same.
        started: when it started, in seconds on the engine's clock (its scheduler's).
        ended: when it ended, on the same clock.
        cost: what its usage cost in USD (the ``rxturn[cost]`` extra; ``None`` when it could not
            be priced — no usage, an unknown model — or the extra is not installed).
        estimated_usage: for a hedge loser that reported no usage before it was cut, the
            engine's offline estimate of its input tokens (output 0); never part of
            ``billed_usage``, which sums what providers reported.
    """

    model: str
    kind: AttemptKind
    outcome: str
    usage: Usage | None = None
    started: float = 0.0
    ended: float = 0.0
    cost: Decimal | None = None
    estimated_usage: Usage | None = None


def billed(attempts: Iterable[AttemptRecord]) -> Usage | None:
    """The sum of every reported usage (``None`` when no attempt reported any)."""
    return sum_usage([a.usage for a in attempts])


class Turn(msgspec.Struct, frozen=True, kw_only=True):
    """One turn, as recorded when it ended: served, or failed (``error`` set).

    Attributes:
        turn: 0-based index of the turn within its run.
        input: what the model was asked (display text: the run's prompt, or the tool results
            that continued the loop).
        output: the reply's text (tool calls excluded).
        tool_calls: the tool calls the reply asked for, in order.
        input_tokens: prompt tokens of the serving attempt (0 when the provider reported none).
        output_tokens: completion tokens of the serving attempt.
        model: the model that actually served the turn (after fallback routing).
        attempts: streaming attempts made (1 when the first one served); in non-streaming
            mode the requests made (one per model a same-turn failover asked).
        rescued: the non-streaming rescue produced the reply.
        stop_reason: why the model stopped, as the engine read it.
        discarded_usage: usage summed over the attempts that did not serve (billed, their
            text discarded).
        attempt_log: every request the turn made, in order (see :class:`AttemptRecord`).
        billed_usage: every usage the provider reported for this turn, summed: what it billed,
            where ``input_tokens`` / ``output_tokens`` are what the kept reply cost.
        error: for a failed turn, the class name of its error (``"Cancelled"`` for a cancel);
            its ``output`` is empty and its reply tokens 0. ``None`` for a served turn.
        cost: what every attempt cost, summed, and how many could not be priced (the
            ``rxturn[cost]`` extra; ``None`` without it).
    """

    turn: _Count
    input: str
    output: str
    tool_calls: tuple[ToolCallPart, ...]
    input_tokens: _Count
    output_tokens: _Count
    model: str = ""
    attempts: _Count = 1
    rescued: bool = False
    stop_reason: StopReason | None = None
    discarded_usage: Usage | None = None
    attempt_log: tuple[AttemptRecord, ...] = ()
    billed_usage: Usage | None = None
    error: str | None = None
    cost: Cost | None = None


def _no_turns() -> list[Turn]:
    return []


class Run(msgspec.Struct, kw_only=True):
    """One ``engine.run(...)``: its turns, in order."""

    run_id: int
    turns: list[Turn] = msgspec.field(default_factory=_no_turns)


class _TurnLine(Turn, frozen=True, kw_only=True):
    """A JSON line: a :class:`Turn` plus the id of the run it belongs to (decoding only)."""

    run_id: _Count


_line_decoder = msgspec.json.Decoder(_TurnLine)
_encoder = msgspec.json.Encoder()
_TURN_FIELDS = Turn.__struct_fields__


class AuditTrail:
    """All runs of a session, oldest first.

    Examples:
        >>> trail = AuditTrail()
        >>> trail.append(Turn(turn=0, input="hi", output="Hello", tool_calls=(),
        ...                   input_tokens=5, output_tokens=1))
        >>> [run.run_id for run in trail.runs], len(trail.all_turns())
        ([0], 1)
    """

    __slots__ = ("runs",)

    def __init__(self, runs: list[Run] | None = None) -> None:
        given: object = runs  # (callers may be untyped)
        if given is not None and (
            not isinstance(given, list)  # pyright: ignore[reportUnnecessaryIsInstance]
            or not all(isinstance(run, Run) for run in cast("list[object]", given))
        ):
            # (an int was a TypeError from len() at the first repr, a str an AttributeError)
            raise ConfigError(
                f"AuditTrail(runs=...) must be a list of Run or None, got {described(given)}"
            )
        self.runs: list[Run] = [] if runs is None else runs

    def __repr__(self) -> str:
        return f"AuditTrail(runs={len(self.runs)}, turns={sum(len(r.turns) for r in self.runs)})"

    def __len__(self) -> int:
        """The number of runs."""
        return len(self.runs)

    def start_run(self) -> Run:
        """Open a new run (ids count up from 0) and make it current."""
        run = Run(run_id=self.runs[-1].run_id + 1 if self.runs else 0)
        self.runs.append(run)
        return run

    @property
    def current_run(self) -> Run:
        """The latest run; one is started if there is none yet."""
        return self.runs[-1] if self.runs else self.start_run()

    def append(self, turn: Turn) -> None:
        """Record a turn in the current run."""
        if not isinstance(turn, Turn):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigError(f"audit trail records Turn values, got {type(turn).__name__}")
        self.current_run.turns.append(turn)

    def all_turns(self) -> list[Turn]:
        """Every turn of every run, in order."""
        return [turn for run in self.runs for turn in run.turns]

    def to_jsonl(self) -> str:
        """One JSON object per turn (``run_id`` first), each line ending in a newline."""
        lines: list[bytes] = []
        for run in self.runs:
            for turn in run.turns:
                record: dict[str, Any] = {"run_id": run.run_id}
                record.update(msgspec.structs.asdict(turn))
                try:
                    lines.append(_encoder.encode(record))
                except UnicodeEncodeError:  # text that could not be sent (a lone surrogate)
                    lines.append(_encoder.encode(mend_text(msgspec.to_builtins(record))))
        return b"".join(line + b"\n" for line in lines).decode()

    @classmethod
    def from_jsonl(cls, text: str | bytes) -> AuditTrail:
        """Rebuild a trail from :meth:`to_jsonl` output (blank lines are skipped).

        Raises:
            ConfigError: a line is not a valid turn record, or a run's turns are not contiguous
                and in increasing ``run_id`` order; the message names the line number.
        """
        data = text.encode() if isinstance(text, str) else text
        trail = cls()
        for number, raw in enumerate(data.splitlines(), start=1):
            if not raw.strip():
                continue
            try:
                line = _line_decoder.decode(raw)
            except (msgspec.DecodeError, RecursionError) as exc:  # RecursionError: too deep
                raise ConfigError(f"audit JSON line {number}: {exc}") from None
            if not trail.runs or line.run_id > trail.runs[-1].run_id:
                trail.runs.append(Run(run_id=line.run_id))
            elif line.run_id < trail.runs[-1].run_id:
                raise ConfigError(
                    f"audit JSON line {number}: run_id {line.run_id} after run "
                    f"{trail.runs[-1].run_id} (runs must be contiguous and in increasing order)"
                )
            fields = {name: getattr(line, name) for name in _TURN_FIELDS}
            trail.runs[-1].turns.append(Turn(**fields))
        return trail
